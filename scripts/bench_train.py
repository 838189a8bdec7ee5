"""Training-step benchmark on a fixed synthetic batch: step time, real frames/s, peak memory, phase split, MFU.

    python scripts/bench_train.py --preset mid --mel-lengths 300,340,370,400 --text-lengths 72,80,85,90 \
        perf.precision=no perf.ac.mode=full
    python scripts/bench_train.py --ablate --threads 2     # the ablation, CPU-sized (what `make bench` runs)
    python scripts/bench_train.py --ablate --device cuda --preset base --mel-lengths ...   # dit_base on a GPU

The model and every optimization come from a recipe plus `key=value` overrides, through the trainer's own set-up
(`build_model`, `make_optimizer`, `CFM`). One JSON line is printed. Peak memory is CUDA's max allocated, or the
process's peak RSS on a CPU (one configuration per process). MFU divides the analytic model FLOPs (`benchmarks.flops`)
by the GPU's dense bf16 peak, or on a CPU by a measured GEMM rate.

`--ablate` runs the training optimizations (`CONFIGS`), each alone and stacked, against the plain baseline: every
configuration in its own process of this script on the same batch, the rounds interleaved; `ablation_<device>.json`
(one record per configuration, with speed-up and memory ratios), `.md` and `.png` go to `--out-dir`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks import results, runner
from benchmarks.flops import model_flops_utilization, table_peak_flops, training_flops
from benchmarks.models import DITS, F5TTS_VOCAB_SIZE, synthetic_batch
from f5lite.config import compose_config
from f5lite.models.cfm import CFM
from f5lite.storage.store import CheckpointStore
from f5lite.storage.tree import flatten
from f5lite.train.precision import choose_precision
from f5lite.train.setup import build_model, make_optimizer

PRESETS = {name: [f"model.{k}={v}" for k, v in dims.items()] for name, dims in DITS.items()} | {"base": []}
"""Model size over the recipe; `base` is the recipe's own (dit_base: F5-TTS v1 Base)."""
PLAIN = ["perf.precision=no"]
CONFIGS: list[tuple[str, list[str]]] = [
    ("baseline fp32", PLAIN),
    ("bf16 autocast", ["perf.precision=bf16"]),
    ("compile (inductor)", [*PLAIN, "perf.compile=true"]),
    ("AC full every block", [*PLAIN, "perf.ac.mode=full", "perf.ac.every_n=1"]),
    ("AC full every 2nd", [*PLAIN, "perf.ac.mode=full", "perf.ac.every_n=2"]),
    ("AC full every 4th", [*PLAIN, "perf.ac.mode=full", "perf.ac.every_n=4"]),
    ("AC selective", [*PLAIN, "perf.ac.mode=selective"]),
    ("compile + memory budget 0.5", [*PLAIN, "perf.compile=true", "perf.memory_budget=0.5", "model.dropout=0"]),
    ("EMA on CPU", [*PLAIN, "ema.device=cpu"]),
    ("sync checkpoint", [*PLAIN, "--ckpt", "sync"]),
    ("async checkpoint", [*PLAIN, "--ckpt", "async"]),
    ("bf16 + compile", ["perf.precision=bf16", "perf.compile=true"]),
    ("bf16 + compile + AC every 2nd", ["perf.precision=bf16", "perf.compile=true", "perf.ac.mode=full",
                                       "perf.ac.every_n=2"]),
]  # fmt: skip
"""(label, this script's options and overrides); the baseline is fp32, eager, no activation checkpointing."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (unknown `key=value` words are config overrides)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", default="dit_base", help="recipe giving the architecture (default dit_base)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="mid", help="model size over the recipe")
    parser.add_argument("--mel-lengths", type=runner.int_list(1), default=[300, 340, 370, 400])
    parser.add_argument("--text-lengths", type=runner.int_list(1), default=[72, 80, 85, 90])
    parser.add_argument("--steps", type=int, default=5, help="timed steps")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (compilation happens here)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--ckpt", choices=["none", "sync", "async"], default="none", help="also time saves")
    parser.add_argument("--label", default="", help="name of this configuration in the output")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="time the steps by the wall clock, or by this process's CPU time (a CPU shared with "
                             "other work: fair with one thread)")  # fmt: skip
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. perf.compile=true")
    parser.add_argument("--ablate", action="store_true", help="run every configuration of `CONFIGS` (or --only)")
    parser.add_argument("--rounds", type=int, default=1, help="--ablate: runs of every configuration, interleaved")
    parser.add_argument("--only", default="", help="--ablate: comma-separated labels to run (default: all)")
    parser.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent / "results",
                        help="--ablate: where the results go")  # fmt: skip
    parser.add_argument("--note", default="", help="--ablate: free text for the results table (e.g. the load)")
    args = parser.parse_args(argv)
    wanted = {w.strip() for w in args.only.split(",") if w.strip()}
    args.chosen = [(label, options) for label, options in CONFIGS if not wanted or label in wanted]
    if args.rounds < 1 or args.steps < 1 or args.warmup < 0 or not args.chosen:
        parser.error("--rounds and --steps must be at least 1, --warmup at least 0, and --only must name a "
                     "configuration")  # fmt: skip
    if len(args.mel_lengths) != len(args.text_lengths):
        parser.error("--mel-lengths and --text-lengths need the same number of items")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here")
    return args


def measured_peak(device: torch.device, dtype: torch.dtype) -> tuple[float, str]:
    """Peak FLOP/s: the GPU's dense table value, or a measured GEMM rate (up to 2048^2) on a CPU."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        peak = table_peak_flops(name)
        return (peak, f"{name} (table, dense bf16)") if peak else (float("nan"), f"{name} (no peak in the table)")
    # The GEMM grows to 2048^2 unless one already takes 50 ms: a CPU without fast kernels for the dtype (bf16 on an
    # AMD Zen 3 under torch 2.14: 0.3 GFLOP/s) would otherwise spend minutes measuring a figure it reaches early.
    n = 256
    while True:
        a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
        start = time.perf_counter()
        a @ b
        if n >= 2048 or time.perf_counter() - start > 0.05:
            break
        n *= 2
    a @ b
    times = []
    for _ in range(5):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * n**3 / statistics.median(times), f"measured {dtype} GEMM {n}^2"


