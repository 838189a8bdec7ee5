"""Few-step distillation as a training objective.

`objective=distill`: the training loop runs as it is, with `Distillation` as the backbone's loss module (checkpoints,
resume, EMA, validation, samples and export unchanged).

The run's architecture, tokenizer and mel type are the teacher's and the student starts
from the teacher's weights (`adopt_teacher`); the student is the backbone wrapped with zero-initialised step and
guidance embeddings (`f5lite.models.distill`), so at update 0 it is the teacher. Each training sample then draws,
after the flow objective's own draws (noise, the span to generate), a step of one of the grids the student is
trained for (`distill.steps`, as the sampler builds them: `t` and its step size `d`) and a guidance scale `w` in
`distill.guidance`; the target is where the frozen teacher gets from `x_t` in two guided Euler steps of `d / 2`
(`f5lite.sampling.distill.two_step_target`, without gradients), as one step's velocity, and the loss is the mean
squared error to the student's velocity over the span frames, as in the flow objective.

Two stages, as ZipVoice-Distill trains. The first takes a flow model as the teacher: loaded once, frozen, in bf16
on a GPU that computes it (`distill.teacher_dtype`), guided by a second, unconditional pass. The second takes the
first stage's student as `distill.teacher`: the student starts from its weights, embeddings included, and the
teacher, that same student stepping itself (its guidance as an input, no unconditional pass), becomes an
exponential moving average of the student being trained, updated after every applied optimizer update with the
constant decay `distill.teacher_decay` on every rank alike (the ranks hold the same weights, so their averages stay
equal without communication). That average is the run's state: kept in float32 (an update of 1e-4 of a weight
vanishes in bf16; the teacher then computes under autocast in `distill.teacher_dtype`) and saved in every training
checkpoint (`TEACHER_GROUP`), so a resumed second stage continues exactly. Either way the teacher is not a submodule
of the objective: it is in no optimizer, gradient all-reduce or buffer broadcast.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any, cast

import torch
from accelerate import Accelerator
from torch import Tensor, nn

from f5lite.config import TrainConfig
from f5lite.config.distill import DistillConfig
from f5lite.models.cfm import draw_flow_randomness
from f5lite.models.distill import StudentBackbone
from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.sampling.backbone import Backbone
from f5lite.sampling.distill import two_step_target
from f5lite.sampling.schedules import time_grid
from f5lite.storage.model_sources import LoadedSource, load_source
from f5lite.storage.names import TEACHER_GROUP
from f5lite.text import TextEncoder, Vocab
from f5lite.text.vocab import vocab_hash
from f5lite.train.network import FlowFamily, flow_evaluation, flow_network
from f5lite.train.objective import MakeEvaluation, Network, Prepared, TensorGroups

log = logging.getLogger(__name__)


def load_teacher(teacher: str) -> LoadedSource:
    """Read `distill.teacher` (on the CPU, float32).

    Raises:
        ValueError: an unreadable teacher.
    """
    return load_source(teacher)


def is_second_stage(teacher: LoadedSource) -> bool:
    """Whether the teacher is a distilled student: the run is then the second stage."""
    return isinstance(teacher.backbone, StudentBackbone)


def adopt_teacher(cfg: TrainConfig, teacher: LoadedSource) -> TrainConfig:
    """The run's config with the teacher's architecture, tokenizer and mel type, starting from its weights."""
    data = dataclasses.replace(cfg.data, tokenizer=teacher.tokenizer, mel_type=teacher.mel_type)
    init = dataclasses.replace(cfg.init, weights=cfg.distill.teacher, vocab=None)
    return dataclasses.replace(cfg, model=teacher.model, data=data, init=init)


def check_teacher_vocab(teacher: LoadedSource, vocab: Vocab | None) -> None:
    """The training data must be tokenized as the teacher was: a token it never saw would index past its table.

    Raises:
        ValueError: the vocabularies differ, saying how to prepare the data.
    """
    if vocab_hash(teacher.vocab) != vocab_hash(vocab):
        raise ValueError(
            "distill.teacher has another vocab than the training data: prepare the data with the teacher's "
            "(f5lite-prepare IN OUT --vocab TEACHER/vocab.txt --fixed-vocab)"
        )


def teacher_dtype(setting: str, device: torch.device) -> torch.dtype:
    """`distill.teacher_dtype` on a device: `auto` is bf16 on a GPU that computes it, else float32."""
    if setting != "auto":
        return WEIGHT_DTYPES[setting]
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


class DistillObjective(FlowFamily):
    """`objective=distill` (module docstring).

    Args:
        network: the student and its `Distillation`.
        acc: the run's accelerator.
        evaluation: what is measured while training (`flow_evaluation`).
    """

    def __init__(self, network: Network, acc: Accelerator, evaluation: MakeEvaluation) -> None:
        super().__init__(network, acc, evaluation)
        assert isinstance(network.module, Distillation)
        self.distillation = network.module

    def after_step(self, applied: Tensor) -> None:
        """The second stage's teacher follows the student (every rank: each computes its own targets with it)."""
        self.distillation.follow_student(applied)

    def state(self) -> tuple[TensorGroups, dict[str, Any]]:
        """The second stage's teacher (`TEACHER_GROUP`), an average of the student."""
        if self.distillation.follow is None:
            return {}, {}
        return {TEACHER_GROUP: self.distillation.teacher.state_dict()}, {}

    def load_state(self, read: Callable[[str], dict[str, Tensor] | None], meta: dict[str, Any]) -> None:
        """The second stage's teacher."""
        if self.distillation.follow is not None:
            teacher = read(TEACHER_GROUP)
            assert teacher is not None
            self.distillation.teacher.load_state_dict(teacher)


