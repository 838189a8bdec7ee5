"""F5-TTS's side of the comparisons: its prepared dataset format and its own `Trainer`, as its scripts build them.

F5-TTS is not a dependency of f5lite: install it beside (`make .f5tts/.installed`, or `pip install --no-deps --target
DIR f5-tts x-transformers torchdiffeq ema-pytorch loguru einx frozendict torch-einops-utils rjieba`, then
`PYTHONPATH=DIR`). This module imports no f5lite module (they would count in an F5-TTS process's memory). Its
process reads audio through soundfile instead of `torchaudio.load` (torchcodec): the only change made to F5-TTS.
"""

from __future__ import annotations

import gzip
import importlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.runner import status_kb

SAMPLE_RATE, HOP_LENGTH = 24_000, 256
MEL_KWARGS = {"target_sample_rate": SAMPLE_RATE, "n_mel_channels": 100, "hop_length": HOP_LENGTH, "win_length": 1024,
              "n_fft": 1024, "mel_spec_type": "vocos"}  # fmt: skip
"""F5-TTS's mel settings (its configs' `model.mel_spec`), which f5lite's `vocos` mel matches."""
F5TTS_SEED = 666
"""`resumable_with_seed` of F5-TTS's train.py; f5lite's default `seed` is the same number."""


def missing(*modules: str) -> str | None:
    """Why F5-TTS (and `modules`, e.g. `ema_pytorch`, `datasets`) cannot be imported, or None when they can."""
    try:
        for name in ("f5_tts.model", *modules):
            importlib.import_module(name)
    except ImportError as err:
        return str(err)
    return None


def demo_clips(demo: Path) -> list[dict[str, Any]]:
    """`audio_path` (absolute) and `text` of every clip of a prepared folder's `cuts.jsonl.gz` (the demo's)."""
    clips = []
    with gzip.open(demo / "cuts.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            cut = json.loads(line)
            source = cut["recording"]["sources"][0]["source"]
            clips.append({"audio_path": str((demo / source).resolve()), "text": cut["supervisions"][0]["text"]})
    return clips


def write_dataset(clips: Sequence[dict[str, Any]], out: Path) -> list[float]:
    """Write F5-TTS's prepared format of `clips` in `out`; returns the durations in seconds, in row order.

    As `prepare_ljspeech.py` writes it: durations from soundfile, clips outside 0.4-30 s dropped, `raw.arrow`
    (datasets' `ArrowWriter`), `duration.json`, and `vocab.txt` (the sorted characters of the texts).
    """
    import soundfile as sf
    from datasets.arrow_writer import ArrowWriter

    rows = [{**clip, "duration": sf.info(clip["audio_path"]).duration} for clip in clips]
    rows = [{k: row[k] for k in ("audio_path", "text", "duration")} for row in rows if 0.4 <= row["duration"] <= 30]
    out.mkdir(parents=True, exist_ok=True)
    with ArrowWriter(path=str(out / "raw.arrow")) as writer:
        for row in rows:
            writer.write(row)
        writer.finalize()
    durations = [row["duration"] for row in rows]
    (out / "duration.json").write_text(json.dumps({"duration": durations}), encoding="utf-8")
    chars = sorted({c for row in rows for c in row["text"]})
    (out / "vocab.txt").write_text("".join(c + "\n" for c in chars), encoding="utf-8")
    return durations


def batches_per_epoch(durations: Sequence[float], frames: int, max_samples: int) -> int:
    """Batches per epoch of F5-TTS's `DynamicBatchSampler` (`drop_residual=False`), known before F5-TTS starts.

    The same greedy fill over the clips sorted by length.
    """
    batches, size, filled = 0, 0, 0.0
    for length in sorted(d * SAMPLE_RATE / HOP_LENGTH for d in durations):
        if filled + length <= frames and (max_samples == 0 or size < max_samples):
            size, filled = size + 1, filled + length
            continue
        batches += size > 0
        size, filled = (1, length) if length <= frames else (0, 0.0)
    return batches + (size > 0)


class Events:
    """What a training process records: its update timestamps, frames and saves; written as JSON at exit."""

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
        """Write what was recorded, with this process's VmHWM (KiB) and `extra`."""
        import torch

        vmhwm = status_kb("self", "VmHWM") or 0
        self.data.update(t_end=time.monotonic(), vmhwm_kb=vmhwm, threads=torch.get_num_threads(), **extra)
        path.write_text(json.dumps(self.data), encoding="utf-8")


def read_with_soundfile() -> None:
    """Make `torchaudio.load` read through soundfile: a float32 `[channels, samples]` tensor and the rate."""
    import soundfile as sf
    import torch
    import torchaudio

    def sf_load(path: Any, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, int]:
        data, rate = sf.read(str(path), dtype="float32", always_2d=True)
        return torch.from_numpy(data.T.copy()), rate

    torchaudio.load = sf_load


def train(spec: dict[str, Any], events: Events) -> int:
    """Train with F5-TTS's own trainer on its prepared directory (`spec["f5tts_data"]`), recording into `events`.

    Model, tokenizer and dataset are built as its train.py builds them; every update, frame count and save is recorded.
    """
    import torch

    read_with_soundfile()  # forked DataLoader workers inherit the patched module
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
    ema = {"beta": spec["ema_decay"], "update_every": spec["ema_update_every"],
           "update_after_step": spec["ema_update_after"]}  # fmt: skip
    trainer = Trainer(
        model, epochs=spec["epochs"], learning_rate=spec["lr"], num_warmup_updates=spec["warmup"],
        save_per_updates=spec["ckpt_every"],
        # model_last.pt only by default: one checkpoint per interval, as f5lite writes; bench_speaks.py keeps all (-1)
        keep_last_n_checkpoints=spec.get("keep_checkpoints", 0), checkpoint_path=spec["run_dir"],
        batch_size_per_gpu=spec["frames"], batch_size_type="frame", max_samples=spec["max_samples"],
        grad_accumulation_steps=1, max_grad_norm=1.0, logger=None, last_per_updates=spec["ckpt_every"],
        accelerate_kwargs={"mixed_precision": spec["precision"]}, ema_kwargs=ema,
        mel_spec_type=MEL_KWARGS["mel_spec_type"],
    )  # fmt: skip
    ema_update, forward, save_checkpoint = trainer.ema_model.update, trainer.model.forward, trainer.save_checkpoint

    def update() -> None:  # called once per optimizer update, after the optimizer step
        ema_update()
        events.update_done()

    def counted(*args: Any, **kwargs: Any) -> Any:  # `forward` is accelerate's autocast wrapper with mixed precision
        events.add_frames(int(kwargs["lens"].sum()))
        return forward(*args, **kwargs)

    def save(update: int, last: bool = False) -> None:
        # With keep_last_n_checkpoints=0 its numbered save returns before writing: not counted as a checkpoint.
        kept = last or spec.get("keep_checkpoints", 0) != 0
        events.timed("save" if kept else "skipped", save_checkpoint)(update, last)

    trainer.ema_model.update, trainer.model.forward, trainer.save_checkpoint = update, counted, save
    durations = json.loads((data / "duration.json").read_text(encoding="utf-8"))["duration"]
    dataset = CustomDataset(ArrowDataset.from_file(str(data / "raw.arrow")), durations=durations, **MEL_KWARGS)
    events.data["t_train_start"] = time.monotonic()
    trainer.train(dataset, num_workers=spec["workers"], resumable_with_seed=F5TTS_SEED)
    return 0
