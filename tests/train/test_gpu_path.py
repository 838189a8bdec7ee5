"""The GPU path's memory and transfer choices, checked on the CPU through what each one observably does.

EMA staged through reusable host buffers, checkpoint snapshots into reused buffers, DDP gradients as bucket views,
the allocator's expandable segments, no second model copy for evaluation, and one log line naming the attention
kernel. What they save shows only on a GPU; here each is checked for what it does and that results are unchanged.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from support.trainer_helpers import make

from f5lite.storage.store import CheckpointStore
from f5lite.train import cli
from f5lite.train.ema import EMA, HostStaging, ema_decay
from f5lite.train.trainer import make_accelerator
from f5lite.train.validation import ValidationSet


def _model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8), torch.nn.Linear(8, 3))


def test_host_staging_allocates_once_and_reuses_its_buffers() -> None:
    staging = HostStaging()
    first = [
        t.data_ptr() for t in staging.fetch([torch.ones(4, 2), torch.zeros((), dtype=torch.float64)], torch.float32)
    ]
    values = [torch.full((4, 2), 3.0), torch.tensor(0.25, dtype=torch.float64)]
    again = staging.fetch(values, torch.float32)
    assert [t.data_ptr() for t in again] == first  # the same memory, not new buffers
    assert torch.equal(again[0], values[0]) and again[1].item() == 0.25 and again[1].dtype == torch.float32
    assert [t.data_ptr() for t in staging.fetch([torch.ones(5)], torch.float32)] != first[:1]  # new shapes: new ones


def test_staged_ema_matches_the_direct_path_and_the_formula_bitwise() -> None:
    model = _model(0)
    direct = EMA(model, decay=0.9, update_every=1, update_after=1, device="cpu")
    staged = EMA(model, decay=0.9, update_every=1, update_after=1, device="cpu")
    assert direct.staging is None  # model and average on the same device: no staging pass at all
    staged.staging = HostStaging()  # what an EMA on the CPU of a model on a GPU gets
    reference = {k: v.clone() for k, v in direct.shadow.items()}
    pointers: set[tuple[int, ...]] = set()
    for update in range(6):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p))
        applied = torch.tensor(update != 3)  # one skipped update
        direct.update(model, applied)
        staged.update(model, applied)
        pointers.add(tuple(b.data_ptr() for b in staged.staging.buffers))
        if bool(applied):
            step = int(direct.step)
            weight = 1.0 if step - 1 <= 1 else (1.0 - ema_decay(step, 0.9, 1)).float()
            for key, value in model.state_dict().items():
                reference[key] = torch.lerp(reference[key], value, torch.as_tensor(weight, dtype=torch.float32))
        for key in direct.shadow:
            assert torch.equal(staged.shadow[key], direct.shadow[key]), key
            assert torch.equal(direct.shadow[key], reference[key]), key
    assert len(pointers) == 1  # every update reused the first one's buffers


def test_the_second_checkpoint_reuses_the_first_ones_buffers_and_writes_the_same_files(tmp_path: Path) -> None:
    def tensors(step: int) -> dict[str, dict[str, torch.Tensor]]:
        g = torch.Generator().manual_seed(step)
        return {
            "model": {"w": torch.randn(16, 8, generator=g).t(), "n": torch.tensor(step)},
            "ema": {"w": torch.ones(3)},
        }

    reused = CheckpointStore(tmp_path / "reused", keep_last=0, async_save=True)
    reused.save(1, tensors(1), {})
    reused.wait()
    first = {(g, k): t.data_ptr() for g, sd in reused._snapshot.items() for k, t in sd.items()}
    reused.save(2, tensors(2), {})
    reused.wait()
    assert {(g, k): t.data_ptr() for g, sd in reused._snapshot.items() for k, t in sd.items()} == first
    fresh = CheckpointStore(tmp_path / "fresh", keep_last=0)
    fresh.save(2, tensors(2), {})
    for name in ("model.safetensors", "ema.safetensors", "meta.json", "manifest.json"):
        a = (tmp_path / "reused" / "step-00000002" / name).read_bytes()
        assert a == (tmp_path / "fresh" / "step-00000002" / name).read_bytes(), name
    loaded = reused.load_latest()
    assert loaded is not None and torch.equal(loaded.tensors["model"]["w"], tensors(2)["model"]["w"])
    reused.close()
    fresh.close()


def test_ddp_keeps_gradients_in_its_buckets(tmp_path: Path) -> None:
    handler = make_accelerator(make(tmp_path, "optim.max_updates=1").perf)[0].ddp_handler
    assert handler is not None and handler.gradient_as_bucket_view


def test_expandable_segments_unless_the_user_configured_the_allocator(monkeypatch: pytest.MonkeyPatch) -> None:
    env: dict[str, str] = {}
    assert cli.default_allocator(env) and env == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        env = {name: "max_split_size_mb:128"}
        assert not cli.default_allocator(env) and env == {name: "max_split_size_mb:128"}
    # main sets it before anything else runs (the config, the trainer, CUDA).
    seen: list[str | None] = []

    def compose(_: list[str]) -> None:
        import os

        seen.append(os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
        raise ValueError("stop here")

    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(cli, "compose_config", compose)
    assert cli.main([]) == 2 and seen == ["expandable_segments:True"]
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "backend:native")
    assert cli.main([]) == 2 and seen[-1] == "backend:native"


def test_evaluation_uses_the_ema_and_training_tensors_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trainer = make(tmp_path, "optim.max_updates=4", "eval.every=4", "eval.online=true", "eval.max_utterances=2")
    assert trainer.evaluator is not None and trainer.ema is not None
    backbone = trainer.evaluator.backbone
    assert all(p.is_meta for p in backbone.parameters())  # built without storage: no second model copy
    real = ValidationSet.evaluate
    held: list[set[int]] = []

    def spy(self: ValidationSet, model: torch.nn.Module, *args, **kwargs):  # type: ignore[no-untyped-def]
        held.append({t.data_ptr() for t in model.state_dict().values()})
        return real(self, model, *args, **kwargs)

    monkeypatch.setattr(ValidationSet, "evaluate", spy)
    ema_at_eval: list[set[int]] = []
    real_run = trainer.evaluator.run

    def run(*args, **kwargs):  # type: ignore[no-untyped-def]
        assert trainer.ema is not None
        ema_at_eval.append({t.data_ptr() for t in trainer.ema.state_dict().values()})
        return real_run(*args, **kwargs)

    monkeypatch.setattr(trainer.evaluator, "run", run)
    trainer.fit()
    training = {t.data_ptr() for t in trainer.network.state_dict().values()}
    assert held == [ema_at_eval[-1], training]  # the EMA's own tensors, then the training module's
    assert all(p.is_meta for p in backbone.parameters())  # let go after the evaluation
    assert not any(p.requires_grad for p in backbone.parameters())


def test_the_attention_kernel_is_logged_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="f5lite.train.trainer")
    make(tmp_path, "optim.max_updates=1", "perf.sdpa_backend=math")
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("attention: ")]
    assert lines == ["attention: sdpa_backend=math: math (unfused) on cpu for torch.float32 (enabled: math)"]
