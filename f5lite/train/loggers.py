"""Metric loggers behind one small interface: `none`, `tensorboard`, `wandb`; and `RUN_DIR/logs/train.jsonl`.

Whatever the backend, the scalars also go to `train.jsonl`, one JSON line per logging window (`{"update": N,
"loss": ..., "lr": ..., ...}`), flushed as written: a file any tool can read while the run goes on (a plot, the
studio's live curve) without TensorBoard or wandb. A resumed run appends; lines of updates redone after a crash
repeat an update number, and the last line of an update is the one that counts. Samples (training samples, fixed
prompts) are written as files too: `RUN_DIR/logs/samples/<tag>/update-<N>.wav` and `.png` (the mel), each put in
place whole (written beside, then renamed), so a reader never sees half a file.

wandb runs offline (files under `RUN_DIR/logs`) when no API key is configured, so a run never blocks on a login.
Only rank 0 logs.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import soundfile as sf
import torch

from f5lite.atomic import atomic_path
from f5lite.audio.images import mel_image
from f5lite.eval.png import grey_png
from f5lite.storage.names import SAMPLES_DIR, TRAIN_LOG


class MetricLogger:
    """Logs nothing; the base of the real backends."""

    def log(self, metrics: dict[str, float], step: int) -> None:
        """Record scalar metrics at an optimizer update."""

    def log_sample(
        self, mel: torch.Tensor, audio: torch.Tensor, sample_rate: int, step: int, tag: str = "sample"
    ) -> None:
        """Record a sample (`tag`: `sample` for training samples, `prompts/<id>` for the fixed prompts).

        Args:
            mel: `[n, mels]`, logged as an image.
            audio: `[samples]` waveform.
            sample_rate: of `audio`.
            step: the optimizer update.
            tag: the name it is logged under (`<tag>/mel`, `<tag>/audio`).
        """

    def close(self) -> None:
        """Flush and close."""


class TensorBoardLogger(MetricLogger):
    """Event files for TensorBoard."""

    def __init__(self, log_dir: Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise ValueError(
                "logger.backend=tensorboard needs the tensorboard package: pip install 'f5lite[tensorboard]'"
            ) from None
        self.writer = SummaryWriter(log_dir=str(log_dir))

    def log(self, metrics: dict[str, float], step: int) -> None:
        """Write scalars."""
        for key, value in metrics.items():
            self.writer.add_scalar(key, value, step)

    def log_sample(
        self, mel: torch.Tensor, audio: torch.Tensor, sample_rate: int, step: int, tag: str = "sample"
    ) -> None:
        """Write the mel image and the audio."""
        self.writer.add_image(f"{tag}/mel", mel_image(mel), step, dataformats="HW")
        self.writer.add_audio(f"{tag}/audio", audio.detach().float().cpu()[None], step, sample_rate=sample_rate)

    def close(self) -> None:
        """Flush the event file."""
        self.writer.close()


class WandbLogger(MetricLogger):
    """Weights & Biases; offline when no API key is configured."""

    def __init__(self, log_dir: Path, project: str, name: str, config: dict[str, Any]) -> None:
        import wandb

        offline = not (os.environ.get("WANDB_API_KEY") or wandb.api.api_key)
        mode: Any = os.environ.get("WANDB_MODE") or ("offline" if offline else "online")
        self.wandb = wandb
        self.run = wandb.init(project=project, name=name, dir=str(log_dir), config=config, mode=mode, resume="allow")

    def log(self, metrics: dict[str, float], step: int) -> None:
        """Log scalars to the run."""
        self.run.log(metrics, step=step)

    def log_sample(
        self, mel: torch.Tensor, audio: torch.Tensor, sample_rate: int, step: int, tag: str = "sample"
    ) -> None:
        """Log the mel image and the audio to the run."""
        wave = audio.detach().float().cpu().numpy()
        media = {f"{tag}/mel": self.wandb.Image(mel_image(mel)), f"{tag}/audio": self.wandb.Audio(wave, sample_rate)}
        self.run.log(media, step=step)

    def close(self) -> None:
        """Finish the run (and its offline files)."""
        self.run.finish()


class JsonlLogger(MetricLogger):
    """Appends each window's scalars to `train.jsonl` and writes samples as files, then hands all to the backend.

    Args:
        backend: the configured logger.
        path: the scalars' file (its folder is created); samples go to `SAMPLES_DIR` beside it.
    """

    def __init__(self, backend: MetricLogger, path: Path) -> None:
        self.backend = backend
        self.samples = path.parent / SAMPLES_DIR
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the run's lifetime, closed by close()

    def log(self, metrics: dict[str, float], step: int) -> None:
        """Write one line (non-finite values as null: JSON has no NaN), then log to the backend."""
        row = {"update": step, **{k: v if math.isfinite(v) else None for k, v in metrics.items()}}
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()
        self.backend.log(metrics, step)

    def log_sample(
        self, mel: torch.Tensor, audio: torch.Tensor, sample_rate: int, step: int, tag: str = "sample"
    ) -> None:
        """Write `samples/<tag>/update-<N>.wav` and `.png`, then log to the backend."""
        folder = self.samples / tag
        folder.mkdir(parents=True, exist_ok=True)
        stem = f"update-{step:08d}"
        wave = audio.detach().float().cpu().numpy()
        for name, write in (
            (f"{stem}.png", lambda tmp: tmp.write_bytes(grey_png(mel_image(mel)))),
            (f"{stem}.wav", lambda tmp: sf.write(tmp, wave, sample_rate, format="WAV", subtype="PCM_16")),
        ):
            with atomic_path(folder / name) as temporary:
                write(temporary)
        self.backend.log_sample(mel, audio, sample_rate, step, tag)

    def close(self) -> None:
        """Close the file and the backend."""
        self._file.close()
        self.backend.close()


def make_logger(backend: str, log_dir: Path, project: str, name: str, config: dict[str, Any]) -> MetricLogger:
    """The logger a `logger.backend` value names (`none`, `tensorboard`, `wandb`), with `train.jsonl` beside it."""
    if backend == "none":
        chosen = MetricLogger()
    elif backend == "tensorboard":
        log_dir.mkdir(parents=True, exist_ok=True)
        chosen = TensorBoardLogger(log_dir)
    elif backend == "wandb":
        log_dir.mkdir(parents=True, exist_ok=True)
        chosen = WandbLogger(log_dir, project, name, config)
    else:
        raise ValueError(f"logger.backend={backend!r} is not valid; choose one of: none, tensorboard, wandb")
    return JsonlLogger(chosen, log_dir / TRAIN_LOG)
