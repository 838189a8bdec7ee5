"""Sampling from a flow-matching backbone: time grids, guidance, ODE loops and `sample`, as functions on tensors.

`SamplerOptions` holds every setting of the sampler in one frozen, validated value; `sample` takes it whole.
`Backbone` is what the sampler samples from (f5lite's networks implement it); `velocity_field` is its velocity
(conditional, guided, CFG-Zero*, a student's), and `solve` the one loop that steps it (Euler, midpoint, the SDE window).
`sde` is the ODE made stochastic with the same marginals, for online RL (`f5lite.train.grpo`).
"""

from f5lite.sampling.backbone import Backbone
from f5lite.sampling.duration import effective_durations, estimate_duration, fixed_duration, predicted_duration
from f5lite.sampling.guidance import guided_velocity, optimized_scale, velocity_field
from f5lite.sampling.ode import METHODS, solve
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
    "guided_velocity",
    "optimized_scale",
    "predicted_duration",
    "sample",
    "solve",
    "sway",
    "time_grid",
    "velocity_field",
]
