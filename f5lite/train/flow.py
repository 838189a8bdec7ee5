"""The flow-matching objective (`objective=flow`).

`flow` trains a backbone with F5-TTS's conditional flow-matching loss (`f5lite.models.cfm.CFM`): from scratch, or
fine-tuning `init.weights` (LoRA too, `finetune.lora`). With `duration.train=alongside` the same batches also teach
the duration predictor (`f5lite.train.duration.DurationTraining`, its own optimizer), checkpointed and exported
with the model.

The network it trains (`flow_network`) and what it shares with `distill` and `grpo` (`FlowFamily`) live in
`f5lite.train.network`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from torch import Tensor, nn

from f5lite.config import TrainConfig
from f5lite.data.collate import Batch
from f5lite.models.cfm import CFM
from f5lite.text import TextEncoder
from f5lite.train.duration import DurationTraining
from f5lite.train.network import FlowFamily, flow_evaluation, flow_network
from f5lite.train.objective import MakeEvaluation, Network, Prepared, TensorGroups


class FlowObjective(FlowFamily):
    """`objective=flow` (module docstring).

    Args:
        network: the backbone and its `CFM`.
        acc: the run's accelerator.
        evaluation: what is measured while training (`flow_evaluation`, the predictor alongside included).
        duration: the predictor trained alongside (`duration.train=alongside`), or None.
    """

    def __init__(
        self, network: Network, acc: Accelerator, evaluation: MakeEvaluation, duration: DurationTraining | None
    ) -> None:
        super().__init__(network, acc, evaluation)
        self.duration = duration
        self._duration_loss = torch.zeros((), device=acc.device)
        self._duration_updates = 0

    def backward(self, model: nn.Module, batch: Batch, generator: torch.Generator, count: int) -> Tensor:
        """See `Objective.backward`; the predictor alongside learns from the same micro-batch."""
        loss = super().backward(model, batch, generator, count)
        if self.duration is not None:
            self._duration_loss += self.duration.backward(batch, 1.0 / count) / count
        return loss

    def after_step(self, applied: Tensor) -> None:
        """The predictor's own optimizer step."""
        if self.duration is not None:
            self.duration.step()
            self._duration_updates += 1

    def state(self) -> tuple[TensorGroups, dict[str, Any]]:
        """The predictor's weights and optimizer, when it trains alongside."""
        return self.duration.state() if self.duration is not None else ({}, {})

    def load_state(self, read: Callable[[str], dict[str, Tensor] | None], meta: dict[str, Any]) -> None:
        """The predictor's state, or a fresh predictor when the checkpoint has none (a warning says so)."""
        if self.duration is not None:
            self.duration.resume(read, meta, main=self.acc.is_main_process)

    def window(self) -> dict[str, float]:
        """`duration_loss`, the predictor's mean loss, when it trains alongside."""
        if self.duration is None or not self._duration_updates:
            return {}
        mean = float(self._duration_loss.item()) / self._duration_updates
        self._duration_loss.zero_()
        self._duration_updates = 0
        return {"duration_loss": mean}


def build_flow(
    cfg: TrainConfig,
    encoder: TextEncoder,
    acc: Accelerator,
    reduce: Callable[[Tensor], Tensor] | None,
    log_dir: Path,
) -> FlowObjective:
    """`objective=flow`'s objective, built once the data and the accelerator exist (`prepare_flow` binds `cfg`)."""
    network = flow_network(cfg, encoder, acc, CFM)
    duration = None
    if cfg.duration.train == "alongside":
        duration = DurationTraining(cfg.duration, cfg.optim, cfg.seed, encoder.num_embeds, acc.device, reduce)
    predictor = None if duration is None else duration.predictor
    evaluation = flow_evaluation(cfg, encoder, acc, log_dir, network, predictor)
    return FlowObjective(network, acc, evaluation, duration)


def prepare_flow(cfg: TrainConfig) -> Prepared:
    """`objective=flow`'s entry: the config as given."""
    return Prepared(cfg, functools.partial(build_flow, cfg))
