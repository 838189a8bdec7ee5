"""What training the duration predictor alongside costs: seconds per update of the flow model with and without it.

`duration=small` trains the predictor on the very batches the flow model trains on, with one more forward, backward
and optimizer step per update (`f5lite.train.duration.DurationTraining`). This measures that cost on a recipe
(`demo` by default: the DiT of 4 blocks x 128 on the shipped demo data, fp32 on the CPU):

    python scripts/bench_duration.py --repeats 5 --updates 20            # minutes on 2 cores
    python scripts/bench_duration.py --recipe debug_tiny --repeats 1 --updates 2 --out /tmp/d.json   # seconds

Each measurement is a fresh process (no shared caches, allocator or threads) that builds the run's own `Trainer`
(`compose_config(["+recipe=RECIPE", "duration=VARIANT", *OVERRIDES])`, its run directory in a temporary one),
pre-fetches `--warmup + --updates` update groups from the trainer's own loader (the same batches for both variants:
the sampler is seeded by `seed`), runs `--warmup` untimed updates and times `--updates` calls of
`Trainer.train_update`, the whole update (flow forward/backward, clip, optimizer, EMA, and with `duration=small`
the predictor's forward/backward/step). Loading data, logging and checkpoints are left out, so the ratio is an upper
bound of what a real run pays. The variants alternate (none, small, none, small, ...) over `--repeats` rounds, as a
VM's speed drifts; reported per variant is the median over rounds of the mean seconds per update, the ratio of the
medians, and the median of each round's own ratio (its two runs were next to each other in time). The `small` runs
also time the predictor's part alone (`DurationTraining.backward` on each micro-batch, then `step`, on the same
groups) right after, in the same process: its share of the update does not suffer from the drift between processes.
The JSON goes to `--out` (default build/bench/duration.json) and a short table is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from f5lite.bench import sidebyside as sbs

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / "build" / "bench" / "duration.json"
VARIANTS = ("none", "small")
"""The `duration` config groups compared: without a predictor (the baseline), and with one trained alongside."""


# ------------------------------------------------------------------------------------------------ the child


def measure(
    variant: str, recipe: str, overrides: list[str], *, updates: int, warmup: int, threads: int | None
) -> dict[str, object]:
    """Build the run's `Trainer` with `duration=VARIANT`, warm up, time `updates` updates on pre-fetched batches.

    Run it in a fresh process. Returns the record: seconds of each timed update, their mean, the parameter counts.
    """
    import torch

    from f5lite.config import compose_config
    from f5lite.train.trainer import Trainer

    if threads:
        torch.set_num_threads(threads)
    load = os.getloadavg()[0]  # other work on the machine: the timings are only as good as it is idle
    with tempfile.TemporaryDirectory(prefix="f5lite_bench_duration_") as tmp:
        config = [f"+recipe={recipe}", f"duration={variant}", *overrides, f"run_dir={Path(tmp) / 'run'}"]
        trainer = Trainer(compose_config(config))
        try:
            # The trainer's own grouping of batches into updates (`optim.grad_accum`), across epochs, as `fit` does.
            groups = trainer._micro_batches()
            batches = [[b.to(trainer.device) for b in next(groups)] for _ in range(warmup + updates)]
        finally:
            trainer.data.close_workers()

        def sync() -> None:
            if trainer.device.type == "cuda":
                torch.cuda.synchronize(trainer.device)

        for group in batches[:warmup]:
            trainer.train_update(group)
        sync()
        times = []
        for group in batches[warmup:]:
            start = time.perf_counter()
            trainer.train_update(group)
            sync()
            times.append(time.perf_counter() - start)
        loss = float(trainer.train_update(batches[-1]))  # one more, read back: the updates really ran
        own: dict[str, object] = {}
        if trainer.duration is not None:
            # The predictor's share alone, timed in this process right after (no drift between processes): what
            # `forward_backward` and `optimizer_step` add for it on the same update groups.
            duration, own_times = trainer.duration, []
            for group in batches[warmup:]:
                start = time.perf_counter()
                for batch in group:
                    duration.backward(batch, 1.0 / len(group))
                duration.step()
                sync()
                own_times.append(time.perf_counter() - start)
            own = {
                "predictor_s_per_update": sum(own_times) / len(own_times),
                "predictor_update_s": [round(t, 5) for t in own_times],
            }
        predictor = trainer.duration.predictor if trainer.duration is not None else None
        return {
            "variant": variant,
            "device": str(trainer.device),
            "threads": torch.get_num_threads(),
            "load_before": load,
            "updates": updates,
            "warmup": warmup,
            "frames": sum(int(b.mel_lengths.sum()) for group in batches[warmup:] for b in group),
            "s_per_update": sum(times) / len(times),
            "update_s": [round(t, 5) for t in times],
            "flow_params": sum(p.numel() for p in trainer.backbone.parameters()),
            "predictor_params": sum(p.numel() for p in predictor.parameters()) if predictor is not None else 0,
            "final_loss": loss,
            **own,
        }


# ----------------------------------------------------------------------------------------------- the parent


def config(variant: str, args: argparse.Namespace) -> sbs.Config:
    """One configuration: this script's `--child` mode measuring `duration=VARIANT`."""
    spec = {
        "variant": variant,
        "recipe": args.recipe,
        "overrides": args.overrides,
        "updates": args.updates,
        "warmup": args.warmup,
        "threads": args.threads,
    }
    return sbs.Config(variant, [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)])


