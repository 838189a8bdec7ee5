"""Training: the loop and what only training needs.

- `trainer.py`: `Trainer`, the one loop for every way of training (updates, logging, checkpoints, resume, export);
- `objective.py`: what the loop asks of a way of training (`Objective`, the `Network` it trains), and the objectives
  by `objective`: `flow.py` (flow matching, fine-tuning, LoRA; the predictor alongside), `distill.py` (few-step
  distillation), `grpo.py` with `rewards.py` (online RL with speech rewards), `duration/` (the duration predictor
  alone, and by RL);
- `setup.py`: everything done to the model before the first update, in the one documented order;
- `samples.py`: training samples with the EMA weights; `loggers.py`: none / tensorboard / wandb;
- `evaluation.py`: evaluation while training on rank 0, from `validation.py` (the deterministic validation loss),
  `prompts.py` (fixed prompts spoken and scored with `f5lite.metrics`) and `best.py` (the best score, early stopping);
- `ema.py`, `schedule.py`, `seeding.py`, `signals.py`: the EMA, the LR schedule, per-step seeds, SIGTERM handling;
- `finetune.py`: starting from pretrained weights (architecture guard, vocab growth);
- `cli.py` (`python -m f5lite.train`, `f5lite-train`) and `export.py` (`f5lite-export`).

Run directories, checkpoints and LoRA adapters are formats that inference reads too: they live in `f5lite.storage`.
`Trainer` and its exceptions are imported on first use, so that `f5lite.train.export` does not load accelerate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from f5lite.train.ema import EMA

if TYPE_CHECKING:
    from f5lite.train.trainer import BadUpdatesError, Trainer, TrainingStopped

_LAZY = {"Trainer", "TrainingStopped", "BadUpdatesError"}

__all__ = ["EMA", "BadUpdatesError", "Trainer", "TrainingStopped"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from f5lite.train import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module 'f5lite.train' has no attribute {name!r}")