def run(args: argparse.Namespace) -> dict[str, object]:
    """Build, warm up, time the steps and return the result record."""
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    overrides = [f"+recipe={args.recipe}", *PRESETS[args.preset], *args.overrides]
    cfg = compose_config(overrides)
    setup = build_model(cfg, F5TTS_VOCAB_SIZE, None, device)
    backbone, ema = setup.backbone, setup.ema
    optimizer = make_optimizer(cfg, backbone, device)
    model = CFM(backbone).train()
    mel, text, lens = synthetic_batch(args.mel_lengths, args.text_lengths, device)
    precision = choose_precision(cfg.perf.precision, device).precision  # `auto` as the trainer resolves it
    if precision == "fp16":
        raise SystemExit("bench_train.py: perf.precision=fp16 is not benchmarked (use no or bf16)")
    bf16 = precision == "bf16"
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    def tick() -> float:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return clock()

    def step(i: int) -> list[float]:
        generator = torch.Generator(device=device).manual_seed(i)
        t0 = tick()
        with autocast:
            loss = model(mel, text, lens, generator=generator)
        t1 = tick()
        loss.backward()
        t2 = tick()
        torch.nn.utils.clip_grad_norm_(backbone.parameters(), cfg.optim.max_grad_norm or float("inf"))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        ema.update(backbone)
        t3 = tick()
        return [t1 - t0, t2 - t1, t3 - t2, t3 - t0]

    for i in range(args.warmup):
        step(i)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    records = [step(args.warmup + i) for i in range(args.steps)]
    fwd, bwd, opt, total = (statistics.median(r[k] for r in records) for k in range(4))
    saved: list[int] = []

    def pack(t: torch.Tensor) -> torch.Tensor:  # counts what autograd keeps for the backward pass
        saved.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast:
        model(mel, text, lens, generator=torch.Generator(device=device).manual_seed(0))
    optimizer.zero_grad(set_to_none=True)
    if device.type == "cuda":
        peak_mem = torch.cuda.max_memory_allocated(device)
    else:  # ru_maxrss is in KiB on Linux
        peak_mem = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    flops = training_flops(backbone, args.mel_lengths, args.text_lengths)
    peak, peak_source = measured_peak(device, torch.bfloat16 if bf16 else torch.float32)
    result: dict[str, object] = {
        "label": args.label or " ".join(args.overrides) or "baseline",
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "threads": torch.get_num_threads(), "torch": torch.__version__, "overrides": overrides,
        "mel_lengths": args.mel_lengths, "text_lengths": args.text_lengths,
        "params": sum(p.numel() for p in backbone.parameters()), "clock": args.clock, "step_s": total,
        "forward_s": fwd, "backward_s": bwd, "optimizer_s": opt, "frames_per_s": sum(args.mel_lengths) / total,
        "peak_memory_bytes": peak_mem, "saved_for_backward_bytes": sum(saved), "model_flops_per_step": flops,
        "peak_flops": peak, "peak_source": peak_source, "mfu": model_flops_utilization(flops, total, peak),
    }  # fmt: skip
    if args.ckpt != "none":
        result |= checkpoint_stall(backbone, optimizer, ema.state_dict(), async_save=args.ckpt == "async")
    return result


def checkpoint_stall(
    backbone: torch.nn.Module, optimizer: torch.optim.Optimizer, ema: dict[str, torch.Tensor], async_save: bool
) -> dict[str, object]:
    """How long a save blocks the training loop (median of 3), and how long until it is on disk."""
    stalls, totals = [], []
    with tempfile.TemporaryDirectory() as root:
        store = CheckpointStore(Path(root), keep_last=1, async_save=async_save)
        for i in range(3):
            skeleton, opt_tensors = flatten(optimizer.state_dict(), prefix="optimizer")
            start = time.perf_counter()
            store.save(i + 1, {"model": backbone.state_dict(), "ema": ema, "optimizer": opt_tensors}, {"o": skeleton})
            stalls.append(time.perf_counter() - start)
            store.wait()
            totals.append(time.perf_counter() - start)
        store.close()
    return {"ckpt": "async" if async_save else "sync", "ckpt_stall_s": statistics.median(stalls),
            "ckpt_write_s": statistics.median(totals)}  # fmt: skip