def summarize(runs: list[dict[str, object]]) -> dict[str, object]:
    """Per variant the median over rounds of s/update; the ratio of the medians and the median per-round ratio.

    `runs` are in the order they ran: round after round, each round every variant of `VARIANTS` in order.
    """
    per: dict[str, list[float]] = {v: [] for v in VARIANTS}
    paired: list[float] = []
    own = [r for r in runs if "predictor_s_per_update" in r and "error" not in r]
    own_s = [float(r["predictor_s_per_update"]) for r in own]  # type: ignore[arg-type]
    shares = [float(r["predictor_s_per_update"]) / float(r["s_per_update"]) for r in own]  # type: ignore[arg-type]
    for start in range(0, len(runs), len(VARIANTS)):
        rnd = runs[start : start + len(VARIANTS)]
        ok = {str(r["variant"]): float(r["s_per_update"]) for r in rnd if "error" not in r}  # type: ignore[arg-type]
        for variant, value in ok.items():
            per[variant].append(value)
        if len(ok) == len(VARIANTS):
            paired.append(ok[VARIANTS[1]] / ok[VARIANTS[0]])
    variants = {
        v: {"s_per_update": statistics.median(vals), "rounds": [round(x, 5) for x in vals]} if vals else None
        for v, vals in per.items()
    }
    base, other = (variants[v] for v in VARIANTS)
    ratio = None
    if base is not None and other is not None:
        ratio = float(other["s_per_update"]) / float(base["s_per_update"])  # type: ignore[arg-type]
    params = next((r for r in runs if r.get("variant") == VARIANTS[1] and "error" not in r), None)
    return {
        "variants": variants,
        "ratio": ratio,
        "overhead_pct": None if ratio is None else 100 * (ratio - 1),
        "paired_ratio_median": statistics.median(paired) if paired else None,
        "paired_ratios": [round(x, 4) for x in paired],
        "predictor_s_per_update": statistics.median(own_s) if own_s else None,
        "predictor_share_median": statistics.median(shares) if shares else None,
        "predictor_shares": [round(x, 4) for x in shares],
        "params": None
        if params is None
        else {
            "flow": params["flow_params"],
            "predictor": params["predictor_params"],
            "ratio": int(params["predictor_params"]) / int(params["flow_params"]),  # type: ignore[call-overload]
        },
    }


