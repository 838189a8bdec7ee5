"""Building tiny training runs for the trainer tests: overrides, a small slice of the demo data, recorders."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

import torch
from lhotse import CutSet
from safetensors.torch import load_file

from f5lite.config import compose_config
from f5lite.data import CUTS_NAME, write_cuts
from f5lite.paths import demo_dir
from f5lite.train import Trainer

BASE = [
    "+recipe=debug_tiny", "data.num_workers=0", "logger.every=2", "ckpt.every=100", "optim.warmup_updates=4",
    "eval.every=0",
]  # fmt: skip
"""debug_tiny (EMA averaging from update 3 on), the loader in the main process, no periodic checkpoint, no
validation loss (the evaluation tests turn it on)."""

_TINY_OTHER = [
    "model.dim=64", "model.depth=2", "model.heads=4", "model.dim_head=16", "model.ff_mult=2", "model.dropout=0.1",
    f"data.dir={demo_dir()}", "data.frames_per_gpu=4000", "data.max_samples=8", "data.num_workers=0",
    "optim.lr=1e-3", "optim.max_updates=100", "perf.precision=no", "ema.update_after=2", "ema.update_every=1",
    "sample.vocoder=griffin_lim", "logger.every=2", "ckpt.every=100", "optim.warmup_updates=4", "eval.every=0",
]  # fmt: skip
FAMILIES = {
    "dit": BASE,
    # debug_tiny is a DiT (its text_dim and conv_layers are DiT keys): the same sizes for the other families.
    "mmdit": ["model=mmdit", *_TINY_OTHER],
    "unett": ["model=unett", "model.pe_attn_head=1", *_TINY_OTHER],
}
"""Overrides of a tiny run (2 blocks x 64, the demo data, EMA averaging from update 3 on) per backbone family."""


def overrides(run: Path, *extra: str, family: str = "dit") -> list[str]:
    """debug_tiny overrides for a run in `run`, of the given backbone family."""
    return [*FAMILIES[family], f"run_dir={run}", *extra]


def make(tmp_path: Path, *extra: str, name: str = "run", family: str = "dit") -> Trainer:
    """A Trainer of debug_tiny in `tmp_path / name`."""
    return Trainer(compose_config(overrides(tmp_path / name, *extra, family=family)))


def final_state(run: Path, step: int) -> dict[str, dict[str, torch.Tensor]]:
    """The tensor groups of a run's checkpoint of update `step`."""
    root = run / "checkpoints" / f"step-{step:08d}"
    return {g: load_file(root / f"{g}.safetensors") for g in ("model", "ema", "optimizer")}


def checkpoint_meta(run: Path, step: int) -> dict:
    """The metadata of a run's checkpoint of update `step`."""
    return json.loads((run / "checkpoints" / f"step-{step:08d}" / "meta.json").read_text())


@dataclass
class Record:
    """What every update of a run did: its loss, the learning rate it used, and the files of its batches."""

    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    paths: list[list[str]] = field(default_factory=list)


def recording(trainer: Trainer, record: Record) -> Trainer:
    """Make `trainer` append each update's loss, learning rate and batch files to `record`."""
    original = trainer.train_update

    def update(batches: list) -> torch.Tensor:
        loss = original(batches)
        record.losses.append(loss.item())
        record.lrs.append(float(trainer.optimizer.param_groups[0]["lr"]))
        record.paths.append([p for b in batches for p in b.paths])
        return loss

    trainer.train_update = update  # type: ignore[method-assign]
    return trainer


def demo_slice(root: Path, count: int) -> Path:
    """A prepared directory holding the first `count` demo utterances (absolute audio paths) and the demo vocab."""
    demo = demo_dir()
    root.mkdir(parents=True, exist_ok=True)
    cuts = islice(CutSet.from_jsonl_lazy(demo / CUTS_NAME), count)
    write_cuts(root / CUTS_NAME, (cut.with_recording_path_prefix(demo) for cut in cuts))
    shutil.copyfile(demo / "vocab.txt", root / "vocab.txt")
    return root


def assert_same_tensors(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], what: str) -> None:
    """Equal keys and bit-identical tensors.

    Bit-exactness is the right bound here, not a tolerance: both sides ran the same code on the same machine, in
    processes with the same kernel set and thread count, from the same seeds and saved states, so every float
    operation repeats with the same operands in the same order. A lost sampler position, EMA step or optimizer
    moment then shows as a difference, however small. Never compare across machines or kernel sets with it.
    """
    assert a.keys() == b.keys(), what
    for key in a:
        assert torch.equal(a[key], b[key]), f"{what}: {key}"
