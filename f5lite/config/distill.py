"""The `distill` section of a training run: few-step distillation from a teacher (`objective=distill`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from f5lite.config.checks import check_choice, check_range
from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.sampling.options import SamplerOptions


@dataclass
class DistillConfig:
    """Few-step distillation (`f5lite.train.distill`).

    A student learns to take in one step of size `d`, guided by `w` as an input, what a frozen teacher takes in two
    guided Euler steps of `d / 2` (ZipVoice-Distill).
    """

    teacher: str | None = None
    """`objective=distill`'s teacher: an f5lite export or training run directory. Its architecture
    becomes `model` and its weights the student's start (`init.weights`). A distilled student (the first stage's
    export) makes the run the second stage: the student starts from it, embeddings included, and the teacher is an
    average of the student (`teacher_decay`), starting at that export and stepping itself."""
    steps: list[int] = field(default_factory=lambda: [2, 4, 8])
    """Step counts the student is trained for: each sample takes one step of a grid of one of these counts (with
    `distill.sample.schedule` and `distill.sample.sway`, as the sampler builds it)."""
    guidance: list[float] = field(default_factory=lambda: [1.0, 3.0])
    """The range the guidance scale `w` of each sample is drawn from (uniformly)."""
    sample: SamplerOptions = field(default_factory=lambda: SamplerOptions(steps=4, cfg_strength=2.0))
    """The student's sampler: `schedule` and `sway` build the grids it is trained on, and the exported student
    samples with `steps` and `cfg_strength` (its guidance input) unless told otherwise. A student takes Euler steps
    with no unconditional pass, so `method`, `cfg_zero_init_steps`, `cfg_zero_star` and `speed` keep their
    defaults."""
    teacher_dtype: str = "auto"
    """The teacher's dtype: `auto` (bf16 on a GPU that computes it, else fp32), `fp32`, `bf16`, `fp16`. The first
    stage's frozen teacher is cast to it; the second stage's keeps float32 weights (it is an average) and computes
    in it under autocast."""
    teacher_decay: float = 0.9999
    """Second stage only: after every applied optimizer update the teacher takes `1 - teacher_decay` of the way to
    the student (a constant decay from the first update, no warm-up: ZipVoice-Distill's 0.9999)."""

    def __post_init__(self) -> None:
        if not self.steps or any(not isinstance(n, int) or n < 1 for n in self.steps):
            raise ValueError(f"distill.steps={list(self.steps)!r} is not valid; give step counts >= 1, e.g. [2, 4, 8]")
        if len(self.guidance) != 2 or not 0 <= self.guidance[0] <= self.guidance[1]:
            raise ValueError(
                f"distill.guidance={list(self.guidance)!r} is not valid; give [low, high], 0 <= low <= high"
            )
        fixed = SamplerOptions(steps=self.sample.steps, cfg_strength=self.sample.cfg_strength,
                               schedule=self.sample.schedule, sway=self.sample.sway)  # fmt: skip
        for name in ("method", "cfg_zero_init_steps", "cfg_zero_star", "speed"):
            if getattr(self.sample, name) != getattr(fixed, name):
                raise ValueError(
                    f"distill.sample.{name}={getattr(self.sample, name)!r} is not valid; a distilled student takes "
                    f"Euler steps with no unconditional pass (leave it at {getattr(fixed, name)!r})"
                )
        check_choice("distill.teacher_dtype", self.teacher_dtype, ("auto", *WEIGHT_DTYPES))
        check_range("distill.teacher_decay", self.teacher_decay, 0.0, 1.0)
