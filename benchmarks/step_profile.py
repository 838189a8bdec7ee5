"""Where one training step's time goes: torch.profiler rows sorted into a few categories, as a pure function.

`categorize` takes rows `(name, duration, start, end)` (microseconds, one clock) and returns each category's time
(`CATEGORIES`, by name: `RULES`); the `OPTIMIZER_RANGE` and `EMA_RANGE` ranges count nothing themselves but attribute
the rows whose midpoint falls inside them, and idle is the step's window (`STEP_RANGE`) minus the union of the rows'
intervals. On a GPU the rows are the device's kernels (idle: it runs nothing); on a CPU the operators' self times
(idle: inside no operator, Python and dispatch). `profiler_rows` makes the rows from a finished profile, `profile`
profiles one step and `markdown` reports it (`scripts/bench_train.py --profile`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

STEP_RANGE = "bench: step"  # `record_function` names: around the whole profiled step (its window),
OPTIMIZER_RANGE = "bench: optimizer"  # around clipping, the optimizer step, the LR update and zero_grad,
EMA_RANGE = "bench: ema"  # and around the EMA update
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


COMPILED_GRAPHS = "inductor-generated code (compiled graphs)"  # all of them as one top operator (each has a hash)
PROFILED = (
    "torch.profiler, one step after the timed ones (`benchmarks.step_profile`): a GPU's kernels (idle: none runs) or a "
    "CPU's operators' self times (idle: inside none, Python and dispatch), as shares of the step."
)


def profile(step: Callable[[], object], device: Any, top: int) -> dict[str, Any]:
    """Where the time of `step()` (a training step marking its ranges) goes on `device`.

    Returns:
        `{"basis", "step_ms", "categories": shares(...), "ranges": {"optimizer", "ema"} (how many were marked), "ops":
        [{"op", "ms", "share", "calls"}]}`: the `top` operators by self time (device time on a GPU).
    """
    import torch
    from torch.profiler import ProfilerActivity, record_function

    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)  # the window starts with an idle device: nothing of the last step runs on
    activities = [ProfilerActivity.CPU, *[ProfilerActivity.CUDA] * cuda]
    with torch.profiler.profile(activities=activities) as prof, record_function(STEP_RANGE):
        step()  # reading the loss waits for the device: the window ends after its last kernel
    rows = profiler_rows(prof, device.type)
    times, names = categorize(rows), [r.name for r in rows]
    attr = "self_device_time_total" if cuda else "self_cpu_time_total"
    ops: dict[str, list[float]] = {}  # name -> [microseconds, calls]
    for row in prof.key_averages():
        if row.key not in RANGES:
            name = COMPILED_GRAPHS if row.key.startswith("## Call CompiledFxGraph") else row.key
            us, calls = ops.get(name, [0.0, 0])
            ops[name] = [us + getattr(row, attr), calls + row.count]
    window = times["window"] or 1.0
    ranked = sorted(((name, us, calls) for name, (us, calls) in ops.items() if us > 0), key=lambda r: -r[1])[:top]
    return {
        "basis": "GPU kernels" if cuda else "CPU operators (self time)",
        "step_ms": round(window / 1e3, 3),
        "categories": shares(times),
        "ranges": {"optimizer": names.count(OPTIMIZER_RANGE), "ema": names.count(EMA_RANGE)},
        "ops": [{"op": n, "ms": round(us / 1e3, 2), "share": round(us / window, 4), "calls": c} for n, us, c in ranked],
    }


def markdown(profiles: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Markdown lines: each profiled configuration's step in categories, then its top operators."""
    from benchmarks.results import table

    lines = [] if not profiles else ["", "## Where one step's time goes", "", PROFILED]
    for label, prof in profiles.items():
        lines += ["", f"### {label}", "", f"Profiled step: {prof['step_ms']:.1f} ms ({prof['basis']}).", ""]
        cells = [[k, f"{c['ms']:.2f}", f"{c['share']:.1%}"] for k, c in prof["categories"].items()]
        lines += table(["where", "ms", "share"], cells, " rr")
        rows = [[f"`{op['op'][:70]}`", f"{op['ms']:.2f}", f"{op['share']:.1%}", op["calls"]] for op in prof["ops"]]
        lines += ["", *table(["top operator", "ms", "share", "calls"], rows, " rrr")] if rows else []
    return lines
