"""The training loop and what it relies on: EMA, LR schedule, atomic checkpoints, run directories, loggers, export.

Launch with `python -m f5lite.train +recipe=NAME [key=value ...]` (or `f5lite-train`, or `accelerate launch -m
f5lite.train ...` for several GPUs and nodes). `Trainer` and its exceptions are imported on first use, so that
reading a run (`f5lite.train.export`) does not load accelerate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from f5lite.train.ema import EMA
from f5lite.train.store import Checkpoint, CheckpointSaveError, CheckpointStore

if TYPE_CHECKING:
    from f5lite.train.trainer import BadUpdatesError, Trainer, TrainingStopped

_LAZY = {"Trainer", "TrainingStopped", "BadUpdatesError"}

__all__ = [
    "EMA",
    "BadUpdatesError",
    "Checkpoint",
    "CheckpointSaveError",
    "CheckpointStore",
    "Trainer",
    "TrainingStopped",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from f5lite.train import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module 'f5lite.train' has no attribute {name!r}")
