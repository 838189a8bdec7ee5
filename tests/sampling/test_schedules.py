"""Time grids: F5-TTS's uniform and EPSS grids and sway sampling, checked against grids F5-TTS recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from support.golden import assert_golden

from f5lite.sampling import EPSS_TABLES, sway, time_grid

FIXTURES = Path(__file__).parents[1] / "assets" / "f5tts_compat"
# Raw grids are table lookups and linspace: exact on every CPU. Swayed grids add one cos, which vector and scalar
# kernels may round 1 ULP apart; the test allowed 1e-7 absolute before (under 1 epsilon of 1, on values up to 1).
SWAYED = {"range_ulps": 4}


@pytest.fixture(scope="module")
def recorded() -> dict[str, torch.Tensor]:
    return load_file(FIXTURES / "dit_tiny.sample.safetensors")


@pytest.mark.golden
@pytest.mark.parametrize("steps", [5, 6, 7, 8, 10, 12, 16, 32])
def test_auto_grids_equal_f5tts(recorded, steps):
    # F5-TTS's use_epss=True: a table where one exists (5, 6, 7, 10, 12, 16), linspace otherwise (8, 32).
    assert torch.equal(time_grid(steps, "auto", None), recorded[f"epss_n{steps}_raw"])
    assert_golden(time_grid(steps, "auto", -1.0), recorded[f"epss_n{steps}_sway-1"], **SWAYED, what=f"n{steps}")


@pytest.mark.golden
@pytest.mark.parametrize(("case", "steps"), [("s1", 8), ("s2", 7), ("s3", 8)])
def test_sample_case_grids_equal_f5tts(recorded, case, steps):
    assert torch.equal(time_grid(steps, "auto", None), recorded[f"{case}_t_raw"])
    assert_golden(time_grid(steps, "auto", -1.0), recorded[f"{case}_t"], **SWAYED, what=f"{case} swayed")


def test_epss_tables_are_subsets_of_the_32_step_grid():
    for steps, table in EPSS_TABLES.items():
        assert len(table) == steps + 1 and table[0] == 0 and table[-1] == 32
        assert list(table) == sorted(set(table))
        grid = time_grid(steps, "epss", -1.0)
        full = time_grid(32, "uniform", -1.0)
        assert all(torch.isclose(full, v, atol=1e-7).any() for v in grid)


def test_uniform_ignores_tables_and_epss_needs_one():
    assert torch.equal(time_grid(7, "uniform", None), torch.linspace(0, 1, 8))
    assert not torch.equal(time_grid(7, "uniform", None), time_grid(7, "epss", None))
    with pytest.raises(ValueError, match="no EPSS table for 8 steps"):
        time_grid(8, "epss")


def test_sway_formula_and_off_switches():
    t = torch.linspace(0, 1, 9)
    assert_golden(sway(t, -1.0), 1 - torch.cos(torch.pi / 2 * t), **SWAYED, what="sway -1")
    assert torch.equal(sway(t, None), t)
    assert torch.equal(sway(t, 0.0), t)
    swayed = time_grid(32, "uniform", -1.0)
    assert swayed[0] == 0 and swayed[-1] == 1 and (swayed.diff() > 0).all()
    # Negative sway packs steps near the noise end, where the trajectory bends most.
    assert swayed.diff()[0] < swayed.diff()[-1]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="steps=0"):
        time_grid(0)
    with pytest.raises(ValueError, match="schedule='cosine'"):
        time_grid(8, "cosine")
