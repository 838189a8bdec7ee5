"""Ablation of the training optimizations: each alone and stacked, against the plain baseline, on one batch.

Every configuration runs `scripts/bench_train.py` in its own process (so that peak RSS and compiled code do not
leak between them) on the same synthetic batch, and the results go to `scripts/results/`:

    ablation_<device>.json   one record per configuration (the bench's JSON, plus speed-up and memory ratios)
    ablation_<device>.md     a table, with the machine it was measured on
    ablation_<device>.png    speed and memory chart (matplotlib)

    python scripts/ablate.py                       # CPU-sized: the mid DiT, 2 threads (what `make bench` runs)
    python scripts/ablate.py --device cuda --preset base --mel-lengths ...   # dit_base on a GPU
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from f5lite.bench import sidebyside as sbs

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

# (label, bench_train.py options and overrides). The baseline is fp32, eager, no activation checkpointing.
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


def config(label: str, options: list[str], common: list[str]) -> sbs.Config:
    """One configuration: `bench_train.py` with the common options, its label and its own options."""
    return sbs.Config(label, [sys.executable, str(HERE / "bench_train.py"), *common, "--label", label, *options])


def median_record(runs: list[dict[str, object]]) -> dict[str, object]:
    """The run with the median step time, with every round's step time added as `step_s_rounds`.

    A VM's speed drifts by 10-25 % from one minute to the next, so every round runs all configurations in turn and
    each configuration keeps its median round: slow minutes then hit all configurations alike.
    """
    return sbs.median_record(runs, "step_s")


def write_results(records: list[dict[str, object]], device: str, note: str, out_dir: Path = RESULTS) -> None:
    """JSON, markdown table and PNG chart under `out_dir` (default `scripts/results/`); every record carries the
    machine, the versions and the date (`machine`)."""
    header = sbs.run_header()
    for record in records:
        record["machine"] = sbs.flat_header(header)
    base = next((r for r in records if r["label"] == "baseline fp32" and "error" not in r), None)
    for record in records:
        if base is not None and "error" not in record:
            record["speedup"] = float(record["frames_per_s"]) / float(base["frames_per_s"])  # type: ignore[arg-type]
            record["saved_bytes_ratio"] = float(record["saved_for_backward_bytes"]) / float(  # type: ignore[arg-type]
                base["saved_for_backward_bytes"]  # type: ignore[arg-type]
            )
    lines = [
        f"# Training ablation ({device})",
        "",
        f"Machine: {sbs.describe(header)}. {note}",
        "",
        "| configuration | step (s) | frames/s | speed-up | peak memory (GB) | saved for backward (MB) | ratio | MFU |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['label']} | failed: {r['error']} | | | | | | |")
            continue
        extra = f" (save stall {float(r['ckpt_stall_s']):.3f} s)" if "ckpt_stall_s" in r else ""  # type: ignore[arg-type]
        lines.append(
            f"| {r['label']}{extra} | {float(r['step_s']):.3f} | {float(r['frames_per_s']):.0f} | "  # type: ignore[arg-type]
            f"{float(r.get('speedup', 1.0)):.2f}x | {int(r['peak_memory_bytes']) / 1e9:.2f} | "  # type: ignore[arg-type, call-overload]
            f"{int(r['saved_for_backward_bytes']) / 1e6:.0f} | {float(r.get('saved_bytes_ratio', 1.0)):.2f} | "  # type: ignore[arg-type, call-overload]
            f"{float(r['mfu']) * 100:.1f}% |"  # type: ignore[arg-type]
        )
    stalls = {r.get("ckpt"): float(r["ckpt_stall_s"]) for r in records if "ckpt_stall_s" in r}  # type: ignore[arg-type]
    if {"sync", "async"} <= stalls.keys():
        lines += ["", f"Checkpoint stall: async {stalls['async']:.3f} s per save, sync {stalls['sync']:.3f} s "
                  f"({stalls['async'] / stalls['sync']:.0%} of a synchronous save)."]  # fmt: skip
    sbs.write_results(out_dir / f"ablation_{device}.json", records, "\n".join(lines) + "\n")
    plot(records, out_dir / f"ablation_{device}.png", device)


def plot(records: list[dict[str, object]], path: Path, device: str) -> None:
    """Horizontal bars: frames/s and peak memory per configuration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in records if "error" not in r]
    labels = [str(r["label"]) for r in ok]
    fig, (speed, memory) = plt.subplots(1, 2, figsize=(12, 0.45 * len(ok) + 1.5), sharey=True)
    speed.barh(labels, [float(r["frames_per_s"]) for r in ok])  # type: ignore[arg-type]
    speed.set_xlabel("real frames / s")
    memory.barh(labels, [int(r["peak_memory_bytes"]) / 1e9 for r in ok], color="tab:orange")  # type: ignore[call-overload]
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
    parser.add_argument("--out-dir", type=Path, default=RESULTS, help="where the results go (default scripts/results)")
    parser.add_argument("--only", default="", help="comma-separated labels to run (default: all)")
    parser.add_argument("--note", default="", help="free text for the results table (e.g. the machine's load)")
    args = parser.parse_args(argv)
    common = ["--device", args.device, "--preset", args.preset, "--threads", str(args.threads), "--steps",
              str(args.steps), "--warmup", str(args.warmup), "--mel-lengths", args.mel_lengths, "--text-lengths", args.text_lengths]  # fmt: skip
    wanted = {w.strip() for w in args.only.split(",") if w.strip()}
    chosen = [(label, options) for label, options in CONFIGS if not wanted or label in wanted]
    if args.rounds < 1 or args.steps < 1 or args.warmup < 0 or not chosen:
        parser.error(
            "--rounds and --steps must be at least 1, --warmup at least 0, and --only must name a configuration"
        )

    def show(run: sbs.Run) -> None:
        print(json.dumps(run.record(label=run.config)), flush=True)

    configs = [config(label, options, common) for label, options in chosen]
    runs = sbs.run_interleaved(configs, args.rounds, check=False, on_run=show)
    records = [median_record([r.record(label=label) for r in runs if r.config == label]) for label, _ in chosen]
    note = args.note or (
        f"Preset {args.preset}, mel lengths {args.mel_lengths}, text lengths {args.text_lengths}, {args.threads} threads, "
        f"median of {args.steps} steps after {args.warmup} warm-up, median of {args.rounds} interleaved round(s)."
    )
    write_results(records, args.device, note, args.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
