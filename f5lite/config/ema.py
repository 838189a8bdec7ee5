"""The `ema` section of a training run: the exponential moving average of the weights."""

from __future__ import annotations

from dataclasses import dataclass

from f5lite.config.checks import check_at_least, check_choice, check_range

EMA_DEVICES = ("same", "cpu")
"""`ema.device`."""


@dataclass
class EMAConfig:
    """Exponential moving average of the weights (the weights F5-TTS releases and infers with)."""

    decay: float = 0.9999
    """Largest decay; it warms up from 0 as in F5-TTS (ema_pytorch's inverse-gamma schedule)."""
    update_every: int = 10
    """Update the EMA every N optimizer updates."""
    update_after: int = 100
    """Copy the weights instead of averaging for the first N optimizer updates."""
    device: str = "same"
    """`same` (the model's device) or `cpu` (keeps the EMA copy off the GPU)."""

    def __post_init__(self) -> None:
        check_range("ema.decay", self.decay, 0.0, 1.0)
        check_at_least("ema.update_every", self.update_every, 1)
        check_at_least("ema.update_after", self.update_after, 0)
        check_choice("ema.device", self.device, EMA_DEVICES)
