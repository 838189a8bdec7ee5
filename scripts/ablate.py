"""Ablation of the training optimizations: each alone and stacked, against the plain baseline, on one batch.

Every configuration runs `scripts/bench_train.py` in its own process on the same synthetic batch, the rounds
interleaved; `ablation_<device>.json` (one record per configuration, with speed-up and memory ratios), `.md` and
`.png` go to `--out-dir`:

    python scripts/ablate.py                       # CPU-sized: the mid DiT, 2 threads (what `make bench` runs)
    python scripts/ablate.py --device cuda --preset base --mel-lengths ...   # dit_base on a GPU
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch

from benchmarks import results, runner

HERE = Path(__file__).resolve().parent
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
"""(label, bench_train.py options and overrides); the baseline is fp32, eager, no activation checkpointing."""


def median_record(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the median step time, every round's step time added as `step_s_rounds`."""
    return runner.median_record(runs, "step_s")


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


def main(argv: list[str] | None = None) -> int:
    """Run the ablation and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--preset", default="mid")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per run (compilation happens here)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of every configuration, interleaved")
    parser.add_argument("--mel-lengths", default="300,340,370,400")
    parser.add_argument("--text-lengths", default="72,80,85,90")
    parser.add_argument("--out-dir", type=Path, default=HERE / "results", help="where the results go")
    parser.add_argument("--only", default="", help="comma-separated labels to run (default: all)")
    parser.add_argument("--note", default="", help="free text for the results table (e.g. the machine's load)")
    args = parser.parse_args(argv)
    wanted = {w.strip() for w in args.only.split(",") if w.strip()}
    chosen = [(label, options) for label, options in CONFIGS if not wanted or label in wanted]
    if args.rounds < 1 or args.steps < 1 or args.warmup < 0 or not chosen:
        parser.error("--rounds and --steps must be at least 1, --warmup at least 0, and --only must name a "
                     "configuration")  # fmt: skip
    common = [sys.executable, str(HERE / "bench_train.py"), "--device", args.device, "--preset", args.preset]
    common += ["--threads", str(args.threads), "--steps", str(args.steps), "--warmup", str(args.warmup)]
    common += ["--mel-lengths", args.mel_lengths, "--text-lengths", args.text_lengths]
    configs = [runner.Config(label, [*common, "--label", label, *options]) for label, options in chosen]
    runs = runner.run_interleaved(configs, args.rounds, check=False,
                                  on_run=lambda run: print(json.dumps(run.record(label=run.config)), flush=True))  # fmt: skip
    records: list[dict[str, Any]] = [median_record([r.record(label=label) for r in runs if r.config == label])
                                     for label, _ in chosen]  # fmt: skip
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


if __name__ == "__main__":
    sys.exit(main())