def markdown(records: list[dict], device: str, note: str) -> str:
    """The table, with the machine it was measured on and the checkpoint stalls."""
    rows = []
    for r in records:
        if "error" in r:
            rows.append([r["label"], f"failed: {r['error']}", *[""] * 6])
            continue
        stall = f" (save stall {r['ckpt_stall_s']:.3f} s)" if "ckpt_stall_s" in r else ""
        rows.append([f"{r['label']}{stall}", f"{r['step_s']:.3f}", f"{r['frames_per_s']:.0f}",
                     f"{r.get('speedup', 1.0):.2f}x", f"{r['peak_memory_bytes'] / 1e9:.2f}",
                     f"{r['saved_for_backward_bytes'] / 1e6:.0f}", f"{r.get('saved_bytes_ratio', 1.0):.2f}",
                     f"{r['mfu'] * 100:.1f}%"])  # fmt: skip
    head = ["configuration", "step (s)", "frames/s", "speed-up", "peak memory (GB)", "saved for backward (MB)"]
    lines = [f"# Training ablation ({device})", "", f"Machine: {results.describe(records[0]['machine'])}. {note}", ""]
    lines += results.table([*head, "ratio", "MFU"], rows)
    stalls = {r.get("ckpt"): r["ckpt_stall_s"] for r in records if "ckpt_stall_s" in r}
    if {"sync", "async"} <= stalls.keys():
        lines += ["", f"Checkpoint stall: async {stalls['async']:.3f} s per save, sync {stalls['sync']:.3f} s "
                  f"({stalls['async'] / stalls['sync']:.0%} of a synchronous save)."]  # fmt: skip
    return "\n".join(lines) + "\n"


def plot(records: list[dict], device: str, path: Path) -> None:
    """Horizontal bars: frames/s and peak memory per configuration."""
    plt = results.pyplot()
    ok = [r for r in records if "error" not in r]
    labels = [str(r["label"]) for r in ok]
    fig, (speed, memory) = plt.subplots(1, 2, figsize=(12, 0.45 * len(ok) + 1.5), sharey=True)
    speed.barh(labels, [r["frames_per_s"] for r in ok])
    speed.set_xlabel("real frames / s")
    memory.barh(labels, [r["peak_memory_bytes"] / 1e9 for r in ok], color="tab:orange")
    memory.set_xlabel("peak memory (GB)")
    speed.invert_yaxis()
    fig.suptitle(f"f5lite training ablation ({device})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def ablate(args: argparse.Namespace) -> int:
    """Run the ablation (each configuration in its own process of this script) and write the results."""
    common = [sys.executable, str(Path(__file__).resolve()), "--device", args.device, "--preset", args.preset]
    common += ["--steps", str(args.steps), "--warmup", str(args.warmup), "--threads", str(args.threads or 0)]
    common += ["--mel-lengths", ",".join(map(str, args.mel_lengths))]
    common += ["--text-lengths", ",".join(map(str, args.text_lengths))]
    configs = [runner.Config(label, [*common, "--label", label, *options]) for label, options in args.chosen]
    runs = runner.run_interleaved(configs, args.rounds, check=False,
                                  on_run=lambda run: print(json.dumps(run.record(label=run.config)), flush=True))  # fmt: skip
    records: list[dict[str, Any]] = [runner.median_record([r.record(label=label) for r in runs if r.config == label],
                                                          "step_s") for label, _ in args.chosen]  # fmt: skip
    machine = results.flat_header(results.run_header())
    base = next((r for r in records if r["label"] == "baseline fp32" and "error" not in r), None)
    for record in records:
        record["machine"] = machine
        if base is not None and "error" not in record:
            record["speedup"] = record["frames_per_s"] / base["frames_per_s"]
            record["saved_bytes_ratio"] = record["saved_for_backward_bytes"] / base["saved_for_backward_bytes"]
    note = args.note or (
        f"Preset {args.preset}, mel lengths {args.mel_lengths}, text lengths {args.text_lengths}, {args.threads} "
        f"threads, median of {args.steps} steps after {args.warmup} warm-up, median of {args.rounds} interleaved "
        "round(s)."
    )
    results.write_results(args.out_dir / f"ablation_{args.device}.json", records, markdown(records, args.device, note),
                          plot=lambda path: plot(records, args.device, path))  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one configuration and print its JSON line (with `--ablate`: the ablation, its results written)."""
    args = parse_args(argv)
    if args.ablate:
        return ablate(args)
    try:
        result = run(args)
    except ValueError as err:
        print(f"bench_train.py: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
