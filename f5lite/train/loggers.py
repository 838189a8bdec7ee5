"""Metric loggers behind one small interface: `none`, `tensorboard`, `wandb`.

wandb runs offline (files under `RUN_DIR/logs`) when no API key is configured, so a run never blocks on a login.
Only rank 0 logs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch


class MetricLogger:
    """Logs nothing; the base of the real backends."""

    def log(self, metrics: dict[str, float], step: int) -> None:
        """Record scalar metrics at an optimizer update."""

    def log_sample(self, mel: torch.Tensor, audio: torch.Tensor, sample_rate: int, step: int) -> None:
        """Record a training sample: its mel `[n, mels]` as an image and its waveform `[samples]`."""

    def close(self) -> None:
        """Flush and close."""


def mel_image(mel: torch.Tensor) -> np.ndarray:
    """A log-mel `[n, mels]` as a `[mels, n]` uint8 image, low frequencies at the bottom."""
    m = mel.detach().float().cpu()
    m = (m - m.min()) / (m.max() - m.min()).clamp(min=1e-5)
    return (m.T.flip(0) * 255).round().to(torch.uint8).numpy()


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

    def log_sample(self, mel: torch.Tensor, audio: torch.Tensor, sample_rate: int, step: int) -> None:
        """Write the mel image and the audio."""
        self.writer.add_image("sample/mel", mel_image(mel), step, dataformats="HW")
        self.writer.add_audio("sample/audio", audio.detach().float().cpu()[None], step, sample_rate=sample_rate)

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

    def log_sample(self, mel: torch.Tensor, audio: torch.Tensor, sample_rate: int, step: int) -> None:
        """Log the mel image and the audio to the run."""
        wave = audio.detach().float().cpu().numpy()
        media = {"sample/mel": self.wandb.Image(mel_image(mel)), "sample/audio": self.wandb.Audio(wave, sample_rate)}
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
