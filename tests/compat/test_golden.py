"""The golden-comparison helper every golden test relies on: its bound, its exact cases, and what it refuses."""

from __future__ import annotations

import pytest
import torch
from support.golden import RECORDED, assert_golden, golden_bound

EPS = torch.finfo(torch.float32).eps


def test_the_bound_is_relative_plus_a_floor_scaled_to_the_range() -> None:
    expected = torch.tensor([4.0, -2.0, 0.0])
    bound = golden_bound(expected, ulps=2, range_ulps=3)
    assert bound.dtype == torch.float64
    assert bound.tolist() == pytest.approx([EPS * (2 * 4 + 3 * 4), EPS * (2 * 2 + 3 * 4), EPS * 3 * 4])
    # Half precision has a larger epsilon, so the same ULPs allow more.
    assert golden_bound(expected.half(), 2, 3)[0] == pytest.approx(torch.finfo(torch.float16).eps * 20)


def test_differences_inside_the_bound_pass_and_outside_fail_naming_the_worst_element() -> None:
    expected = torch.tensor([[1.0, 2.0], [-4.0, 0.0]])
    floor = 4 * 4 * EPS  # range_ulps=4 of max|expected| = 4
    assert_golden(expected + 0.9 * floor, expected, range_ulps=4, what="inside")
    assert RECORDED[-1].what == "inside" and 0.85 < RECORDED[-1].worst_share_of_bound < 0.95
    moved = expected.clone()
    moved[1, 1] += 1.5 * floor
    with pytest.raises(AssertionError, match=r"outside: \|diff\| .* at \(1, 1\) exceeds the bound"):
        assert_golden(moved, expected, range_ulps=4, what="outside")
    # The relative part alone: a large value may move more than a small one.
    assert_golden(torch.tensor([1000.0 * (1 + 3 * EPS), 1.0]), torch.tensor([1000.0, 1.0]), ulps=4)
    with pytest.raises(AssertionError):
        assert_golden(torch.tensor([1000.0, 1.0 + 6 * EPS]), torch.tensor([1000.0, 1.0]), ulps=4)


def test_non_finite_values_must_match_and_integers_must_be_equal() -> None:
    expected = torch.tensor([1.0, float("nan"), float("inf")])
    assert_golden(expected.clone(), expected, ulps=1)
    with pytest.raises(AssertionError, match="non-finite values where"):
        assert_golden(torch.tensor([float("nan"), 1.0, float("inf")]), expected, ulps=1)
    with pytest.raises(AssertionError, match="other non-finite values"):
        assert_golden(torch.tensor([1.0, float("nan"), float("-inf")]), expected, ulps=1)
    with pytest.raises(AssertionError, match="non-finite"):
        assert_golden(torch.tensor([float("nan")]), torch.tensor([1.0]), ulps=1)
    indices = torch.tensor([3, 1, 2])
    assert_golden(indices.clone(), indices)
    with pytest.raises(AssertionError, match="1 elements differ"):
        assert_golden(torch.tensor([3, 1, 4]), indices)
    with pytest.raises(AssertionError, match="dtype"):
        assert_golden(indices.float(), indices)


def test_a_shape_mismatch_or_a_missing_bound_is_refused() -> None:
    with pytest.raises(AssertionError, match=r"shape \(2,\) != golden \(3,\)"):
        assert_golden(torch.zeros(2), torch.zeros(3), ulps=1)
    with pytest.raises(AssertionError, match="needs a bound"):
        assert_golden(torch.zeros(3), torch.zeros(3))
