"""`objective=duration`: the duration predictor alone (`+recipe=duration_small`).

The data is read as for the flow model (every source `data.dir` takes, the same frame-budget batches) but without
audio: each batch holds text ids, mel lengths and speakers. The predictor starts fresh, or from `duration.init`
(fine-tuning one), and trains with the loop's own optimizer step (`f5lite.train.duration.predictor`: its network,
its checkpoint groups, its held-out errors), so the run's export holds the predictor alone (`f5lite.train.export`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from accelerate import Accelerator
from torch import Tensor, nn

from f5lite.config import TrainConfig
from f5lite.data.collate import Batch
from f5lite.models.duration import DurationPredictor, duration_loss
from f5lite.text import TextEncoder
from f5lite.train.duration.predictor import (
    PredictorObjective,
    predictor_evaluation,
    predictor_network,
    start_predictor,
)
from f5lite.train.objective import Prepared


class DurationLoss(nn.Module):
    """The predictor's loss on a batch, in float32 outside any autocast: `(text_ids, lens, speakers) -> loss`."""

    def __init__(self, predictor: DurationPredictor) -> None:
        super().__init__()
        self.predictor = predictor

    def forward(self, text_ids: Tensor, lens: Tensor, speakers: Sequence[str | None]) -> Tensor:
        """The loss of one batch (`f5lite.models.duration.duration_loss`), a 0-d float32 tensor."""
        with torch.autocast(text_ids.device.type, enabled=False):
            return duration_loss(self.predictor(text_ids), lens, speakers)


class DurationObjective(PredictorObjective):
    """`objective=duration` (module docstring)."""

    def backward(self, model: nn.Module, batch: Batch, generator: torch.Generator, count: int) -> Tensor:
        """See `Objective.backward`: the predictor's loss on the batch's text, lengths and speakers."""
        loss = model(batch.text_ids, batch.mel_lengths, batch.speakers)
        self.acc.backward(loss / count)
        return loss.detach()


def build_duration(
    cfg: TrainConfig,
    encoder: TextEncoder,
    acc: Accelerator,
    reduce: Callable[[Tensor], Tensor] | None,
    log_dir: Path,
) -> DurationObjective:
    """`objective=duration`'s objective (`prepare_duration` binds the config)."""
    predictor = start_predictor(cfg.duration, cfg.seed, encoder, acc.device)
    network = predictor_network(cfg.duration, cfg.optim, predictor, DurationLoss(predictor))
    return DurationObjective(network, acc, predictor_evaluation(cfg.data, cfg.eval, predictor, encoder))


def prepare_duration(cfg: TrainConfig) -> Prepared:
    """`objective=duration`'s entry: batches without audio."""
    return Prepared(cfg, functools.partial(build_duration, cfg), reads_audio=False)
