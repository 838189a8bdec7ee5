"""The `logger` section of a training run: metrics logging and training samples."""

from __future__ import annotations

from dataclasses import dataclass

from f5lite.config.checks import check_at_least, check_choice

LOGGERS = ("none", "tensorboard", "wandb")
"""`logger.backend`."""


@dataclass
class LoggerConfig:
    """Metrics logging and training samples."""

    backend: str = "none"
    """`none` (progress bar only), `tensorboard` (files in `RUN_DIR/logs`; needs the `tensorboard` extra) or
    `wandb` (offline, into `RUN_DIR/logs`, when no API key is configured). Every backend also appends the scalars to
    `RUN_DIR/logs/train.jsonl`."""
    project: str = "f5lite"
    """Project name at the logging backend."""
    every: int = 100
    """Log (and fetch the loss from the device) every N optimizer updates."""
    sample_every: int = 0
    """Every N optimizer updates, synthesize one utterance of the current batch with the EMA weights and log its
    mel-spectrogram image and audio; 0 turns samples off."""

    def __post_init__(self) -> None:
        check_choice("logger.backend", self.backend, LOGGERS)
        check_at_least("logger.every", self.every, 1)
        check_at_least("logger.sample_every", self.sample_every, 0)
