"""The one way the tests compare a result against a golden tensor (F5-TTS's fixtures, F5-TTS's own code, a float64
recomputation, a reference library).

Two correct float implementations of the same computation agree only up to rounding, and how much they disagree
depends on the CPU: torch picks a kernel set per machine (`ATEN_CPU_CAPABILITY` = default, avx2, avx512), and each
sums, fuses and approximates `exp`/`log`/`cos` in its own order. A fixed absolute tolerance tuned on one machine is
therefore a failure waiting for the next one. Instead every bound here is written in units of the dtype's machine
epsilon and follows from the magnitude of the values:

    |actual - expected| <= eps(dtype) * (ulps * |expected| + range_ulps * max|expected|)

- `ulps` is the relative part: an elementwise chain of k operations rounds each value by about k/2 ULPs of itself.
- `range_ulps` is the absolute floor, scaled to the reference's range: a sum or matmul rounds in proportion to its
  largest terms rather than to its (possibly cancelled) result, so an element near zero still carries an error of
  the order of the whole tensor's scale. Networks, FFTs and filter banks need this part.

Each call site says why its bound is what it is, usually from the rounding error the golden tensor itself carries
(measured by recomputing it in float64) with a margin for a different summation order. Integer and boolean tensors
compare exactly: a draw of indices or a mask has no rounding to forgive.

`pytest --golden-report FILE` writes, for every comparison the run made, the largest difference and its share of the
bound (JSON lines), which is how the closing notes report the margin each test keeps under each kernel set.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import torch


@dataclass(frozen=True)
class Comparison:
    """One comparison made during the run: where, the largest |difference| and its ratio to the bound there."""

    test: str
    what: str
    dtype: str
    max_abs_diff: float
    max_abs_expected: float
    worst_share_of_bound: float
    capability: str


RECORDED: list[Comparison] = []


def golden_bound(expected: torch.Tensor, ulps: float, range_ulps: float) -> torch.Tensor:
    """The per-element bound `eps * (ulps * |expected| + range_ulps * max|expected|)`, in float64.

    Args:
        expected: the golden tensor, any shape, a floating dtype.
        ulps: the relative part, in units of the dtype's epsilon.
        range_ulps: the absolute floor, in units of epsilon times the largest |value| of `expected`.

    Returns:
        A float64 tensor of the shape of `expected`.
    """
    eps = torch.finfo(expected.dtype).eps
    magnitude = expected.detach().double().abs()
    scale = magnitude.max() if magnitude.numel() else magnitude.new_zeros(())
    return eps * (ulps * magnitude + range_ulps * scale)


def assert_golden(
    actual: torch.Tensor, expected: torch.Tensor, *, ulps: float = 0.0, range_ulps: float = 0.0, what: str = ""
) -> None:
    """Assert `actual` equals the golden `expected` within the rounding bound of its dtype (see the module docstring).

    Args:
        actual: the value under test, same shape as `expected`.
        expected: the golden tensor. Its dtype sets epsilon; integer and boolean tensors must be equal.
        ulps: relative tolerance in units of epsilon.
        range_ulps: absolute floor in units of epsilon times max|expected|.
        what: a name for the failure message and the report.

    Raises:
        AssertionError: naming the shape or dtype mismatch, or the worst element, its difference and its bound.
    """
    label = f"{what}: " if what else ""
    assert actual.shape == expected.shape, f"{label}shape {tuple(actual.shape)} != golden {tuple(expected.shape)}"
    if not expected.is_floating_point():
        assert actual.dtype == expected.dtype, f"{label}dtype {actual.dtype} != golden {expected.dtype}"
        assert torch.equal(actual, expected), f"{label}{int((actual != expected).sum())} elements differ"
        return
    assert actual.is_floating_point(), f"{label}dtype {actual.dtype} != golden {expected.dtype}"
    assert ulps > 0 or range_ulps > 0, "a float golden comparison needs a bound; compare bit-exactly with torch.equal"
    finite = expected.isfinite()
    assert torch.equal(actual.isfinite(), finite), f"{label}non-finite values where the golden tensor has none"
    assert torch.equal(actual[~finite].nan_to_num(), expected[~finite].nan_to_num()), f"{label}other non-finite values"
    bound = golden_bound(torch.where(finite, expected, 0), ulps, range_ulps)
    diff = torch.where(finite, actual.detach().double() - expected.detach().double(), 0).abs()
    share = diff / bound.clamp_min(torch.finfo(torch.float64).tiny)
    worst = int(share.argmax()) if share.numel() else 0
    record = Comparison(
        test=os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0],
        what=what,
        dtype=str(expected.dtype).removeprefix("torch."),
        max_abs_diff=float(diff.max()) if diff.numel() else 0.0,
        max_abs_expected=float(expected.abs().max()) if expected.numel() else 0.0,
        worst_share_of_bound=float(share.flatten()[worst]) if share.numel() else 0.0,
        capability=torch.backends.cpu.get_cpu_capability(),
    )
    RECORDED.append(record)
    if record.worst_share_of_bound > 1.0:
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), share.shape))
        raise AssertionError(
            f"{label}|diff| {float(diff.flatten()[worst]):.3g} at {index} exceeds the bound "
            f"{float(bound.flatten()[worst]):.3g} (ulps={ulps}, range_ulps={range_ulps}, golden value "
            f"{float(expected.flatten()[worst]):.6g}, max|golden| {record.max_abs_expected:.3g}, "
            f"largest |diff| {record.max_abs_diff:.3g}, {record.capability} kernels)"
        )


def report_rows() -> list[dict[str, object]]:
    """The comparisons recorded so far, as dictionaries for the `--golden-report` file."""
    return [asdict(r) for r in RECORDED]
