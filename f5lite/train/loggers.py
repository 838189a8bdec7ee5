"""Metric loggers behind one small interface: `none`, `tensorboard`, `wandb`.

wandb runs offline (files under `RUN_DIR/logs`) when no API key is configured, so a run never blocks on a login.
Only rank 0 logs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from f5lite.audio.images import mel_image


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


def make_logger(backend: str, log_dir: Path, project: str, name: str, config: dict[str, Any]) -> MetricLogger:
    """The logger a `logger.backend` value names (`none`, `tensorboard`, `wandb`)."""
    if backend == "none":
        return MetricLogger()
    log_dir.mkdir(parents=True, exist_ok=True)
    if backend == "tensorboard":
        return TensorBoardLogger(log_dir)
    if backend == "wandb":
        return WandbLogger(log_dir, project, name, config)
    raise ValueError(f"logger.backend={backend!r} is not valid; choose one of: none, tensorboard, wandb")
