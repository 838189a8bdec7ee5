"""Where one training step's time goes: torch.profiler rows sorted into a few categories, as a pure function.

`categorize` takes rows `(name, duration, start, end)` (microseconds, one clock) and returns each category's time;
`profiler_rows` makes them from a finished `torch.profiler.profile`. The categories (`compare_f5tts_train.py
--profile` reports them): matmul (GEMM kernels, inductor's mm templates, `aten::mm`...), attention (flash, memory-
efficient, cuDNN, flex), convolution (cuDNN's implicit GEMM included), elementwise (norms, modulation, reductions, the
loss, inductor's fused kernels), optimizer (all inside `OPTIMIZER_RANGE`, and fused Adam kernels), ema (all inside
`EMA_RANGE`), copies (memcpy, memset, fills, casts), other, and idle: the step's window (`STEP_RANGE`) minus the union
of the other rows' intervals. On a GPU the rows are the device's kernels, so idle is the time it runs nothing; on a
CPU they are the operators' self times, so idle is the time inside no operator (Python, dispatch). The ranges count
nothing themselves: they attribute the rows whose midpoint falls inside them (ema first, then optimizer, then names).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

STEP_RANGE = "bench: step"
"""`record_function` name around the whole profiled step: its interval is the step's window."""
OPTIMIZER_RANGE = "bench: optimizer"
"""`record_function` name around gradient clipping, the optimizer step, the LR update and zero_grad."""
EMA_RANGE = "bench: ema"
"""`record_function` name around the EMA update."""
RANGES = (STEP_RANGE, OPTIMIZER_RANGE, EMA_RANGE)

CATEGORIES = ("matmul", "attention", "convolution", "elementwise", "optimizer", "ema", "copies", "other", "idle")
"""Every category `categorize` returns, in the order the reports list them."""

# Checked in this order on the lower-cased name: attention before matmul (CUTLASS also builds fmha kernels),
# convolution before matmul (cuDNN's implicit GEMM is a convolution), inductor's templates before its fused kernels.
RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("attention", ("flash", "fmha", "attention", "sdpa", "flex")),
    ("optimizer", ("adam",)),
    ("convolution", ("conv", "implicit_gemm", "cudnn", "fprop", "dgrad", "wgrad")),
    ("matmul", ("triton_tem_fused_mm", "triton_tem_fused_addmm", "triton_tem_fused_bmm")),
    ("elementwise", ("triton_", "compiledfxgraph")),
    ("matmul", ("gemm", "nvjet", "xmma", "cutlass", "cublas", "aten::mm", "aten::addmm", "aten::bmm", "matmul")),
    ("matmul", ("aten::baddbmm", "aten::_scaled_mm", "aten::linear", "mkldnn")),
    ("copies", ("memcpy", "memset", "copy", "fill", "aten::zero_", "aten::to", "aten::clone", "contiguous")),
    ("elementwise", ("elementwise", "norm", "reduce", "softmax", "dropout", "bernoulli", "silu", "gelu", "mul", "add",
                     "sub", "div", "exp", "tanh", "sin", "cos", "pow", "sqrt", "sum", "mean", "where", "cat", "index",
                     "embedding", "gather", "scatter", "mse", "loss", "neg", "clamp", "masked", "rand", "lerp",
                     "foreach", "chunk", "pad")),
)  # fmt: skip


class Row(NamedTuple):
    """One profiler row in microseconds: a kernel or an operator (`duration`: its own time), or one of `RANGES`."""

    name: str
    duration: float
    start: float
    end: float


def category_of(name: str) -> str:
    """The category of a kernel or operator (e.g. `"aten::addmm"`) by its name alone (`RULES`), else `other`."""
    lowered = name.lower()
    return next((category for category, keys in RULES if any(key in lowered for key in keys)), "other")


def union_length(intervals: Iterable[tuple[float, float]], window: tuple[float, float]) -> float:
    """The length of the union of `(start, end)` intervals clipped to `window` (overlaps counted once)."""
    lo, hi = window
    clipped = sorted((max(s, lo), min(e, hi)) for s, e in intervals if min(e, hi) > max(s, lo))
    covered, reach = 0.0, lo
    for s, e in clipped:
        if e > reach:
            covered += e - max(s, reach)
            reach = e
    return covered


def categorize(rows: Sequence[Row]) -> dict[str, float]:
    """`{category: microseconds}` for every one of `CATEGORIES` in one profiled step, and `"window"`: its length.

    The window is the `STEP_RANGE` row's interval or, without one, the span of all rows.
    """
    work = [r for r in rows if r.name not in RANGES]
    steps = [r for r in rows if r.name == STEP_RANGE] or work
    window = (min(r.start for r in steps), max(r.end for r in steps)) if steps else (0.0, 0.0)
    ema = [r for r in rows if r.name == EMA_RANGE]
    optimizer = [r for r in rows if r.name == OPTIMIZER_RANGE]

    def inside(row: Row, ranges: Sequence[Row]) -> bool:
        return any(r.start <= (row.start + row.end) / 2 <= r.end for r in ranges)

    times = dict.fromkeys(CATEGORIES, 0.0)
    for row in work:
        category = "ema" if inside(row, ema) else "optimizer" if inside(row, optimizer) else category_of(row.name)
        times[category] += row.duration
    length = window[1] - window[0]
    times["idle"] = max(0.0, length - union_length(((r.start, r.end) for r in work), window))
    times["window"] = length
    return times


def shares(times: dict[str, float]) -> dict[str, dict[str, float]]:
    """`categorize`'s times as `{category: {"ms", "share"}}` (the share of the step's window), rounded for a report."""
    window = times["window"] or 1.0
    return {c: {"ms": round(times[c] / 1e3, 3), "share": round(times[c] / window, 4)} for c in CATEGORIES}


def profiler_rows(prof: Any, device_type: str) -> list[Row]:
    """The rows of a finished `torch.profiler.profile`, ranges included.

    On `"cuda"` the device's kernels, memcpys and memsets (their own time), on `"cpu"` every operator's self time.
    """
    from torch.autograd import DeviceType

    rows = []
    for event in prof.events():
        start, end = float(event.time_range.start), float(event.time_range.end)
        if event.name in RANGES:
            if event.device_type == DeviceType.CPU:  # the CPU-side range; a GPU-side copy would count it twice
                rows.append(Row(event.name, 0.0, start, end))
        elif getattr(event, "is_user_annotation", False):
            continue
        elif device_type == "cuda" and event.device_type == DeviceType.CUDA:
            rows.append(Row(event.name, end - start, start, end))
        elif device_type != "cuda" and event.device_type == DeviceType.CPU:
            rows.append(Row(event.name, float(event.self_cpu_time_total), start, end))
    return rows
