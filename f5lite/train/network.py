"""The flow network that `flow`, `distill` and `grpo` all train, and what those objectives share.

`flow_network` builds the backbone set up in the documented order (`f5lite.train.setup`), its EMA on rank 0 and its
optimizer; each objective wraps the backbone in its own loss module. `flow_evaluation` binds what is measured of the
weights (validation, prompts, samples: `f5lite.train.evaluation.Evaluator`). `FlowFamily` is the objective behaviour
they share: the loss module's gradient and that evaluation. Each objective's own module (`flow`, `distill`, `grpo`)
builds on these, so that none of them reaches into another's.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from pathlib import Path

import torch
from accelerate import Accelerator
from torch import Tensor, nn

from f5lite.config import TrainConfig
from f5lite.data.collate import Batch
from f5lite.models.duration import DurationPredictor
from f5lite.storage.lora import LoraSettings
from f5lite.storage.names import MODEL_GROUP, OPTIMIZER_GROUP
from f5lite.text import TextEncoder
from f5lite.train.evaluation import Evaluator
from f5lite.train.objective import BaseObjective, MakeEvaluation, Network
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
    optimizer = make_optimizer(cfg.optim, setup.backbone, acc.device)
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


def flow_evaluation(
    cfg: TrainConfig,
    encoder: TextEncoder,
    acc: Accelerator,
    log_dir: Path,
    network: Network,
    duration: DurationPredictor | None = None,
) -> MakeEvaluation:
    """What a flow-model objective measures while training, bound here and made when the loop asks (rank 0).

    Args:
        cfg: the run's config (its `eval`, `sample`, `logger`, `data`, `ckpt` and `model`).
        encoder: the run's text encoder.
        acc: the run's accelerator (its device and autocast).
        log_dir: where `eval.jsonl` goes (`RUN_DIR/logs`).
        network: the flow network being trained.
        duration: the duration predictor trained alongside, if any.
    """
    return functools.partial(Evaluator, cfg, encoder, acc.device, acc.autocast, log_dir, network, duration)


class FlowFamily(BaseObjective):
    """What the objectives that train a flow network share: its loss module's gradient (and `BaseObjective`'s hooks).

    Its evaluation is `flow_evaluation`'s: validation, prompts and samples of the EMA weights.
    """

    loss_name = "loss"

    def backward(self, model: nn.Module, batch: Batch, generator: torch.Generator, count: int) -> Tensor:
        """See `Objective.backward`: the loss module called as the flow objective is."""
        loss = model(batch.mel, batch.text_ids, batch.mel_lengths, generator=generator)
        self.acc.backward(loss / count)
        return loss.detach().float()
