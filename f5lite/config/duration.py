"""The `duration` section of a training run: the duration predictor (`f5lite.models.duration`)."""

from __future__ import annotations

from dataclasses import dataclass

from f5lite.config.checks import check_at_least, check_choice, check_range
from f5lite.config.objective import REMOVED

DURATION_TRAINING = ("none", "alongside")
"""`duration.train`."""


@dataclass
class DurationConfig:
    """The duration predictor (`f5lite.models.duration`): how many frames a text takes to say, learned.

    Picked as a group: `duration=small` trains one alongside the flow model; `+recipe=duration_small` trains one alone.
    """

    train: str = "none"
    """`none`, or `alongside`: with `objective=flow`, one predictor update on every flow update's batches (its own
    optimizer; checkpointed and exported with the model). `objective=duration` trains a predictor alone."""
    dim: int = 64
    """Width of the token embedding and of the blocks."""
    depth: int = 3
    """Convolution blocks."""
    kernel_size: int = 5
    """Tokens each block's depthwise convolution sees (odd)."""
    lr: float = 2.0e-3
    """Peak learning rate of the predictor's AdamW (betas, eps and weight decay are `optim`'s); the warm-up and the
    linear decay follow `optim.warmup_updates` and `optim.max_updates`."""
    init: str | None = None
    """The predictor to start from, with `objective=duration` (fine-tuning one) or `duration_grpo` (which needs one,
    and holds the policy near it by `grpo.kl`): a predictor directory (an `alone` run's export) or an export that holds
    one, of the data's vocab. null: `alone` starts from fresh weights."""
    spread: float = 0.1
    """`objective=duration_grpo` only: the standard deviation of the log-length the policy draws around the predictor's
    estimate (0.1: a group's takes mostly within 10 % of it)."""

    def __post_init__(self) -> None:
        if self.train in REMOVED:
            raise ValueError(f"duration.train={self.train} was removed; use objective={REMOVED[self.train]}")
        check_choice("duration.train", self.train, DURATION_TRAINING)
        check_at_least("duration.dim", self.dim, 1)
        check_at_least("duration.depth", self.depth, 1)
        if self.kernel_size < 1 or self.kernel_size % 2 == 0:
            raise ValueError(f"duration.kernel_size={self.kernel_size!r} is not valid; it must be an odd number >= 1")
        if not self.lr > 0:
            raise ValueError(f"duration.lr={self.lr!r} is not valid; it must be > 0")
        check_range("duration.spread", self.spread, 1e-3, 1.0)