def prepare_distill(cfg: TrainConfig) -> Prepared:
    """`objective=distill`'s entry: the teacher read, its architecture, tokenizer and mel type taken.

    Raises:
        ValueError: an unreadable teacher.
    """
    assert cfg.distill.teacher is not None  # `objective.NEEDS`
    teacher = load_teacher(cfg.distill.teacher)
    adopted = adopt_teacher(cfg, teacher)
    return Prepared(adopted, functools.partial(build_distill, adopted, teacher=teacher))


def build_distill(
    cfg: TrainConfig,
    encoder: TextEncoder,
    acc: Accelerator,
    reduce: Callable[[Tensor], Tensor] | None,
    log_dir: Path,
    *,
    teacher: LoadedSource,
) -> DistillObjective:
    """`objective=distill`'s objective (`prepare_distill` binds the config and the teacher).

    Raises:
        ValueError: the data's vocab is not the teacher's.
    """
    check_teacher_vocab(teacher, encoder.vocab)
    network = flow_network(
        cfg, encoder, acc, lambda student: make_distillation(cast(StudentBackbone, student), teacher, cfg.distill)
    )
    objective = DistillObjective(network, acc, flow_evaluation(cfg, encoder, acc, log_dir, network))
    if acc.is_main_process and objective.distillation.follow is not None:
        log.info(
            "distillation, second stage: the teacher is an average of the student (decay %g), starting at %s",
            objective.distillation.follow,
            cfg.distill.teacher,
        )
    return objective


def make_distillation(student: StudentBackbone, teacher: LoadedSource, settings: DistillConfig) -> Distillation:
    """The objective of a run, with its teacher placed on the student's device as its stage wants it.

    Args:
        student: the run's network (its weights already loaded).
        teacher: what `load_teacher` read.
        settings: the run's `distill` section.
    """
    device = next(student.parameters()).device
    dtype = teacher_dtype(settings.teacher_dtype, device)
    if not is_second_stage(teacher):
        return Distillation(student, teacher.backbone.to(device, dtype), settings)
    # The average stays float32 (see the module docstring); a half `teacher_dtype` is the dtype it computes in.
    compute = None if dtype == torch.float32 else dtype
    return Distillation(student, teacher.backbone.to(device), settings, follow=settings.teacher_decay, autocast=compute)


