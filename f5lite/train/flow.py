"""The flow-matching objective (`objective=flow`), and the flow network every flow-model objective trains.

`flow` trains a backbone with F5-TTS's conditional flow-matching loss (`f5lite.models.cfm.CFM`): from scratch, or
fine-tuning `init.weights` (LoRA too, `finetune.lora`). With `duration.train=alongside` the same batches also teach
the duration predictor (`f5lite.train.duration.DurationTraining`, its own optimizer), checkpointed and exported
with the model.

`flow_network` builds what `flow`, `distill` and `grpo` all train: the backbone set up in the documented order
(`f5lite.train.setup`), its EMA on rank 0 and its optimizer; each of them wraps the backbone in its own loss module.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from torch import Tensor, nn

from f5lite.config import TrainConfig
from f5lite.data.collate import Batch
from f5lite.models.cfm import CFM
from f5lite.storage.lora import LoraSettings
from f5lite.storage.names import MODEL_GROUP, OPTIMIZER_GROUP
from f5lite.text import TextEncoder
from f5lite.train.duration import DurationTraining
from f5lite.train.evaluation import Evaluator
from f5lite.train.objective import Evaluation, Network, Prepared, TensorGroups
from f5lite.train.setup import build_model, make_optimizer

log = logging.getLogger(__name__)


def flow_network(
    cfg: TrainConfig, encoder: TextEncoder, acc: Accelerator, loss_module: Callable[[nn.Module], nn.Module]
) -> Network:
    """The backbone a flow-model objective trains, its EMA (rank 0), its optimizer, and its loss module around it.

    Args:
        cfg: the run's config.
        encoder: the data's text encoder (its vocab grows a pretrained text table).
        acc: the run's accelerator.
        loss_module: wraps the backbone in the objective's loss (`CFM`, a distillation, GRPO), after the optimizer
            is made.

    Raises:
        ValueError: see `build_model`.
    """
    setup = build_model(cfg, encoder.num_embeds, encoder.vocab, acc.device, with_ema=acc.is_main_process)
    if acc.is_main_process and setup.grown:
        log.info("text embedding grew by %d rows for tokens the pretrained vocab lacks", setup.grown)
    optimizer = make_optimizer(cfg, setup.backbone, acc.device)
    lora = None if setup.trainable is None else LoraSettings.from_config(cfg.finetune.lora).scaling
    return Network(
        weights=setup.backbone,
        module=loss_module(setup.backbone),
        optimizer=optimizer,
        peak_lr=cfg.optim.lr,
        max_grad_norm=cfg.optim.max_grad_norm if cfg.optim.max_grad_norm > 0 else math.inf,
        groups=(MODEL_GROUP, OPTIMIZER_GROUP),
        ema=setup.ema,
        trainable=setup.trainable,
        lora_scaling=lora,
    )


class FlowFamily:
    """What the objectives that train a flow network share: its loss module's gradient, the evaluation of its weights.

    Args:
        network: the backbone and its loss module.
        acc: the run's accelerator.
    """

    loss_name = "loss"

    def __init__(self, network: Network, acc: Accelerator) -> None:
        self.network = network
        self.acc = acc

    def backward(self, model: nn.Module, batch: Batch, generator: torch.Generator, count: int) -> Tensor:
        """See `Objective.backward`: the loss module called as the flow objective is."""
        loss = model(batch.mel, batch.text_ids, batch.mel_lengths, generator=generator)
        self.acc.backward(loss / count)
        return loss.detach().float()

    def after_step(self, applied: Tensor) -> None:
        """Nothing."""

    def state(self) -> tuple[TensorGroups, dict[str, Any]]:
        """Nothing beyond the network."""
        return {}, {}

    def load_state(self, read: Callable[[str], dict[str, Tensor] | None], meta: dict[str, Any]) -> None:
        """Nothing beyond the network."""

    def window(self) -> dict[str, float]:
        """Nothing beyond the loss."""
        return {}

    def evaluation(self, cfg: TrainConfig, encoder: TextEncoder, log_dir: Path) -> Evaluation:
        """Validation, prompts and samples of the EMA weights."""
        return Evaluator(cfg, encoder, self.acc.device, self.acc.autocast, log_dir, self.network)


class FlowObjective(FlowFamily):
    """`objective=flow` (module docstring).

    Args:
        network: the backbone and its `CFM`.
        acc: the run's accelerator.
        duration: the predictor trained alongside (`duration.train=alongside`), or None.
    """

    def __init__(self, network: Network, acc: Accelerator, duration: DurationTraining | None) -> None:
        super().__init__(network, acc)
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

    def evaluation(self, cfg: TrainConfig, encoder: TextEncoder, log_dir: Path) -> Evaluation:
        """Validation, prompts and samples of the EMA weights; the predictor's errors alongside."""
        predictor = None if self.duration is None else self.duration.predictor
        return Evaluator(cfg, encoder, self.acc.device, self.acc.autocast, log_dir, self.network, predictor)


def build_flow(
    cfg: TrainConfig, encoder: TextEncoder, acc: Accelerator, reduce: Callable[[Tensor], Tensor] | None
) -> FlowObjective:
    """`objective=flow`'s `Builder`."""
    network = flow_network(cfg, encoder, acc, CFM)
    duration = None
    if cfg.duration.train == "alongside":
        duration = DurationTraining(cfg, encoder.num_embeds, acc.device, reduce)
    return FlowObjective(network, acc, duration)


def prepare_flow(cfg: TrainConfig) -> Prepared:
    """`objective=flow`'s entry: the config as given."""
    return Prepared(cfg, build_flow)
