"""What the two predictor objectives (`duration`, `duration_grpo`) share: the network, the start, the evaluation.

`predictor_network` is the predictor as the loop trains it (its optimizer: `duration.lr` on `optim`'s schedule, the
gradient clipped at `MAX_GRAD_NORM`; its checkpoint groups `DURATION_TENSORS`, `DURATION_OPTIMIZER`, so the run's
export holds the predictor alone). `start_predictor` makes a fresh one or takes `duration.init`'s weights.
`PredictorObjective` counts the applied updates (the export's) and measures the held-out errors
(`predictor_evaluation`: `DurationValidation`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import torch
from accelerate import Accelerator
from torch import Tensor, nn

from f5lite.config import DataConfig, OptimConfig
from f5lite.config.duration import DurationConfig
from f5lite.config.evaluation import TrainEvalConfig
from f5lite.data.collate import Batch
from f5lite.models.duration import DurationPredictor
from f5lite.storage.names import DURATION_OPTIMIZER, DURATION_TENSORS, DURATION_UPDATES
from f5lite.text import TextEncoder
from f5lite.train.duration.training import (
    CHECKPOINT_MISMATCH,
    MAX_GRAD_NORM,
    load_duration_cases,
    load_predictor_weights,
    load_start,
    make_predictor,
    make_predictor_optimizer,
    predictor_mismatch,
    validation_errors,
)
from f5lite.train.evaluation import validation_due
from f5lite.train.loggers import MetricLogger
from f5lite.train.objective import BaseObjective, MakeEvaluation, Network, TensorGroups

log = logging.getLogger(__name__)


def predictor_network(
    duration: DurationConfig, optim: OptimConfig, predictor: DurationPredictor, module: nn.Module
) -> Network:
    """The predictor as the loop trains it: its loss module, its optimizer, its checkpoint groups."""
    return Network(
        weights=predictor,
        module=module,
        optimizer=make_predictor_optimizer(duration.lr, optim, predictor),
        peak_lr=duration.lr,
        max_grad_norm=MAX_GRAD_NORM,
        groups=(DURATION_TENSORS, DURATION_OPTIMIZER),
        mismatch=predictor_mismatch(duration, *CHECKPOINT_MISMATCH),
    )


def predictor_evaluation(
    data: DataConfig, ev: TrainEvalConfig, predictor: DurationPredictor, encoder: TextEncoder
) -> MakeEvaluation:
    """The predictor's held-out errors (`DurationValidation`), bound here and made when the loop asks (rank 0)."""
    return functools.partial(DurationValidation, data, ev, predictor, encoder)


class DurationValidation:
    """The predictor's and the byte rule's median relative errors on the held-out rows (`eval.every`)."""

    def __init__(
        self, data: DataConfig, ev: TrainEvalConfig, predictor: DurationPredictor, encoder: TextEncoder
    ) -> None:
        self.ev = ev
        self.predictor = predictor
        self.encoder = encoder
        self.cases = load_duration_cases(data, ev) if ev.every else []

    def run(self, update: int, logger: MetricLogger, batch: Batch) -> dict[str, float]:
        """`val/duration_error` and `val/duration_error_rule` when due, logged."""
        if not self.cases or not validation_due(self.ev, update):
            return {}
        errors = validation_errors(self.cases, self.predictor, self.encoder)
        logger.log(errors, update)
        log.info("update %d: %s", update, ", ".join(f"{k}={v:.4f}" for k, v in errors.items()))
        return errors


class PredictorObjective(BaseObjective):
    """What the two predictor objectives share: the count of applied updates (the export's), no EMA, its errors.

    Args:
        network: the predictor as the loop trains it.
        acc: the run's accelerator.
        evaluation: what is measured while training (`predictor_evaluation`).
    """

    loss_name = "duration_loss"

    def __init__(self, network: Network, acc: Accelerator, evaluation: MakeEvaluation) -> None:
        super().__init__(network, acc, evaluation)
        self.applied = torch.zeros((), dtype=torch.int64, device=acc.device)

    def after_step(self, applied: Tensor) -> None:
        """Count the applied updates (`DURATION_UPDATES`, which the export records)."""
        self.applied += applied.long()

    def state(self) -> tuple[TensorGroups, dict[str, Any]]:
        """The applied updates."""
        return {}, {DURATION_UPDATES: int(self.applied.item())}

    def load_state(self, read: Callable[[str], dict[str, Tensor] | None], meta: dict[str, Any]) -> None:
        """The applied updates."""
        self.applied.fill_(int(meta.get(DURATION_UPDATES, 0)))


def start_predictor(
    duration: DurationConfig,
    seed: int,
    encoder: TextEncoder,
    device: torch.device,
    start: DurationPredictor | None = None,
) -> DurationPredictor:
    """A fresh predictor of `duration.*`, with `duration.init`'s weights when given (a resume overwrites them).

    Args:
        duration: the predictor's settings (`duration.*`).
        seed: the run's seed (the fresh weights).
        encoder: the data's text encoder.
        device: where to train.
        start: `duration.init`'s predictor when already read (`load_start`); read here otherwise.

    Raises:
        ValueError: `duration.init` cannot be read or does not fit `duration.*` (one line).
    """
    predictor = make_predictor(duration, seed, encoder.num_embeds, device)
    if start is None and duration.init is not None:
        start = load_start(duration.init, encoder, device)
    if start is not None:
        names = ("duration.init's predictor", "give the settings it was trained with")
        load_predictor_weights(predictor, start.state_dict(), duration, names)
    return predictor
