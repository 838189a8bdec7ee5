"""Where one training step's time goes: torch.profiler rows sorted into a few categories, as a pure function.

`categorize` takes plain rows `(name, duration, start, end)` (microseconds, one clock) and returns the time of each
category; `profiler_rows` turns a finished `torch.profiler.profile` into such rows. The split is the one the
benchmarks report (`scripts/compare_f5tts_train.py --profile`):

- **matmul**: GEMMs (cuBLAS/cuBLASLt `gemm`/`nvjet`/`xmma`/CUTLASS kernels, inductor's mm templates; on a CPU
  `aten::mm`, `addmm`, `bmm`, `_scaled_mm` ...).
- **attention**: flash / memory-efficient / cuDNN / flex attention kernels, forward and backward.
- **convolution**: the convolutions (conv position embedding, ConvNeXt), cuDNN's implicit-GEMM included.
- **elementwise**: elementwise work, norms, modulation, reductions, dropout, the loss, and inductor's fused
  (`triton_poi`/`triton_per`/`triton_red`, C++ on a CPU) kernels.
- **optimizer**: everything inside the step's optimizer range (`OPTIMIZER_RANGE`: gradient clipping, AdamW, the
  learning rate), and fused Adam kernels wherever they run.
- **ema**: everything inside the EMA range (`EMA_RANGE`).
- **copies**: memcpy, memset, fills and dtype casts (`copy_`, `_to_copy`).
- **other**: what no rule names (listed by the top-operator table beside it).
- **idle**: the step's window (`STEP_RANGE`) minus the union of the intervals of all other rows. On a GPU the rows
  are the device's kernels, memcpys and memsets, so idle is the time the GPU runs nothing (launch gaps, host work,
  synchronizations). On a CPU the rows are the CPU operators (their *self* times, so nesting is not counted twice),
  so idle is the time inside no traced operator: Python, dispatch and the trainer's own bookkeeping.

The ranges (`record_function` names) are rows too; they are not counted themselves, they only attribute the rows
whose midpoint falls inside them. Categories are counted in the order `ema`, `optimizer` (by range), then by name.
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
    (
        "elementwise",
        (
            "elementwise",
            "norm",
            "reduce",
            "softmax",
            "dropout",
            "bernoulli",
            "silu",
            "gelu",
            "mul",
            "add",
            "sub",
            "div",
            "exp",
            "tanh",
            "sin",
            "cos",
            "pow",
            "sqrt",
            "sum",
            "mean",
            "where",
            "cat",
            "index",
            "embedding",
            "gather",
            "scatter",
            "mse",
            "loss",
            "neg",
            "clamp",
            "masked",
            "rand",
            "lerp",
            "foreach",
            "chunk",
            "pad",
        ),
    ),
)


class Row(NamedTuple):
    """One profiler row: a kernel or an operator (its own time), or a range (only its interval counts).

    Attributes:
        name: Kernel or operator name, or one of `RANGES`.
        duration: Its time in microseconds (a CPU operator's self time).
        start: Start in microseconds, on the same clock as every other row.
        end: End in microseconds.
    """

    name: str
    duration: float
    start: float
    end: float


def category_of(name: str) -> str:
    """The category of a kernel or operator by its name alone (`RULES`); `other` when no rule names it.

    Args:
        name: e.g. `"flash_fwd_kernel<...>"`, `"aten::addmm"`, `"Memcpy DtoD (Device -> Device)"`.

    Returns:
        One of `CATEGORIES` but `ema` and `idle`.
    """
    lowered = name.lower()
    for category, keys in RULES:
        if any(key in lowered for key in keys):
            return category
    return "other"


def union_length(intervals: Iterable[tuple[float, float]], window: tuple[float, float]) -> float:
    """The length of the union of `intervals` clipped to `window` (overlaps counted once).

    Args:
        intervals: `(start, end)` pairs.
        window: `(start, end)` outside which nothing counts.

    Returns:
        Microseconds covered.
    """
    lo, hi = window
    clipped = sorted((max(s, lo), min(e, hi)) for s, e in intervals if min(e, hi) > max(s, lo))
    covered, reach = 0.0, lo
    for s, e in clipped:
        if e > reach:
            covered += e - max(s, reach)
            reach = e
    return covered


def _inside(row: Row, ranges: Sequence[Row]) -> bool:
    middle = (row.start + row.end) / 2
    return any(r.start <= middle <= r.end for r in ranges)


def categorize(rows: Sequence[Row]) -> dict[str, float]:
    """The time of each category in one profiled step.

    Args:
        rows: Kernels or operators and the `RANGES` rows (see `Row`). The window is the `STEP_RANGE` row's interval,
            or, without one, the span of all rows.

    Returns:
        `{category: microseconds}` for every one of `CATEGORIES`, plus `"window"`: the step's length. Each work row
        counts its `duration` in one category; `idle` is the window minus the union of the work rows' intervals.
    """
    work = [r for r in rows if r.name not in RANGES]
    steps = [r for r in rows if r.name == STEP_RANGE]
    if steps:
        window = (min(r.start for r in steps), max(r.end for r in steps))
    elif work:
        window = (min(r.start for r in work), max(r.end for r in work))
    else:
        window = (0.0, 0.0)
    ema = [r for r in rows if r.name == EMA_RANGE]
    optimizer = [r for r in rows if r.name == OPTIMIZER_RANGE]
    times = dict.fromkeys(CATEGORIES, 0.0)
    for row in work:
        if _inside(row, ema):
            category = "ema"
        elif _inside(row, optimizer):
            category = "optimizer"
        else:
            category = category_of(row.name)
        times[category] += row.duration
    length = window[1] - window[0]
    times["idle"] = max(0.0, length - union_length(((r.start, r.end) for r in work), window))
    times["window"] = length
    return times


def shares(times: dict[str, float]) -> dict[str, dict[str, float]]:
    """`categorize`'s times as `{category: {"ms", "share"}}`, the share of the step's window (rounded for a report).

    Args:
        times: What `categorize` returned.

    Returns:
        Every one of `CATEGORIES`, in that order.
    """
    window = times["window"] or 1.0
    return {c: {"ms": round(times[c] / 1e3, 3), "share": round(times[c] / window, 4)} for c in CATEGORIES}


def profiler_rows(prof: Any, device_type: str) -> list[Row]:
    """The rows of a finished `torch.profiler.profile` for `categorize`.

    Args:
        prof: The profiler, after its `with` block.
        device_type: `"cuda"`: the device's kernels, memcpys and memsets (their own time) and the CPU-side ranges;
            `"cpu"`: every CPU operator with its self time.

    Returns:
        Rows on the profiler's clock, ranges included.
    """
    from torch.autograd import DeviceType

    rows = []
    for event in prof.events():
        start, end = float(event.time_range.start), float(event.time_range.end)
        if event.name in RANGES:
            if event.device_type == DeviceType.CPU:  # the CPU-side range; a GPU-side copy would count it twice
                rows.append(Row(event.name, 0.0, start, end))
            continue
        if device_type == "cuda":
            if event.device_type == DeviceType.CUDA and not getattr(event, "is_user_annotation", False):
                rows.append(Row(event.name, end - start, start, end))
        elif event.device_type == DeviceType.CPU and not getattr(event, "is_user_annotation", False):
            rows.append(Row(event.name, float(event.self_cpu_time_total), start, end))
    return rows
