"""What the training loop asks of a way of training: an `Objective`, and the `Network` it trains.

`Trainer.fit` is the one loop: data, accelerate, the optimizer step (clipping, the schedule, a non-finite update
skipped on the device), the EMA, checkpoints, exact resume, signals, ranks and the export are written there once.
What differs between the ways f5lite trains is behind `Objective`, one module each, picked by `objective`
(`f5lite.config.objective`):

- `flow` (`f5lite.train.flow`): the flow-matching loss; fine-tuning and LoRA are this objective from `init.weights`,
  with the duration predictor trained alongside when `duration.train=alongside`;
- `distill` (`f5lite.train.distill`): a few-step student of a teacher;
- `grpo` (`f5lite.train.grpo`): RL of a trained model on its own takes;
- `duration` (`f5lite.train.duration.alone`): the duration predictor alone;
- `duration_grpo` (`f5lite.train.duration.grpo`): the predictor by RL.

Each module gives a `Prepare`, the one call that hands it the run's config (final: `perf.precision` resolved): it
reads what the objective needs before anything is built (a teacher, a policy), and returns the config as the
objective needs it, whether its batches carry audio, and how to build the objective once the data and the
accelerator exist; the builder hands on only the sections each part reads, and the objective keeps none of the
config. From there the loop asks the objective, never the config, for what differs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, Protocol

import torch
from accelerate import Accelerator
from torch import Tensor, nn

from f5lite.config import TrainConfig
from f5lite.config.objective import NEEDS, check_needs
from f5lite.data.collate import Batch
from f5lite.storage.lora import merge_lora
from f5lite.text import TextEncoder
from f5lite.train.ema import EMA
from f5lite.train.loggers import MetricLogger

TensorGroups = dict[str, dict[str, Tensor]]
"""A checkpoint's tensors, by group."""


@dataclass
class Network:
    """The weights one run's optimizer trains, as the loop needs them."""

    weights: nn.Module
    """The trained network (a backbone, or the duration predictor): its state dict is the checkpoint's `groups[0]`."""
    module: nn.Module
    """The loss module accelerate prepares (DDP, mixed precision) together with `optimizer`; it holds `weights`."""
    optimizer: torch.optim.Optimizer
    """Fused AdamW over the trained parameters (its learning rate a device tensor, set every update)."""
    peak_lr: float
    """The learning rate the schedule scales."""
    max_grad_norm: float
    """The clipping norm (`inf`: none)."""
    groups: tuple[str, str]
    """The checkpoint groups of the weights and of the optimizer's state."""
    ema: EMA | None = None
    """The weight average (rank 0 only), or None."""
    trainable: list[str] | None = None
    """Names of the trained parameters with LoRA (None: all of them)."""
    lora_scaling: float | None = None
    """The LoRA adapters' scaling, to fold them into the frozen base (None without LoRA)."""
    mismatch: str = "the checkpoint's weights do not fit this run's network; give another run_dir"
    """The one-line error for a checkpoint whose weights have other shapes than this network's."""

    def online_weights(self) -> dict[str, Tensor]:
        """The trained weights as a plain state dict (LoRA adapters folded in)."""
        state = {k: v.detach() for k, v in self.weights.state_dict().items()}
        return state if self.lora_scaling is None else merge_lora(state, self.lora_scaling)

    def ema_weights(self) -> dict[str, Tensor]:
        """The EMA weights as a plain state dict (LoRA adapters folded into the frozen base); rank 0."""
        assert self.ema is not None, "the EMA lives on rank 0 only"
        if self.lora_scaling is None:
            return self.ema.state_dict()
        state = {k: v.detach() for k, v in self.weights.state_dict().items()}
        state.update({k: v.to(state[k].device) for k, v in self.ema.state_dict().items()})
        return merge_lora(state, self.lora_scaling)


class Evaluation(Protocol):
    """What is measured while training (rank 0): validation, prompts, samples, duration errors."""

    def run(self, update: int, logger: MetricLogger, batch: Batch) -> dict[str, float]:
        """Do what is due after `update`, log it, and return the logged numbers (empty when nothing was due)."""
        ...


