"""The `optim` section of a training run: AdamW and its learning-rate schedule."""

from __future__ import annotations

from dataclasses import dataclass, field

from f5lite.config.checks import check_at_least


@dataclass
class OptimConfig:
    """AdamW with linear warm-up then linear decay, counted in optimizer updates."""

    lr: float = 7.5e-5
    """Peak learning rate."""
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])
    """AdamW betas."""
    weight_decay: float = 0.01
    """AdamW decoupled weight decay."""
    eps: float = 1e-8
    """AdamW epsilon."""
    warmup_updates: int = 20000
    """Optimizer updates of linear warm-up (whatever the number of processes)."""
    max_updates: int = 1_250_000
    """Optimizer updates of the whole run (F5-TTS v1 Base was released at 1.25M)."""
    grad_accum: int = 1
    """Batches accumulated per optimizer update."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm; 0 turns clipping off."""
    max_bad_updates: int = 5
    """Stop the run after this many updates in a row with a non-finite loss or gradient (each one is skipped:
    no optimizer, schedule or EMA step). Checked when metrics are fetched, every `logger.every` updates."""

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"optim.lr={self.lr!r} is not valid; it must be > 0")
        if len(self.betas) != 2 or not all(0.0 <= b < 1.0 for b in self.betas):
            raise ValueError(f"optim.betas={list(self.betas)!r} is not valid; it must be two numbers in [0, 1)")
        check_at_least("optim.weight_decay", self.weight_decay, 0.0)
        if not self.eps > 0:
            raise ValueError(f"optim.eps={self.eps!r} is not valid; it must be > 0")
        check_at_least("optim.warmup_updates", self.warmup_updates, 0)
        check_at_least("optim.max_updates", self.max_updates, 1)
        check_at_least("optim.grad_accum", self.grad_accum, 1)
        check_at_least("optim.max_grad_norm", self.max_grad_norm, 0.0)
        check_at_least("optim.max_bad_updates", self.max_bad_updates, 1)
