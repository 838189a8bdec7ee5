"""Whole training runs: F5-TTS's own `Trainer` against `python -m f5lite.train` on the same clips, interleaved.

F5-TTS is not a dependency of f5lite; install it beside (for example `pip install --no-deps --target DIR f5-tts
x-transformers torchdiffeq ema-pytorch loguru einx frozendict torch-einops-utils rjieba`, then `PYTHONPATH=DIR`);
it also needs `datasets` (f5lite's `f5tts` extra). Without it only `--sides f5lite` runs.

What runs, each run in its own process, sides alternating within every round (`--rounds`), medians reported:

- Data: the training clips of f5lite's demo dataset (`f5lite.paths.demo_dir()`, its `cuts.jsonl.gz`: Ogg clips at
  24 kHz). F5-TTS gets its own prepared format, written as its prepare scripts (`prepare_ljspeech.py`,
  `prepare_csv_wavs.py`) write it: `raw.arrow` with datasets' `ArrowWriter` (`audio_path`, `text`, `duration` from
  soundfile), `duration.json`, `vocab.txt` (the sorted characters of the texts, which is the demo's own vocab).
  f5lite reads its own `cuts.jsonl.gz`. Both decode the same Ogg files with libsndfile: F5-TTS reads audio with
  `torchaudio.load`, which needs torchcodec/ffmpeg (absent here), so the F5-TTS process replaces `torchaudio.load`
  by a soundfile reader with the same contract (`[channels, samples]` float32, rate). That is the only change made
  to F5-TTS.
- Model: the same DiT on both sides (`f5lite.bench.MID_DIT` by default, `--model small|tiny` for speed), the
  same frame budget per batch and max utterances per batch, precision, learning rate and warm-up, gradient clipping
  1.0, EMA (decay, update_every, update_after), DataLoader workers, and checkpoint interval.
- F5-TTS side: model, tokenizer and dataset built as `f5_tts/train/train.py` and `load_dataset` build them, then
  `Trainer(batch_size_type="frame", logger=None, ...).train(dataset, resumable_with_seed=666)`. Its trainer has no
  update limit, it runs whole epochs of its `DynamicBatchSampler`, so `--updates` is rounded up to whole epochs and
  f5lite runs exactly as many updates (`optim.max_updates`). It writes `model_last.pt` every `--ckpt-every` updates
  (`last_per_updates`; `keep_last_n_checkpoints=0`, so no numbered copies) and once more at the end.
- f5lite side: `f5lite.train.cli.main` (what `python -m f5lite.train` runs) with `data.dir=DEMO`, `model.*`,
  `data.frames_per_gpu`, `optim.max_updates`, `ckpt.every`, `ema.*`, `eval.every=0`, `logger.backend=none`. It
  writes a checkpoint every `--ckpt-every` updates and at the end, then its export (`RUN_DIR/export`).
- Measured: wall clock from launch to exit (the parent's clock); updates/s and frames/s over the steady part
  (after the first `--skip` updates, checkpoint time taken out); the time inside each checkpoint save (both
  processes time their trainer's save call: `Trainer.save_checkpoint` / `Trainer.save`, and f5lite's final export
  apart); peak memory: the sum of VmHWM over the process and its DataLoader workers (forked workers share pages,
  so the sum is an upper bound; both sides alike), and the largest sum of VmRSS seen by polling every 0.2 s. The
  only instrumentation is a timestamp after each optimizer update (F5-TTS: its EMA's `update()`, called once per
  update; f5lite: `Trainer.train_update`) and around the save calls.

Compiled, as on a GPU (`make bench-gpu`): `--f5tts-compile` wraps F5-TTS's DiT `forward` in `torch.compile` before its
`Trainer` is built, the one line its users add (the same as `compare_f5tts_train.py`'s `F5-TTS bf16 + compile`),
and `--f5lite-extra perf.compile=true` compiles f5lite's blocks; the compile time is part of each wall clock. Results
are written after every run (with `--out-dir`), so a run cut short keeps the runs it finished.

The defaults (mid model, bf16, 2400 frames per batch, 20 updates = one F5-TTS epoch, a checkpoint every 8 updates,
so that each side writes 3 checkpoints: 8, 16 and the end) keep the whole comparison near 5 minutes on 2 CPU cores.

    PYTHONPATH=/tmp/f5pkg python scripts/compare_f5tts_run.py --rounds 2 --out-dir scripts/results
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

SIDES = ("f5tts", "f5lite")
"""The two trainers, in the order of the first round."""
MODELS: dict[str, dict[str, int]] = {
    # The benchmarks' shared model, f5lite.bench.MID_DIT (a test keeps them equal): spelled out so that the F5-TTS
    # process never imports f5lite, whose modules would count in F5-TTS's memory.
    # F5-TTS v1 Base (configs/model/dit.yaml), for `make bench-gpu`.
    "base": {"dim": 1024, "depth": 22, "heads": 16, "dim_head": 64, "ff_mult": 2, "text_dim": 512, "conv_layers": 4},
    "mid": {"dim": 512, "depth": 8, "heads": 8, "dim_head": 64, "ff_mult": 2, "text_dim": 256, "conv_layers": 4},
    "small": {"dim": 256, "depth": 4, "heads": 4, "dim_head": 64, "ff_mult": 2, "text_dim": 128, "conv_layers": 2},
    "tiny": {"dim": 64, "depth": 2, "heads": 4, "dim_head": 16, "ff_mult": 2, "text_dim": 32, "conv_layers": 1},
}
"""DiT constructor arguments of `--model`."""
SAMPLE_RATE, HOP_LENGTH = 24_000, 256
MEL_KWARGS = {
    "target_sample_rate": SAMPLE_RATE,
    "n_mel_channels": 100,
    "hop_length": HOP_LENGTH,
    "win_length": 1024,
    "n_fft": 1024,
    "mel_spec_type": "vocos",
}
"""F5-TTS's mel settings (its configs' `model.mel_spec`), which f5lite's `vocos` mel matches."""
F5TTS_SEED = 666
"""`resumable_with_seed` of F5-TTS's train.py; f5lite's default `seed` is the same number."""
POLL_S = 0.2


