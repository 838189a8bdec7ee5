"""`SamplerOptions`: every setting of the sampler in one frozen value, validated once.

The same names are used everywhere: the `sample.*` section of the training and inference configs
(`SampleConfig.sampler_options()` builds this), `f5lite.sample(..., options)`, `Synthesizer.synthesize(..., options)`,
the training-sample logger and the benchmarks. The seed is not an option: it is per call.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

from f5lite.sampling.ode import METHODS
from f5lite.sampling.schedules import EPSS_TABLES, SCHEDULES


@dataclass(frozen=True)
class SamplerOptions:
    """How to solve the flow ODE and guide it: the `sample.*`, `grpo.sample.*` and `distill.sample.*` sections too.

    Raises:
        ValueError: a value out of range, one line starting with the field's name (`steps=0 is not valid; ...`).
    """

    steps: int = 32
    """ODE steps (each one backbone call, two with `method="midpoint"`, none for CFG-Zero*'s zero-init steps)."""
    method: str = "euler"
    """`euler` or `midpoint`."""
    schedule: str = "auto"
    """Time grid: `auto` (an EPSS table where one exists, as F5-TTS does), `uniform` or `epss`."""
    sway: float | None = -1.0
    """Sway sampling coefficient (F5-TTS uses -1); None or 0 turns it off."""
    cfg_strength: float = 2.0
    """Classifier-free guidance strength, `v_c + cfg (v_c - v_u)`; 0 runs only the conditional pass."""
    cfg_zero_init_steps: int = 0
    """CFG-Zero*: the first N steps have zero velocity and call nothing."""
    cfg_zero_star: bool = False
    """CFG-Zero*: scale the unconditional velocity by the per-sample optimized factor."""
    speed: float = 1.0
    """Speaking speed factor of the duration estimate (2.0 gives half as many generated frames)."""

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"steps={self.steps} is not valid; it must be >= 1")
        if self.method not in METHODS:
            raise ValueError(f"method={self.method!r} is not valid; choose one of: {', '.join(METHODS)}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule={self.schedule!r} is not valid; choose one of: {', '.join(SCHEDULES)}")
        if self.schedule == "epss" and self.steps not in EPSS_TABLES:
            known = ", ".join(map(str, EPSS_TABLES))
            raise ValueError(f"schedule='epss' has no table for steps={self.steps} (tables: {known})")
        if not self.cfg_strength >= 0:
            raise ValueError(f"cfg_strength={self.cfg_strength!r} is not valid; it must be >= 0")
        if not 0 <= self.cfg_zero_init_steps < self.steps:
            raise ValueError(
                f"cfg_zero_init_steps={self.cfg_zero_init_steps} is not valid; it must be in [0, steps={self.steps})"
            )
        if not self.speed > 0:
            raise ValueError(f"speed={self.speed!r} is not valid; it must be > 0")

    @property
    def backbone_calls(self) -> int:
        """Backbone calls of one `sample`: zero-init steps call nothing, midpoint calls twice, CFG's passes batch."""
        return (self.steps - self.cfg_zero_init_steps) * (2 if self.method == "midpoint" else 1)


OPTION_NAMES = tuple(f.name for f in fields(SamplerOptions))
"""The sampler settings, in declaration order (the `sample.*` keys of the configs that are not per call)."""


def with_model_defaults(model: object, options: SamplerOptions) -> SamplerOptions:
    """A model's own sampler settings in place of the defaults the caller left as they are.

    A distilled student (`f5lite.models.distill`) is trained for few steps with its guidance as an input: it
    carries `sampler_defaults` (for example `{"steps": 4}`), which replace every setting of `options` that still
    has `SamplerOptions()`'s default value, so that a student runs as trained without flags. A setting the caller
    changed from the default is kept; asking for a default value explicitly (e.g. 32 steps) cannot be told apart.

    Args:
        model: the backbone to sample.
        options: the caller's settings.

    Returns:
        The settings to sample with.
    """
    own = getattr(model, "sampler_defaults", None)
    if not own:
        return options
    base = SamplerOptions()
    kept = {name: value for name, value in own.items() if getattr(options, name) == getattr(base, name)}
    return dataclasses.replace(options, **kept)


def backbone_calls(model: object, options: SamplerOptions) -> int:
    """The backbone calls one `sample` of `model` with `options` makes (the model's own settings applied).

    Args:
        model: the backbone to sample.
        options: the caller's settings.

    Returns:
        `SamplerOptions.backbone_calls` of the settings `sample` will use.
    """
    return with_model_defaults(model, options).backbone_calls