def table(result: dict[str, object]) -> str:
    """A short plain-text report of `summarize`'s figures."""
    summary: dict[str, object] = result["summary"]  # type: ignore[assignment]
    variants: dict[str, dict[str, object] | None] = summary["variants"]  # type: ignore[assignment]
    settings: dict[str, object] = result["settings"]  # type: ignore[assignment]
    lines = [
        f"recipe {settings['recipe']} {' '.join(settings['overrides'])}".rstrip()  # type: ignore[arg-type]
        + f"; {settings['updates']} timed updates after {settings['warmup']}, {settings['repeats']} interleaved rounds",
        f"{'duration':<10} {'median s/update':>16}  rounds",
    ]
    for name, v in variants.items():
        if v is None:
            lines.append(f"{name:<10} {'failed':>16}")
        else:
            rounds = " ".join(f"{x:.4f}" for x in v["rounds"])  # type: ignore[attr-defined]
            lines.append(f"{name:<10} {float(v['s_per_update']):>16.4f}  {rounds}")  # type: ignore[arg-type]
    if summary["ratio"] is not None:
        lines.append(
            f"ratio {VARIANTS[1]}/{VARIANTS[0]}: {summary['ratio']:.3f} ({summary['overhead_pct']:+.1f} %); "
            f"median of the per-round ratios: {summary['paired_ratio_median']:.3f}"
        )
    share = summary["predictor_share_median"]
    if share is not None:
        lines.append(
            f"the predictor's own forward/backward/step, timed in the same process: "
            f"{summary['predictor_s_per_update']:.4f} s/update, median {100 * float(share):.1f} % "  # type: ignore[arg-type]
            "of the update with it"
        )
    params: dict[str, object] | None = summary["params"]  # type: ignore[assignment]
    if params is not None:
        lines.append(
            f"parameters: flow model {int(params['flow']):,}, predictor {int(params['predictor']):,} "  # type: ignore[call-overload]
            f"({100 * float(params['ratio']):.1f} % of the flow model)"  # type: ignore[arg-type]
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (unknown `key=value` words are config overrides for both variants)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--recipe", default="demo", help="recipe both variants train (default demo)")
    add("--repeats", type=int, default=3, help="rounds; each runs every variant once, in turn (default 3)")
    add("--updates", type=int, default=20, help="timed updates per run (default 20)")
    add("--warmup", type=int, default=3, help="untimed updates first (default 3)")
    add("--threads", type=int, default=None, help="torch CPU threads (default torch's)")
    add("--timeout", type=float, default=900, help="seconds one run may take (default 900)")
    add("--out", type=Path, default=DEFAULT_OUT, help="the JSON result (default build/bench/duration.json)")
    add("--note", default="", help="free text kept in the result")
    add("overrides", nargs="*", help="config overrides for both variants, e.g. data.frames_per_gpu=4000")
    args = parser.parse_args(argv)
    if min(args.repeats, args.updates) < 1 or args.warmup < 0 or (args.threads is not None and args.threads < 1):
        parser.error("--repeats and --updates must be at least 1, --warmup at least 0, --threads at least 1")
    if any(o.split("=", 1)[0].lstrip("+~").split(".")[0] in ("duration", "run_dir") for o in args.overrides):
        parser.error("the overrides may not set duration or run_dir: the benchmark sets them")
    return args


def run(args: argparse.Namespace) -> dict[str, object]:
    """Run every variant in every round, interleaved, and return the whole result."""

    def show(run: sbs.Run) -> None:
        brief = {k: v for k, v in run.record(variant=run.config).items() if not k.endswith("update_s")}
        print(json.dumps(brief), file=sys.stderr, flush=True)

    configs = [config(variant, args) for variant in VARIANTS]
    done = sbs.run_interleaved(configs, args.repeats, check=False, timeout=args.timeout, on_run=show)
    runs = [run.record(variant=run.config) for run in done]
    return {
        "machine": sbs.flat_header(sbs.run_header()),
        "settings": {
            "recipe": args.recipe,
            "overrides": args.overrides,
            "variants": [f"duration={v}" for v in VARIANTS],
            "repeats": args.repeats,
            "updates": args.updates,
            "warmup": args.warmup,
            "threads": args.threads,
        },
        "summary": summarize(runs),
        "runs": runs,
        "note": args.note,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure, write `--out`, print the table (or, with `--child SPEC`, run one measurement)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:  # one measurement in this fresh process: `--child '{"variant": ..., ...}'`
        spec = json.loads(argv[1])
        print(json.dumps(measure(spec.pop("variant"), spec.pop("recipe"), spec.pop("overrides"), **spec)))
        return 0
    args = parse_args(argv)
    result = run(args)
    sbs.write_results(args.out, result)
    print(table(result))
    print(f"machine: {sbs.describe(result['machine'])}; written to {args.out}")  # type: ignore[arg-type]
    summary: dict[str, object] = result["summary"]  # type: ignore[assignment]
    return 0 if summary["ratio"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
