"""`objective=duration`: the duration predictor alone (`+recipe=duration_small`).

The data is read as for the flow model (every source `data.dir` takes, the same frame-budget batches) but without
audio: each batch holds text ids, mel lengths and speakers. The predictor starts fresh, or from `duration.init`
(fine-tuning one), and trains with the loop's own optimizer step: `duration.lr` on `optim`'s schedule, its gradient
clipped at `MAX_GRAD_NORM`. Its checkpoint groups are the predictor's (`DURATION_TENSORS`, `DURATION_OPTIMIZER`), so
the run's export holds the predictor alone (`f5lite.train.export`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from torch import Tensor, nn

from f5lite.config import TrainConfig
from f5lite.data.collate import Batch
from f5lite.models.duration import DurationPredictor, duration_loss
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
from f5lite.train.objective import Evaluation, Network, Prepared, TensorGroups

log = logging.getLogger(__name__)


class DurationLoss(nn.Module):
    """The predictor's loss on a batch, in float32 outside any autocast: `(text_ids, lens, speakers) -> loss`."""

    def __init__(self, predictor: DurationPredictor) -> None:
        super().__init__()
        self.predictor = predictor

    def forward(self, text_ids: Tensor, lens: Tensor, speakers: Sequence[str | None]) -> Tensor:
        """The loss of one batch (`f5lite.models.duration.duration_loss`), a 0-d float32 tensor."""
        with torch.autocast(text_ids.device.type, enabled=False):
            return duration_loss(self.predictor(text_ids), lens, speakers)


def predictor_network(cfg: TrainConfig, predictor: DurationPredictor, module: nn.Module) -> Network:
    """The predictor as the loop trains it: its loss module, its optimizer, its checkpoint groups."""
    return Network(
        weights=predictor,
        module=module,
        optimizer=make_predictor_optimizer(cfg, predictor),
        peak_lr=cfg.duration.lr,
        max_grad_norm=MAX_GRAD_NORM,
        groups=(DURATION_TENSORS, DURATION_OPTIMIZER),
        mismatch=predictor_mismatch(cfg, *CHECKPOINT_MISMATCH),
    )


class DurationValidation:
    """The predictor's and the byte rule's median relative errors on the held-out rows (`eval.every`)."""

    def __init__(self, cfg: TrainConfig, predictor: DurationPredictor, encoder: TextEncoder) -> None:
        self.cfg = cfg
        self.predictor = predictor
        self.encoder = encoder
        self.cases = load_duration_cases(cfg) if cfg.eval.every else []

    def run(self, update: int, logger: MetricLogger, batch: Batch) -> dict[str, float]:
        """`val/duration_error` and `val/duration_error_rule` when due, logged."""
        if not self.cases or not validation_due(self.cfg, update):
            return {}
        errors = validation_errors(self.cases, self.predictor, self.encoder)
        logger.log(errors, update)
        log.info("update %d: %s", update, ", ".join(f"{k}={v:.4f}" for k, v in errors.items()))
        return errors


class PredictorObjective:
    """What the two predictor objectives share: the count of applied updates (the export's), no EMA, its errors.

    Args:
        network: the predictor as the loop trains it.
        acc: the run's accelerator.
    """

    loss_name = "duration_loss"

    def __init__(self, network: Network, acc: Accelerator) -> None:
        self.network = network
        self.acc = acc
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

    def window(self) -> dict[str, float]:
        """Nothing beyond the loss."""
        return {}

    def evaluation(self, cfg: TrainConfig, encoder: TextEncoder, log_dir: Path) -> Evaluation:
        """The held-out duration errors."""
        weights = self.network.weights
        assert isinstance(weights, DurationPredictor)
        return DurationValidation(cfg, weights, encoder)


class DurationObjective(PredictorObjective):
    """`objective=duration` (module docstring)."""

    def backward(self, model: nn.Module, batch: Batch, generator: torch.Generator, count: int) -> Tensor:
        """See `Objective.backward`: the predictor's loss on the batch's text, lengths and speakers."""
        loss = model(batch.text_ids, batch.mel_lengths, batch.speakers)
        self.acc.backward(loss / count)
        return loss.detach()


def start_predictor(
    cfg: TrainConfig, encoder: TextEncoder, device: torch.device, start: DurationPredictor | None = None
) -> DurationPredictor:
    """A fresh predictor of `duration.*`, with `duration.init`'s weights when given (a resume overwrites them).

    Args:
        cfg: the run's config.
        encoder: the data's text encoder.
        device: where to train.
        start: `duration.init`'s predictor when already read (`load_start`); read here otherwise.

    Raises:
        ValueError: `duration.init` cannot be read or does not fit `duration.*` (one line).
    """
    predictor = make_predictor(cfg, encoder.num_embeds, device)
    if start is None and cfg.duration.init is not None:
        start = load_start(cfg, encoder, device)
    if start is not None:
        names = ("duration.init's predictor", "give the settings it was trained with")
        load_predictor_weights(predictor, start.state_dict(), cfg, names)
    return predictor


def build_duration(
    cfg: TrainConfig, encoder: TextEncoder, acc: Accelerator, reduce: Callable[[Tensor], Tensor] | None
) -> DurationObjective:
    """`objective=duration`'s `Builder`."""
    predictor = start_predictor(cfg, encoder, acc.device)
    return DurationObjective(predictor_network(cfg, predictor, DurationLoss(predictor)), acc)


def prepare_duration(cfg: TrainConfig) -> Prepared:
    """`objective=duration`'s entry: batches without audio."""
    return Prepared(cfg, build_duration, reads_audio=False)