class Distillation(nn.Module):
    """The distillation loss around a student, called as the flow objective is: `(x1, text, lens, generator)`.

    Args:
        student: the network being trained (`transformer`, as in `CFM`).
        teacher: the teacher, on the training device.
        settings: the run's `distill` section (the step counts, their grid, the guidance range).
        follow: the second stage: the decay with which the teacher averages the student (`follow_student`); None:
            the teacher stays frozen (the first stage).
        autocast: the dtype the teacher computes in under autocast, or None (its weights' own dtype).

    Raises:
        TypeError: a teacher that is no `Backbone`.
    """

    def __init__(
        self,
        student: StudentBackbone,
        teacher: nn.Module,
        settings: DistillConfig,
        *,
        follow: float | None = None,
        autocast: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(teacher, Backbone):
            raise TypeError(f"a distillation's teacher is a Backbone, got {type(teacher).__name__}")
        self.transformer = student
        self._teacher = (teacher.eval().requires_grad_(False),)  # a tuple: not a submodule
        self.follow = follow
        self.autocast = autocast
        pairs, weights = [], []
        for n in settings.steps:
            grid = time_grid(n, settings.sample.schedule, settings.sample.sway)
            pairs += [(float(grid[i]), float(grid[i + 1] - grid[i])) for i in range(n)]
            weights += [1.0 / n] * n  # every step count equally likely, every step of its grid too
        self.steps: Tensor
        self.step_weights: Tensor
        self.register_buffer("steps", torch.tensor(pairs), persistent=False)
        self.register_buffer("step_weights", torch.tensor(weights), persistent=False)
        self.guidance = (float(settings.guidance[0]), float(settings.guidance[1]))

    @property
    def teacher(self) -> Backbone:
        """The teacher."""
        return self._teacher[0]

    @torch.no_grad()
    def follow_student(self, applied: Tensor) -> None:
        """After an optimizer update, the second stage's teacher takes `1 - decay` of the way to the student.

        Args:
            applied: 0-d bool device tensor, False when the update was skipped (the teacher then stays as it was);
                read on the device, without a host sync.
        """
        if self.follow is None:
            return
        student, teacher = self.transformer.state_dict(), self.teacher.state_dict()
        names = [k for k, v in teacher.items() if v.is_floating_point()]
        weight = (1.0 - self.follow) * applied.to(torch.float32)
        online = [student[k].detach().float() for k in names]
        torch._foreach_lerp_([teacher[k] for k in names], online, [weight] * len(names))

    def forward(self, x1: Tensor, text: Tensor, lens: Tensor, *, generator: torch.Generator) -> Tensor:
        """The loss of one batch.

        Args:
            x1: mel `[b, n, d]`, zero in padded frames.
            text: ids `[b, nt]` padded with -1.
            lens: valid frames `[b]` int64.
            generator: the step's randomness, on the batch's device.

        Returns:
            The loss, a 0-d float32 tensor.
        """
        draws = draw_flow_randomness(x1, lens, generator)  # the noise and the span, as the flow objective draws
        b, device = x1.shape[0], x1.device
        picked = torch.multinomial(self.step_weights, b, replacement=True, generator=generator)
        time, step = self.steps[picked].to(x1.dtype).unbind(-1)
        low, high = self.guidance
        guidance = low + (high - low) * torch.rand(b, device=device, generator=generator)
        frames = torch.arange(x1.shape[1], device=device)
        mask = frames[None, :] < lens[:, None]
        span = draws.span_mask & mask
        t = time.view(-1, 1, 1)
        x_t = (1 - t) * draws.x0 + t * x1
        cond = torch.where(span[..., None], torch.zeros((), dtype=x1.dtype, device=device), x1)
        half = nullcontext() if self.autocast is None else torch.autocast(device.type, self.autocast)
        with half:
            target = two_step_target(self.teacher, x_t, cond, text, time, step, guidance, mask)
        pred = self.transformer(x_t, cond, text, time, mask, step=step, guidance=guidance)
        weight = span[..., None].to(torch.float32)
        error = (pred.float() - target.float()).square() * weight
        return error.sum() / (weight.sum() * x1.shape[-1]).clamp(min=1.0)
