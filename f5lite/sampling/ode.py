"""`solve`: the one stepping loop. The sampler, the RL rollouts and the distillation target all step through it.

Every step goes from grid point `t` to the next, `t + dt`, and is one of three kinds:
- **Euler**: `x + dt f(t, x)`.
- **Midpoint**: `x + dt f(t + dt/2, x + dt/2 f(t, x))`, second order, two evaluations.
- **The SDE's Euler-Maruyama step** (`f5lite.sampling.sde`): a Gaussian around the drift, for online RL. It is taken
  on the steps of a window at the start of the grid when a noise level is given.

The fixed-grid steps are torchdiffeq's `euler` and `midpoint` (which F5-TTS integrates with), but only the current
state is held: `odeint` keeps steps + 1 copies of it. The field is told each step's size, because a distilled student
(`f5lite.models.distill`) takes it as an input; a flow model's field ignores it. A grid may give every sample its own
times (`[k + 1, b]`): the distillation target steps each training sample from its own time.

Shapes: b batch, k steps.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor

from f5lite.sampling.sde import step_mean_std

METHODS = ("euler", "midpoint")
"""Accepted solver names."""


class VelocityField(Protocol):
    """`field(t, x, dt) -> dx/dt`: the velocity at time `t` of state `x`, for a step of size `dt`.

    `t` and `dt` are 0-d, or `[b]` per sample. `dt` matters only to a distilled student, whose velocity is that of one
    step of its size; a flow model's field may be called without it. The result is shaped like `x`, in its dtype.
    """

    def __call__(self, t: Tensor, x: Tensor, dt: Tensor | None = None) -> Tensor:
        """The velocity `[b, n, d]` (see the class)."""
        ...


def solve(
    field: VelocityField,
    x: Tensor,
    grid: Tensor,
    method: str = "euler",
    *,
    noise_level: float = 0.0,
    stochastic_steps: int | None = None,
    generator: torch.Generator | None = None,
    trajectory: bool = False,
) -> Tensor:
    """Step `dx/dt = field(t, x)` from `grid[0]` to `grid[-1]` through the points of `grid`.

    Args:
        field: the velocity field.
        x: the state at `grid[0]`, batch first (`[b, n, d]` for mels).
        grid: times `[k + 1]` shared by the batch, or `[k + 1, b]`, one column per sample. `k = 0` returns `x`.
        method: `euler` or `midpoint`, the ODE's steps.
        noise_level: `a` of the SDE's noise scale `a (1 - t)` (`f5lite.sampling.sde`); 0 solves the ODE.
        stochastic_steps: with `noise_level > 0`, the first this many steps are the SDE's and the rest the ODE's, so
            that all the randomness of a sample after its start lies in that window; None: every step is the SDE's.
        generator: the SDE's draws' generator, on `x`'s device; None draws from the global one.
        trajectory: return every state, not only the last.

    Returns:
        The state at `grid[-1]`, shaped like `x`; with `trajectory`, the states `[k + 1, *x.shape]`, the start first.

    Raises:
        ValueError: an unknown method, or a grid that is neither `[k + 1]` nor `[k + 1, b]`.
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r} is not valid; choose one of: {', '.join(METHODS)}")
    if grid.dim() not in (1, 2) or (grid.dim() == 2 and grid.shape[1] != x.shape[0]):
        raise ValueError(f"the time grid must be [k + 1] or [k + 1, {x.shape[0]}], got shape {tuple(grid.shape)}")
    states = [x]
    for i in range(grid.shape[0] - 1):
        t, dt = grid[i], grid[i + 1] - grid[i]
        if noise_level > 0 and (stochastic_steps is None or i < stochastic_steps):
            x = _sde_step(field, x, t, dt, noise_level, generator)
        else:
            x = _ode_step(field, x, t, dt, method)
        if trajectory:
            states.append(x)
    return torch.stack(states) if trajectory else x


def _ode_step(field: VelocityField, x: Tensor, t: Tensor, dt: Tensor, method: str) -> Tensor:
    """One Euler or midpoint step of the ODE."""
    span = _per_sample(dt, x)
    if method == "euler":
        return x + span * field(t, x, dt)
    half = 0.5 * dt
    return x + span * field(t + half, x + _per_sample(half, x) * field(t, x, half), dt)


def _sde_step(
    field: VelocityField, x: Tensor, t: Tensor, dt: Tensor, noise_level: float, generator: torch.Generator | None
) -> Tensor:
    """One Euler-Maruyama step of the SDE: a draw around its mean (`f5lite.sampling.sde.step_mean_std`)."""
    t_x, dt_x = _per_sample(t, x), _per_sample(dt, x)
    mean, std = step_mean_std(x, field(t, x, dt), t_x, dt_x, noise_level)
    return mean + std * torch.randn(x.shape, dtype=x.dtype, device=x.device, generator=generator)


def _per_sample(value: Tensor, x: Tensor) -> Tensor:
    """A 0-d time as it is; a `[b]` one shaped to broadcast over `x`'s sample dimensions, in `x`'s dtype."""
    if value.dim() == 0:
        return value
    return value.view(-1, *([1] * (x.dim() - 1))).to(x.dtype)
