"""Sampling from a flow-matching backbone: time grids, guidance, ODE loops and `sample`, as functions on tensors.

`SamplerOptions` holds every setting of the sampler in one frozen, validated value; `sample` takes it whole.
`Backbone` is what the sampler samples from (f5lite's networks implement it); `guided_field` is its guided velocity.
`sde` is the ODE made stochastic with the same marginals, for online RL (`f5lite.train.grpo`).
"""

from f5lite.sampling.backbone import Backbone
from f5lite.sampling.duration import effective_durations, estimate_duration, fixed_duration, predicted_duration
from f5lite.sampling.guidance import guided_field, guided_velocity, optimized_scale
from f5lite.sampling.ode import METHODS, integrate
from f5lite.sampling.options import SamplerOptions
from f5lite.sampling.sampler import sample
from f5lite.sampling.schedules import EPSS_TABLES, SCHEDULES, sway, time_grid

__all__ = [
    "EPSS_TABLES",
    "METHODS",
    "SCHEDULES",
    "Backbone",
    "SamplerOptions",
    "effective_durations",
    "estimate_duration",
    "fixed_duration",
    "guided_field",
    "guided_velocity",
    "integrate",
    "optimized_scale",
    "predicted_duration",
    "sample",
    "sway",
    "time_grid",
]
