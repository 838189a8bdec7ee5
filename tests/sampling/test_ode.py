"""`solve`, the one stepping loop, on velocity fields with known solutions: Euler exact on a linear field, midpoint second
order, per-sample grids and the step size told to the field."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest
import torch

from f5lite.sampling import solve, time_grid


def straight_path_field(x1: torch.Tensor):
    """The rectified-flow field towards `x1`: linear in x, solved by the straight line from x0 to x1."""
    return lambda t, x, dt=None: (x1 - x) / (1 - t)


@pytest.mark.parametrize("steps", [1, 3, 7, 32])
def test_euler_is_exact_on_a_linear_field(steps):
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(2, 5, 3, generator=g, dtype=torch.float64)
    x1 = torch.randn(2, 5, 3, generator=g, dtype=torch.float64)
    grid = time_grid(steps, "auto", -1.0).double()  # non-uniform grids too
    out = solve(straight_path_field(x1), x0, grid, "euler")
    assert torch.allclose(out, x1, rtol=0, atol=1e-12)
    # Stopping early lands on the line: x(t) = (1 - t) x0 + t x1.
    half = solve(straight_path_field(x1), x0, grid[: steps // 2 + 1], "euler")
    t = grid[steps // 2]
    assert torch.allclose(half, (1 - t) * x0 + t * x1, rtol=0, atol=1e-12)


def test_midpoint_is_exact_for_velocity_linear_in_time():
    x0 = torch.tensor([0.5], dtype=torch.float64)
    out = solve(lambda t, x, dt=None: 3 * t + 1 + 0 * x, x0, torch.linspace(0, 1, 4, dtype=torch.float64), "midpoint")
    assert torch.allclose(out, x0 + 1.5 + 1, rtol=0, atol=1e-12)


def curved_error(method: str, steps: int) -> float:
    # dx/dt = cos(t) x, x(0) = 1  =>  x(1) = exp(sin 1).
    x = solve(
        lambda t, x, dt=None: torch.cos(t) * x,
        torch.ones(1, dtype=torch.float64),
        torch.linspace(0, 1, steps + 1, dtype=torch.float64),
        method,
    )
    return abs(x.item() - math.exp(math.sin(1.0)))


def test_midpoint_is_second_order_and_euler_first_order():
    # Halving the step divides the error by 2^order once the steps are small enough.
    mid = [curved_error("midpoint", n) for n in (32, 64, 128)]
    euler = [curved_error("euler", n) for n in (32, 64, 128)]
    for coarse, fine in pairwise(mid):
        assert 3.7 < coarse / fine < 4.3
    for coarse, fine in pairwise(euler):
        assert 1.9 < coarse / fine < 2.1
    assert mid[-1] < euler[-1] / 100


def test_midpoint_evaluates_twice_per_step_at_start_and_half_step():
    times = []

    def field(t, x, dt):
        times.append((float(t), float(dt)))
        return torch.zeros_like(x)

    solve(field, torch.zeros(1), torch.tensor([0.0, 0.5, 1.0]), "midpoint")
    # Each step is told its size: the half step's for the evaluation at its start, the whole for the midpoint's.
    assert times == [(0.0, 0.25), (0.25, 0.5), (0.5, 0.25), (0.75, 0.5)]


def test_unknown_method_and_bad_grid_are_refused():
    with pytest.raises(ValueError, match="method='rk4'"):
        solve(lambda t, x, dt: x, torch.zeros(1), torch.linspace(0, 1, 3), "rk4")
    with pytest.raises(ValueError, match=r"\[k \+ 1\] or \[k \+ 1, 1\], got shape \(2, 2\)"):
        solve(lambda t, x, dt: x, torch.zeros(1), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="got shape"):
        solve(lambda t, x, dt: x, torch.zeros(1), torch.zeros(2, 1, 1))


@pytest.mark.parametrize("method", ["euler", "midpoint"])
def test_a_grid_per_sample_steps_each_sample_on_its_own_times(method):
    # The distillation target steps every training sample from its own time by its own step: row i of the batch
    # solved on column i of the grid is row i solved alone on that column (times and step sizes seen per sample).
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 4, 2, generator=g, dtype=torch.float64)
    grid = torch.tensor([[0.0, 0.2, 0.7], [0.1, 0.5, 0.9], [0.3, 0.6, 1.0]], dtype=torch.float64)  # [k + 1, b]
    seen = []

    def field(t, x, dt):
        seen.append(dt)
        return torch.cos(3 * t).view(-1, 1, 1) * x + t.view(-1, 1, 1) * dt.view(-1, 1, 1)

    together = solve(field, x, grid, method)
    for i in range(3):
        alone = solve(field, x[i : i + 1], grid[:, i : i + 1], method)
        assert torch.allclose(together[i : i + 1], alone, rtol=0, atol=1e-12)
    assert seen[0].shape == (3,)
