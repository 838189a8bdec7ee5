"""Fixed-grid ODE solvers (Euler, midpoint) that keep only the current state.

F5-TTS integrates with `torchdiffeq.odeint`, which returns the whole trajectory (steps + 1 copies of the state);
these loops hold one state (plus the midpoint's half step) whatever the number of steps, and take the same steps
as torchdiffeq's fixed-grid `euler` and `midpoint` methods.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor

METHODS = ("euler", "midpoint")
"""Accepted solver names."""

VelocityField = Callable[[Tensor, Tensor], Tensor]
"""`field(t, x) -> dx/dt`: a 0-d time and a state, returning a tensor shaped like the state."""


def integrate(field: VelocityField, x: Tensor, t: Tensor, method: str = "euler") -> Tensor:
    """Solve `dx/dt = field(t, x)` from `t[0]` to `t[-1]` through the points of `t`.

    Euler takes `x + dt f(t0, x)`; midpoint takes `x + dt f(t0 + dt/2, x + dt/2 f(t0, x))` (second order, two
    evaluations per step).

    Args:
        field: the velocity field.
        x: state at `t[0]`, any shape.
        t: time grid `[k + 1]` for `k` steps (k = 0 returns `x` unchanged).
        method: `euler` or `midpoint`.

    Returns:
        The state at `t[-1]`, shaped like `x`.

    Raises:
        ValueError: unknown method, or `t` is not 1-D.
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r} is not valid; choose one of: {', '.join(METHODS)}")
    if t.dim() != 1:
        raise ValueError(f"the time grid must be 1-D, got shape {tuple(t.shape)}")
    for i in range(t.shape[0] - 1):
        t0 = t[i]
        dt = t[i + 1] - t0
        if method == "euler":
            x = x + dt * field(t0, x)
        else:
            half = 0.5 * dt
            x = x + dt * field(t0 + half, x + half * field(t0, x))
    return x