class Objective(Protocol):
    """One way of training: its loss, the network it trains, its own checkpoint state and its per-step hook."""

    network: Network
    loss_name: str
    """The loss's name in the run's log."""

    def backward(self, model: nn.Module, batch: Batch, generator: torch.Generator, count: int) -> Tensor:
        """Accumulate the gradient of one micro-batch's loss, divided by `count`, into the trained parameters.

        Args:
            model: `network.module` as accelerate prepared it.
            batch: the micro-batch, on the training device.
            generator: its randomness (`f5lite.train.seeding`).
            count: the micro-batches of the update.

        Returns:
            The micro-batch's loss, a detached 0-d float32 device tensor.
        """
        ...

    def after_step(self, applied: Tensor) -> None:
        """After every optimizer update; `applied` is a 0-d bool device tensor, False when it was skipped."""
        ...

    def state(self) -> tuple[TensorGroups, dict[str, Any]]:
        """What a checkpoint holds beyond the network, its optimizer and EMA: tensor groups and metadata."""
        ...

    def load_state(self, read: Callable[[str], dict[str, Tensor] | None], meta: dict[str, Any]) -> None:
        """Restore what `state` gave; `read(group)` is the group on this rank's device (None if absent)."""
        ...

    def window(self) -> dict[str, float]:
        """Numbers of the updates since the last call for the run's log (rewards, the predictor's loss), then forget."""
        ...

    def evaluation(self) -> Evaluation:
        """What this objective measures while training; built on rank 0 before the first update.

        Raises:
            ValueError: its data, prompts or vocoder cannot be loaded.
        """
        ...


MakeEvaluation = Callable[[], Evaluation]
"""Builds an objective's `Evaluation` when the loop asks for it (rank 0); its builder bound what it measures."""


class BaseObjective:
    """What every objective keeps (its network, the accelerator, its bound evaluation), and the hooks' defaults.

    The defaults: nothing after a step, no state beyond the network, nothing in the log beyond the loss.

    Args:
        network: the weights it trains and its loss module.
        acc: the run's accelerator.
        evaluation: what is measured while training (its builder binds it).
    """

    def __init__(self, network: Network, acc: Accelerator, evaluation: MakeEvaluation) -> None:
        self.network = network
        self.acc = acc
        self._evaluation = evaluation

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

    def evaluation(self) -> Evaluation:
        """What its builder bound (`Objective.evaluation`)."""
        return self._evaluation()


class Builder(Protocol):
    """Builds an objective once the data and the accelerator exist; its `Prepare` gave it the run's config."""

    def __call__(
        self, encoder: TextEncoder, acc: Accelerator, reduce: Callable[[Tensor], Tensor] | None, log_dir: Path
    ) -> Objective:
        """The objective, its network built (weights seeded by `seed`, `init.weights` loaded).

        Args:
            encoder: the data's text encoder.
            acc: the run's accelerator (its device, process index and `backward`).
            reduce: the mean across ranks, or None in one process.
            log_dir: where its evaluation writes (`RUN_DIR/logs`).

        Raises:
            ValueError: a setting or an input that cannot work (one line).
        """
        ...


@dataclass(frozen=True)
class Prepared:
    """An objective on its way into a run: the config as it needs it, and how to build it."""

    cfg: TrainConfig
    """The run's config as the objective needs it (a distillation takes its teacher's architecture)."""
    build: Builder
    """Builds the objective once the data and the accelerator exist (with `cfg` bound)."""
    reads_audio: bool = True
    """Whether its batches carry audio (the duration predictor's need only text, lengths and speakers)."""


Prepare = Callable[[TrainConfig], Prepared]
"""An objective's entry: what it reads before anything is built (a teacher, a policy), checked; one per module."""


ENTRIES = {
    "flow": "f5lite.train.flow:prepare_flow",
    "distill": "f5lite.train.distill:prepare_distill",
    "grpo": "f5lite.train.grpo:prepare_grpo",
    "duration": "f5lite.train.duration.alone:prepare_duration",
    "duration_grpo": "f5lite.train.duration.grpo:prepare_duration_grpo",
}
"""Each objective's `Prepare`, by `objective`: imported when chosen, so that a run imports only its own objective
(GRPO's recogniser and vocoder stay out of a flow run)."""


def prepare_objective(cfg: TrainConfig) -> Prepared:
    """The chosen objective's `Prepare`, run, once the settings it needs are there.

    Raises:
        ValueError: a setting it needs is not given, or what it reads first (a teacher, a policy) cannot be used
            (one line).
    """
    keys = NEEDS.get(cfg.objective, ())
    check_needs(cfg.objective, {key: attrgetter(key)(cfg) for key in keys})
    module, name = ENTRIES[cfg.objective].split(":")
    prepare: Prepare = getattr(importlib.import_module(module), name)
    return prepare(cfg)