# ------------------------------------------------------------------------------------------------------- data


def demo_clips(demo: Path) -> list[dict[str, Any]]:
    """The training clips of f5lite's demo dataset, from its `cuts.jsonl.gz`.

    Args:
        demo: The demo directory (`f5lite.paths.demo_dir()`).

    Returns:
        One dict per clip: `audio_path` (absolute), `text`.
    """
    clips = []
    with gzip.open(demo / "cuts.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            cut = json.loads(line)
            source = cut["recording"]["sources"][0]["source"]
            clips.append({"audio_path": str((demo / source).resolve()), "text": cut["supervisions"][0]["text"]})
    return clips


def write_f5tts_dataset(clips: Sequence[dict[str, Any]], out: Path) -> list[float]:
    """Write F5-TTS's prepared format of `clips` into `out`, as its prepare scripts do.

    Same steps as `f5_tts/train/datasets/prepare_ljspeech.py`: duration from `soundfile.info`, clips outside
    0.4-30 s dropped, rows `{audio_path, text, duration}` into `raw.arrow` with `datasets`' `ArrowWriter`, the
    durations into `duration.json`, the sorted characters of the texts into `vocab.txt`.

    Args:
        clips: `audio_path` and `text` of each clip.
        out: Output directory (created).

    Returns:
        The durations in seconds, in row order.
    """
    import soundfile as sf
    from datasets.arrow_writer import ArrowWriter

    rows, durations, chars = [], [], set()
    for clip in clips:
        duration = sf.info(clip["audio_path"]).duration
        if duration < 0.4 or duration > 30:
            continue
        rows.append({"audio_path": clip["audio_path"], "text": clip["text"], "duration": duration})
        durations.append(duration)
        chars.update(clip["text"])
    out.mkdir(parents=True, exist_ok=True)
    with ArrowWriter(path=str(out / "raw.arrow")) as writer:
        for row in rows:
            writer.write(row)
        writer.finalize()
    (out / "duration.json").write_text(json.dumps({"duration": durations}), encoding="utf-8")
    (out / "vocab.txt").write_text("".join(c + "\n" for c in sorted(chars)), encoding="utf-8")
    return durations


def f5tts_batches(durations: Sequence[float], frames: int, max_samples: int) -> int:
    """Batches per epoch of F5-TTS's `DynamicBatchSampler` (`drop_residual=False`) over these durations.

    The same greedy fill over clips sorted by length, so that the run length is known before F5-TTS starts; the
    parent then checks that both sides ran exactly that many updates.
    """
    lengths = sorted(d * SAMPLE_RATE / HOP_LENGTH for d in durations)
    batches, size, filled = 0, 0, 0.0
    for length in lengths:
        if filled + length <= frames and (max_samples == 0 or size < max_samples):
            size, filled = size + 1, filled + length
            continue
        batches += size > 0
        size, filled = (1, length) if length <= frames else (0, 0.0)
    return batches + (size > 0)


def write_f5lite_mels(clips: Sequence[dict[str, Any]], demo: Path, out: Path) -> Path:
    """f5lite's training directory of the same clips with a mel cache: `f5lite-prepare --mels`, the demo's vocab.

    Args:
        clips: `audio_path` and `text` of each clip (the demo's training clips).
        demo: The demo directory, whose `vocab.txt` is kept (same token ids as the plain run).
        out: Work directory; the prepared directory is `out / "f5lite_mels"`.

    Returns:
        The prepared directory.
    """
    import subprocess

    out.mkdir(parents=True, exist_ok=True)
    csv = out / "metadata.csv"
    csv.write_text("audio_file|text\n" + "".join(f"{c['audio_path']}|{c['text']}\n" for c in clips), encoding="utf-8")
    prepared = out / "f5lite_mels"
    command = [sys.executable, "-m", "f5lite.prepare", str(csv), str(prepared), "--mels"]
    command += ["--vocab", str(demo / "vocab.txt"), "--fixed-vocab"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"compare_f5tts_run.py: f5lite-prepare --mels failed: {done.stderr.strip()[-500:]}")
    return prepared


# -------------------------------------------------------------------------------------------- child processes


def vmhwm_kb(pid: int | str = "self") -> int:
    """VmHWM (peak resident set) of a process in KiB; 0 when it is gone."""
    return _status_kb(pid, "VmHWM:")


def _status_kb(pid: int | str, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class Events:
    """What a child process records: its update timestamps, frames, saves; written as JSON at exit."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {"t_start": time.monotonic(), "updates": [], "frames": [], "saves": []}
        self._frames = 0

    def add_frames(self, n: int) -> None:
        """Count the unpadded mel frames of one batch."""
        self._frames += n

    def update_done(self) -> None:
        """One optimizer update has finished."""
        self.data["updates"].append(time.monotonic())
        self.data["frames"].append(self._frames)
        self._frames = 0

    def timed(self, kind: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, recording the start and end of each call under `saves` with `kind`."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.monotonic()
            try:
                return fn(*args, **kwargs)
            finally:
                self.data["saves"].append({"kind": kind, "start": start, "end": time.monotonic()})

        return wrapper

    def write(self, path: Path, **extra: Any) -> None:
        """Write what was recorded, with this process's VmHWM and `extra`."""
        import torch

        self.data.update(t_end=time.monotonic(), vmhwm_kb=vmhwm_kb(), threads=torch.get_num_threads(), **extra)
        path.write_text(json.dumps(self.data), encoding="utf-8")


def patch_torchaudio_load() -> None:
    """Make `torchaudio.load` read through soundfile, as f5lite does.

    torchaudio 2.9+ loads through torchcodec/ffmpeg, absent here; F5-TTS's `CustomDataset` calls `torchaudio.load`
    and needs only its contract: a float32 `[channels, samples]` tensor and the sample rate.
    """
    import soundfile as sf
    import torch
    import torchaudio

    def sf_load(path: Any, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, int]:
        data, rate = sf.read(str(path), dtype="float32", always_2d=True)
        return torch.from_numpy(data.T.copy()), rate

    torchaudio.load = sf_load


def run_f5tts_child(spec: dict[str, Any], events: Events) -> int:
    """F5-TTS's own trainer on its prepared directory, built as its train.py builds it."""
    import torch

    patch_torchaudio_load()  # forked DataLoader workers inherit the patched module
    from datasets import Dataset as ArrowDataset
    from f5_tts.model import CFM, DiT, Trainer
    from f5_tts.model.dataset import CustomDataset
    from f5_tts.model.utils import get_tokenizer

    data = Path(spec["f5tts_data"])
    torch.manual_seed(spec["seed"])
    vocab_char_map, vocab_size = get_tokenizer(str(data / "vocab.txt"), "custom")
    backbone = DiT(**spec["model"], text_num_embeds=vocab_size, mel_dim=MEL_KWARGS["n_mel_channels"])
    if spec.get("f5tts_compile"):
        backbone.forward = torch.compile(backbone.forward)  # the one line an F5-TTS user adds on a GPU
    model = CFM(transformer=backbone, mel_spec_kwargs=MEL_KWARGS, vocab_char_map=vocab_char_map)
    trainer = Trainer(
        model,
        epochs=spec["epochs"],
        learning_rate=spec["lr"],
        num_warmup_updates=spec["warmup"],
        save_per_updates=spec["ckpt_every"],
        # model_last.pt only by default: one checkpoint per interval, as f5lite writes; bench_speaks.py keeps all (-1)
        keep_last_n_checkpoints=spec.get("keep_checkpoints", 0),
        checkpoint_path=spec["run_dir"],
        batch_size_per_gpu=spec["frames"],
        batch_size_type="frame",
        max_samples=spec["max_samples"],
        grad_accumulation_steps=1,
        max_grad_norm=1.0,
        logger=None,
        last_per_updates=spec["ckpt_every"],
        accelerate_kwargs={"mixed_precision": spec["precision"]},
        ema_kwargs={
            "beta": spec["ema_decay"],
            "update_every": spec["ema_update_every"],
            "update_after_step": spec["ema_update_after"],
        },
        mel_spec_type=MEL_KWARGS["mel_spec_type"],
    )
    ema_update = trainer.ema_model.update

    def update() -> None:  # called once per optimizer update, after the optimizer step
        ema_update()
        events.update_done()

    trainer.ema_model.update = update
    forward = trainer.model.forward  # accelerate's autocast wrapper, when mixed precision is on

    def counted(*args: Any, **kwargs: Any) -> Any:
        events.add_frames(int(kwargs["lens"].sum()))
        return forward(*args, **kwargs)

    trainer.model.forward = counted
    save_checkpoint = trainer.save_checkpoint

    def save(update: int, last: bool = False) -> None:
        # With keep_last_n_checkpoints=0 its numbered save returns before writing: not counted as a checkpoint.
        kept = last or spec.get("keep_checkpoints", 0) != 0
        events.timed("save" if kept else "skipped", save_checkpoint)(update, last)

    trainer.save_checkpoint = save
    with open(data / "duration.json", encoding="utf-8") as f:
        durations = json.load(f)["duration"]
    dataset = CustomDataset(ArrowDataset.from_file(str(data / "raw.arrow")), durations=durations, **MEL_KWARGS)
    events.data["t_train_start"] = time.monotonic()
    trainer.train(dataset, num_workers=spec["workers"], resumable_with_seed=F5TTS_SEED)
    return 0


def f5lite_overrides(spec: dict[str, Any]) -> list[str]:
    """The command-line overrides of `python -m f5lite.train` for this spec."""
    model = [f"model.{key}={value}" for key, value in spec["model"].items()]
    return [
        f"data.dir={spec['f5lite_data']}",
        *model,
        f"data.frames_per_gpu={spec['frames']}",
        f"data.max_samples={spec['max_samples']}",
        f"data.num_workers={spec['workers']}",
        f"optim.max_updates={spec['updates']}",
        f"optim.warmup_updates={spec['warmup']}",
        f"optim.lr={spec['lr']}",
        "optim.max_grad_norm=1.0",
        f"perf.precision={spec['precision']}",
        f"ema.decay={spec['ema_decay']}",
        f"ema.update_every={spec['ema_update_every']}",
        f"ema.update_after={spec['ema_update_after']}",
        f"ckpt.every={spec['ckpt_every']}",
        f"seed={spec['seed']}",
        "eval.every=0",
        "logger.backend=none",
        "run_name=compare_f5tts_run",
        f"run_dir={spec['run_dir']}",
        *spec.get("f5lite_extra", []),
    ]


def run_f5lite_child(spec: dict[str, Any], events: Events) -> int:
    """`python -m f5lite.train` with the spec's overrides, its update and save calls timestamped."""
    from f5lite.train import cli
    from f5lite.train import trainer as module

    cls = module.Trainer
    train_update, fit = cls.train_update, cls.fit

    def timed_update(self: Any, group: Any) -> Any:
        events.add_frames(sum(int(b.mel_lengths.sum()) for b in group))
        loss = train_update(self, group)
        events.update_done()
        return loss

    def timed_fit(self: Any, *args: Any, **kwargs: Any) -> Any:
        events.data["t_train_start"] = time.monotonic()
        return fit(self, *args, **kwargs)

    cls.train_update, cls.fit = timed_update, timed_fit
    cls.save = events.timed("save", cls.save)
    module.export_run = events.timed("export", module.export_run)
    return cli.main(f5lite_overrides(spec))


def child_main(side: str, spec_path: Path, events_path: Path) -> int:
    """Entry point of one run's process."""
    events = Events()
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    rc = (run_f5tts_child if side == "f5tts" else run_f5lite_child)(spec, events)
    events.write(events_path, rc=rc)
    return rc


# ------------------------------------------------------------------------------------------------ measurement


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants."""
    import psutil  # a dependency of accelerate

    try:
        root = psutil.Process(pid)
        return [pid, *(p.pid for p in root.children(recursive=True))]
    except psutil.Error:
        return []


class TreeMemory:
    """Polled by the harness while a run's process lives: the VmHWM of every process of its tree, and the largest
    sum of their VmRSS."""

    def __init__(self) -> None:
        self.peaks: dict[int, int] = {}
        self.tree_rss_kb = 0

    def poll(self, pid: int) -> None:
        """Read the memory of `pid` and its descendants."""
        pids = process_tree(pid)
        self.tree_rss_kb = max(self.tree_rss_kb, sum(_status_kb(p, "VmRSS:") for p in pids))
        for p in pids:
            self.peaks[p] = max(self.peaks.get(p, 0), vmhwm_kb(p))

    def summary(self) -> dict[str, Any]:
        """`peaks` (pid to VmHWM in KiB) and `tree_rss_kb`."""
        return {"peaks": self.peaks, "tree_rss_kb": self.tree_rss_kb}


def summarize(run: dict[str, Any], events: dict[str, Any], skip: int) -> dict[str, Any]:
    """One run's figures from the parent's measurements and the child's events."""
    updates, frames = events["updates"], events["frames"]
    saves = [s for s in events["saves"] if s["kind"] == "save"]
    exports = [s for s in events["saves"] if s["kind"] == "export"]
    first = min(skip, len(updates) - 2)  # the steady part starts after `skip` updates (start-up, lazy init)
    lo, hi = updates[first], updates[-1]
    saved_inside = sum(s["end"] - s["start"] for s in saves if lo <= s["start"] < hi)
    steady = hi - lo - saved_inside
    steady_updates = len(updates) - 1 - first
    workers = sum(v for p, v in run["peaks"].items() if p != run["pid"])
    main_hwm = max(events["vmhwm_kb"], run["peaks"].get(run["pid"], 0))
    return {
        "wall_s": run["wall_s"],
        "updates": len(updates),
        "frames": sum(frames),
        "to_first_update_s": updates[0] - run["launch"],
        "after_last_update_s": run["launch"] + run["wall_s"] - updates[-1],
        "steady_updates_per_s": steady_updates / steady,
        "steady_frames_per_s": sum(frames[first + 1 :]) / steady,
        "saves": len(saves),
        "ckpt_total_s": sum(s["end"] - s["start"] for s in saves),
        "ckpt_mean_s": statistics.mean(s["end"] - s["start"] for s in saves) if saves else 0.0,
        "export_s": sum(s["end"] - s["start"] for s in exports),
        "peak_rss_mb": (main_hwm + workers) / 1024,
        "main_vmhwm_mb": main_hwm / 1024,
        "polled_tree_rss_mb": run["tree_rss_kb"] / 1024,
        "processes": len(run["peaks"]),
        "threads": events["threads"],
    }


# ------------------------------------------------------------------------------------------------------ report


LABELS = {"f5tts": "F5-TTS {v} `Trainer`", "f5lite": "f5lite {v} `python -m f5lite.train`"}
ROWS = (
    ("wall clock, launch to exit (s)", "wall_s", "{:.1f}"),
    ("updates / frames trained", None, ""),
    ("launch to first update (s)", "to_first_update_s", "{:.1f}"),
    ("steady updates/s", "steady_updates_per_s", "{:.3f}"),
    ("steady frames/s (unpadded)", "steady_frames_per_s", "{:.0f}"),
    ("checkpoints written / total s / mean s", None, ""),
    ("final export (s)", "export_s", "{:.2f}"),
    ("last update to exit (s)", "after_last_update_s", "{:.1f}"),
    ("peak RSS, VmHWM incl. workers (MB)", "peak_rss_mb", "{:.0f}"),
    ("peak RSS, main process (MB)", "main_vmhwm_mb", "{:.0f}"),
)


def ratios(medians: dict[str, dict[str, float]]) -> dict[str, float]:
    """F5-TTS / f5lite for times and memory, f5lite / F5-TTS for rates: above 1 means f5lite is better."""
    f5, ours = medians["f5tts"], medians["f5lite"]
    return {
        "wall_clock": f5["wall_s"] / ours["wall_s"],
        "steady_updates_per_s": ours["steady_updates_per_s"] / f5["steady_updates_per_s"],
        "steady_frames_per_s": ours["steady_frames_per_s"] / f5["steady_frames_per_s"],
        "ckpt_total_s": f5["ckpt_total_s"] / ours["ckpt_total_s"] if ours["ckpt_total_s"] else math.inf,
        "peak_rss": f5["peak_rss_mb"] / ours["peak_rss_mb"],
    }


def markdown(result: dict[str, Any]) -> str:
    """The result as a Markdown report."""
    from f5lite.bench import sidebyside as sbs  # not at the top: the F5-TTS process must not import f5lite

    s, med, v = result["settings"], result["medians"], result["versions"]
    sides = [side for side in SIDES if side in med]
    labels = [LABELS[side].format(v=v.get("f5-tts" if side == "f5tts" else side, "?")) for side in sides]
    epochs = f" ({s['epochs']} F5-TTS epoch(s) of {s['batches']} batches)" if "f5tts" in sides else ""
    lines = [
        "# Whole training runs: F5-TTS's own trainer vs f5lite",
        "",
        f"Machine: {sbs.describe(result)}.",
        f"Model: DiT `{s['model_name']}` {s['model']} ({s['precision']} precision); data: the demo dataset's "
        f"{s['clips']} training clips ({s['audio_s']:.0f} s)"
        + (", f5lite reading their mels from its cache (`f5lite-prepare --mels`)" if s.get("f5lite_mels") else "")
        + f", {s['frames']} frames per batch, at most "
        f"{s['max_samples']} utterances; {s['updates']} updates{epochs}; lr {s['lr']}, warm-up {s['warmup']}; EMA decay {s['ema_decay']}, every {s['ema_update_every']}, "
        f"after {s['ema_update_after']}; a checkpoint every {s['ckpt_every']} updates; {s['workers']} DataLoader "
        f"worker(s). Median of {s['rounds']} interleaved rounds, each run its own process; the steady part starts "
        f"after update {s['skip']}, checkpoint time taken out.",
        "",
        "| | " + " | ".join(labels) + " |",
        "| --- |" + " ---: |" * len(sides),
    ]
    for label, key, fmt in ROWS:
        if key is None and label.startswith("updates"):
            cells = [f"{med[x]['updates']:.0f} / {med[x]['frames']:.0f}" for x in sides]
        elif key is None:
            cells = [
                f"{med[x]['saves']:.0f} / {med[x]['ckpt_total_s']:.2f} / {med[x]['ckpt_mean_s']:.2f}" for x in sides
            ]
        else:
            cells = [fmt.format(med[x][key]) for x in sides]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    # The spread between rounds says how far the medians can be trusted on a shared machine.
    lines.append("")
    for side, label in zip(sides, labels, strict=True):
        per_round = ", ".join(f"{x['wall_s']:.1f} s / {x['steady_frames_per_s']:.0f}" for x in result["runs"][side])
        lines.append(f"- per round, wall clock / steady frames/s, {label}: {per_round}")
    if "load_average" in result:
        lines.append(f"- load average (1, 5, 15 min) before and after: {result['load_average']}")
    if "ratios" in result:
        r = result["ratios"]
        lines += [
            "",
            f"Ratio F5-TTS / f5lite: wall clock **{r['wall_clock']:.2f}x** (goal: 1.3x); "
            f"steady updates/s f5lite / F5-TTS {r['steady_updates_per_s']:.2f}x, frames/s "
            f"{r['steady_frames_per_s']:.2f}x; checkpoint time {r['ckpt_total_s']:.2f}x; peak RSS {r['peak_rss']:.2f}x "
            "(above 1: f5lite better).",
        ]
    lines += [
        "",
        "F5-TTS reads audio through `torchaudio.load`, replaced in its process by a soundfile reader (torchcodec is "
        "not installed); f5lite "
        + (
            "reads the same clips' mels from its cache. "
            if s.get("f5lite_mels")
            else "reads the same Ogg files through soundfile. "
        )
        + "F5-TTS writes `model_last.pt` "
        "(`last_per_updates`, no numbered copies) and once more after its last epoch; f5lite writes its checkpoint "
        "and, at the end, its export. Command: `" + result["command"] + "`.",
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------------- main


class WrongLengthError(RuntimeError):
    """A run did not make the number of updates both sides were planned to make."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line of the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2); medians reported")
    parser.add_argument("--sides", default="f5tts,f5lite", help="comma-separated: f5tts, f5lite (default both)")
    parser.add_argument("--model", choices=sorted(MODELS), default="mid", help="DiT size (default mid: MID_DIT)")
    parser.add_argument(
        "--updates", type=int, default=20, help="optimizer updates; with F5-TTS rounded up to whole epochs"
    )
    parser.add_argument("--frames", type=int, default=2400, help="mel frames per batch (default 2400)")
    parser.add_argument("--max-samples", type=int, default=64, help="most utterances per batch (default 64)")
    parser.add_argument("--ckpt-every", type=int, default=8, help="checkpoint interval in updates (default 8)")
    parser.add_argument("--precision", choices=("no", "bf16"), default="bf16", help="accelerate mixed precision")
    parser.add_argument("--lr", type=float, default=7.5e-5)
    parser.add_argument("--warmup", type=int, default=5, help="warm-up updates (default 5)")
    parser.add_argument("--ema-decay", type=float, default=0.9999)
    parser.add_argument("--ema-update-every", type=int, default=10)
    parser.add_argument(
        "--ema-update-after", type=int, default=10, help="default 10 (both trainers' default is 100: copies only)"
    )
    parser.add_argument("--workers", type=int, default=1, help="DataLoader workers, at least 1 (F5-TTS needs one)")
    parser.add_argument("--skip", type=int, default=3, help="updates before the steady part (default 3)")
    parser.add_argument("--seed", type=int, default=F5TTS_SEED)
    parser.add_argument("--f5lite-extra", action="append", default=[], help="another f5lite override (repeatable)")
    parser.add_argument(
        "--f5tts-compile",
        action="store_true",
        help="wrap F5-TTS's DiT forward in torch.compile, as its users do on a GPU (f5lite's: perf.compile=true)",
    )
    parser.add_argument(
        "--f5lite-mels",
        action="store_true",
        help="f5lite reads the same clips' mels from a cache (f5lite-prepare --mels) instead of decoding audio",
    )
    parser.add_argument("--out-dir", type=Path, help="write NAME.json and NAME.md here")
    parser.add_argument("--name", default="f5tts_run_cpu")
    parser.add_argument("--work-dir", type=Path, help="datasets, runs and logs (default a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--child", nargs=3, metavar=("SIDE", "SPEC", "EVENTS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    if not args.sides or any(s not in SIDES for s in args.sides):
        parser.error(f"--sides takes a comma-separated subset of {', '.join(SIDES)}")
    for name in ("rounds", "updates", "frames", "ckpt_every", "workers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if "f5tts" in args.sides and args.child is None:
        try:
            import datasets  # noqa: F401
            import f5_tts.model  # noqa: F401
        except ImportError as err:
            parser.error(f"F5-TTS is not importable ({err}); install it beside f5lite, see the module docstring")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison; print the result as JSON and, with `--out-dir`, write NAME.json and NAME.md."""
    args = parse_args(argv)
    if args.child:
        return child_main(args.child[0], Path(args.child[1]), Path(args.child[2]))
    from f5lite.bench import sidebyside as sbs  # here, not at the top: the F5-TTS process must not import f5lite
    from f5lite.paths import demo_dir

    demo = Path(demo_dir())
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="f5tts_run_"))
    work.mkdir(parents=True, exist_ok=True)
    clips = demo_clips(demo)
    durations = write_f5tts_dataset(clips, work / "f5tts_data")
    batches = f5tts_batches(durations, args.frames, args.max_samples)
    epochs = math.ceil(args.updates / batches)
    # F5-TTS runs whole epochs; without it the requested count stands.
    updates = epochs * batches if "f5tts" in args.sides else args.updates
    spec = {
        "model": MODELS[args.model],
        "frames": args.frames,
        "max_samples": args.max_samples,
        "updates": updates,
        "epochs": epochs,
        "ckpt_every": args.ckpt_every,
        "precision": args.precision,
        "lr": args.lr,
        "warmup": args.warmup,
        "ema_decay": args.ema_decay,
        "ema_update_every": args.ema_update_every,
        "ema_update_after": args.ema_update_after,
        "workers": args.workers,
        "seed": args.seed,
        "f5tts_data": str(work / "f5tts_data"),
        "f5lite_data": str(write_f5lite_mels(clips, demo, work) if args.f5lite_mels else demo),
        "f5lite_mels": args.f5lite_mels,
        "f5lite_extra": args.f5lite_extra,
        "f5tts_compile": args.f5tts_compile,
    }
    configs = []
    for side in args.sides:
        spec_path = work / f"spec_{side}.json"
        spec_path.write_text(json.dumps({**spec, "run_dir": str(work / f"run_{side}")}), encoding="utf-8")
        shutil.rmtree(work / f"run_{side}", ignore_errors=True)  # a fresh run each time, never a resume
        command = [sys.executable, str(Path(__file__).resolve()), "--child", side, str(spec_path), sbs.RESULT]
        configs.append(sbs.Config(side, command))
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in args.sides}

    def log(run: sbs.Run) -> Path:
        path = work / f"log_{run.config}_{run.round}.txt"
        path.write_text(run.stdout + run.stderr, encoding="utf-8")
        return path

    def done(run: sbs.Run) -> None:
        path = log(run)
        measured = {"launch": run.started, "wall_s": run.wall_s, "pid": run.pid, **run.watched}
        summary = summarize(measured, run.result or {}, args.skip)
        if summary["updates"] != updates:
            raise WrongLengthError(f"{run.config} ran {summary['updates']} updates, not {updates}; see {path}")
        runs[run.config].append(summary)
        print(f"round {run.round + 1} {run.config}: " + json.dumps({k: round(v, 3) for k, v in summary.items()}))
        sys.stdout.flush()
        if args.out_dir is not None:  # now, not at the end: a comparison cut short keeps the runs it finished
            write(result())
        if run.round < args.rounds - 1:  # the last one stays for --keep
            shutil.rmtree(work / f"run_{run.config}", ignore_errors=True)

    load_before = os.getloadavg()  # other work on the machine shows up here, and in the spread between rounds

    def result() -> dict[str, Any]:
        """The document of the runs so far: settings, every run, medians, and the ratios once both sides ran."""
        medians = {side: {k: statistics.median(run[k] for run in rs) for k in rs[0]} for side, rs in runs.items() if rs}
        document: dict[str, Any] = {
            **sbs.run_header(["f5-tts", "accelerate", "datasets", "lhotse", "ema-pytorch"]),
            "command": " ".join(
                ["python", "scripts/compare_f5tts_run.py", *(argv if argv is not None else sys.argv[1:])]
            ),
            "settings": {
                "model_name": args.model,
                **{k: v for k, v in spec.items() if not k.endswith("_data")},
                "batches": batches,
                "clips": len(durations),
                "audio_s": sum(durations),
                "rounds": args.rounds,
                "skip": args.skip,
                "sides": args.sides,
                "f5lite_overrides": f5lite_overrides({**spec, "run_dir": "RUN_DIR", "f5lite_data": "DEMO"}),
            },
            "runs": runs,
            "medians": medians,
            "load_average": [[round(x, 2) for x in load_before], [round(x, 2) for x in os.getloadavg()]],
        }
        if set(SIDES) <= set(medians):
            document["ratios"] = ratios(medians)
        return document

    def write(document: dict[str, Any]) -> None:
        """NAME.json and NAME.md in `--out-dir`."""
        sbs.write_results(args.out_dir / f"{args.name}.json", document, markdown(document), indent=2)

    try:
        # Sides alternate which goes first, so a drift in the machine's speed hits both alike.
        sbs.run_interleaved(
            configs, args.rounds, alternate=True, work_dir=work, watch=TreeMemory, poll_s=POLL_S, on_run=done
        )
    except sbs.ChildFailedError as err:
        path = log(err.run)
        tail = (err.run.stdout + err.run.stderr)[-3000:]
        sys.stderr.write(f"end of {path}:\n{tail}\n{err}\n")
        return 1
    except WrongLengthError as err:
        sys.stderr.write(f"{err}\n")
        return 1
    finally:
        if not args.keep and args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    final = result()
    print(json.dumps(final["medians"]))
    if "ratios" in final:
        print(json.dumps(final["ratios"]))
    if args.out_dir is not None:
        write(final)
    return 0


if __name__ == "__main__":
    sys.exit(main())
