"""Time grids for the flow ODE: uniform, Fast F5-TTS's EPSS tables, and sway sampling on top of either.

A grid is a float32 tensor `[steps + 1]` running from 0 (noise) to 1 (data). EPSS (Empirically Pruned Step
Sampling, arXiv 2505.19931) keeps the dense early steps of the 32-step grid and prunes late ones, where the
trajectory is nearly straight; F5-TTS's `auto` behaviour uses a table whenever one exists for the step count.
Sway sampling (F5-TTS paper, eq. 7) then bends any grid towards t = 0: `t + s * (cos(pi/2 t) - 1 + t)`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

SCHEDULES = ("auto", "uniform", "epss")
"""Accepted `schedule` names."""

EPSS_DENOMINATOR = 32
"""EPSS grids are points of the uniform 32-step grid."""

EPSS_TABLES: dict[int, tuple[int, ...]] = {
    5: (0, 2, 4, 8, 16, 32),
    6: (0, 2, 4, 6, 8, 16, 32),
    7: (0, 2, 4, 6, 8, 16, 24, 32),
    10: (0, 2, 4, 6, 8, 12, 16, 20, 24, 28, 32),
    12: (0, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32),
    16: (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32),
}
"""F5-TTS's EPSS tables, in units of 1/32, by number of steps."""


def sway(t: Tensor, coef: float | None) -> Tensor:
    """Apply sway sampling to a time grid.

    Args:
        t: time grid `[steps + 1]` in [0, 1].
        coef: sway coefficient `s` (F5-TTS uses -1, which gives `1 - cos(pi/2 t)`); `None` or 0 leaves `t` as is.
            The grid stays monotone for `s` in [-1, 2 / (pi - 2)].

    Returns:
        The swayed grid, same shape and dtype.
    """
    if coef is None:
        return t
    # F5-TTS's exact expression, so grids match its float32 values bit for bit.
    return t + coef * (torch.cos(math.pi / 2 * t) - 1 + t)


def time_grid(
    steps: int,
    schedule: str = "auto",
    sway_coef: float | None = -1.0,
    *,
    device: torch.device | str | None = None,
) -> Tensor:
    """The time points an ODE solve of `steps` steps visits.

    Args:
        steps: number of solver steps (>= 1).
        schedule: `uniform` (`linspace(0, 1, steps + 1)`), `epss` (a table must exist for `steps`: 5, 6, 7, 10,
            12 or 16), or `auto` (EPSS when a table exists, uniform otherwise; F5-TTS's default).
        sway_coef: sway sampling coefficient applied after the schedule; `None` turns it off.
        device: where to put the grid.

    Returns:
        float32 `[steps + 1]`, from 0 to 1.

    Raises:
        ValueError: `steps` < 1, an unknown schedule, or `epss` with a step count that has no table.
    """
    if steps < 1:
        raise ValueError(f"steps={steps} is not valid; it must be >= 1")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule={schedule!r} is not valid; choose one of: {', '.join(SCHEDULES)}")
    table = EPSS_TABLES.get(steps)
    if schedule == "epss" and table is None:
        known = ", ".join(map(str, EPSS_TABLES))
        raise ValueError(f"there is no EPSS table for {steps} steps (tables: {known}); use schedule=auto or uniform")
    if table is not None and schedule != "uniform":
        grid = torch.tensor(table, dtype=torch.float32, device=device) / EPSS_DENOMINATOR
    else:
        grid = torch.linspace(0, 1, steps + 1, dtype=torch.float32, device=device)
    return sway(grid, sway_coef)
