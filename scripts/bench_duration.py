"""What training the duration predictor alongside costs: seconds per update of the flow model with and without it.

    python scripts/bench_duration.py --repeats 5 --updates 20 --out scripts/results/duration_cpu.json

`duration=small` trains the predictor on the flow model's own batches: one more forward, backward and step per
update. Each measurement is a fresh process building the run's `Trainer` (`+recipe=RECIPE duration=VARIANT`),
pre-fetching the same update groups and timing `--updates` calls of `Trainer.train_update` after `--warmup` (no data
loading, logging or checkpoints: an upper bound of the cost). The variants alternate over `--repeats` rounds:
the medians, their ratio, the median per-round ratio, and the predictor's own part timed right after, in `--out`.
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
from typing import Any

from benchmarks import results, runner

VARIANTS = ("none", "small")
"""The `duration` config groups compared: without a predictor (the baseline), and with one trained alongside."""


def measure(variant: str, recipe: str, overrides: list[str], *, updates: int, warmup: int, threads: int | None) -> dict:
    """Build the run's `Trainer` with `duration=VARIANT`, warm up, time `updates` updates on pre-fetched batches."""
    import torch

    from f5lite.config import compose_config
    from f5lite.train.trainer import Trainer

    if threads:
        torch.set_num_threads(threads)
    load = os.getloadavg()[0]  # other work on the machine: the timings are only as good as it is idle
    with tempfile.TemporaryDirectory(prefix="f5lite_bench_duration_") as tmp:
        trainer = Trainer(compose_config([f"+recipe={recipe}", f"duration={variant}", *overrides, f"run_dir={tmp}/r"]))
        try:  # the trainer's own grouping of batches into updates (`optim.grad_accum`), across epochs, as `fit` does
            groups = trainer._micro_batches()
            batches = [[b.to(trainer.device) for b in next(groups)] for _ in range(warmup + updates)]
        finally:
            trainer.data.close_workers()

        def timed(update: Any) -> list[float]:
            times = []
            for group in batches[warmup:]:
                start = time.perf_counter()
                update(group)
                if trainer.device.type == "cuda":
                    torch.cuda.synchronize(trainer.device)
                times.append(time.perf_counter() - start)
            return times

        duration = getattr(trainer.objective, "duration", None)  # the flow objective's predictor alongside

        def predictor_update(group: list) -> None:  # what `forward_backward` and `optimizer_step` add for it
            for batch in group:
                duration.backward(batch, 1.0 / len(group))
            duration.step()

        for group in batches[:warmup]:
            trainer.train_update(group)
        times = timed(trainer.train_update)
        loss = float(trainer.train_update(batches[-1]))  # one more, read back: the updates really ran
        own: dict[str, object] = {}
        if duration is not None:  # its share alone, right after in this process: no drift between processes
            own_times = timed(predictor_update)
            own = {"predictor_s_per_update": sum(own_times) / len(own_times),
                   "predictor_update_s": [round(t, 5) for t in own_times]}  # fmt: skip
        predictor = duration.predictor if duration is not None else None
        return {
            "variant": variant, "device": str(trainer.device), "threads": torch.get_num_threads(), "load_before": load,
            "updates": updates, "warmup": warmup,
            "frames": sum(int(b.mel_lengths.sum()) for group in batches[warmup:] for b in group),
            "s_per_update": sum(times) / len(times), "update_s": [round(t, 5) for t in times],
            "flow_params": sum(p.numel() for p in trainer.network.parameters()),
            "predictor_params": sum(p.numel() for p in predictor.parameters()) if predictor is not None else 0,
            "final_loss": loss, **own,
        }  # fmt: skip


def summarize(runs: list[dict[str, Any]]) -> dict[str, object]:
    """Per variant the median over rounds of s/update; the ratio of the medians and the median per-round ratio.

    `runs` are in the order they ran: round after round, each round every variant of `VARIANTS` in order.
    """
    n = len(VARIANTS)
    chunks = [runs[i : i + n] for i in range(0, len(runs), n)]  # one per round
    rounds = [{r["variant"]: r["s_per_update"] for r in chunk if "error" not in r} for chunk in chunks]
    per = {v: [ok[v] for ok in rounds if v in ok] for v in VARIANTS}
    paired = [ok[VARIANTS[1]] / ok[VARIANTS[0]] for ok in rounds if len(ok) == n]
    own = [r for r in runs if "predictor_s_per_update" in r and "error" not in r]
    shares = [r["predictor_s_per_update"] / r["s_per_update"] for r in own]
    medians = {v: statistics.median(vals) if vals else None for v, vals in per.items()}
    base, other = (medians[v] for v in VARIANTS)
    ratio = other / base if base is not None and other is not None else None
    params = next((r for r in runs if r.get("variant") == VARIANTS[1] and "error" not in r), None)
    return {
        "variants": {v: {"s_per_update": medians[v], "rounds": [round(x, 5) for x in vals]} if vals else None
                     for v, vals in per.items()},
        "ratio": ratio, "overhead_pct": None if ratio is None else 100 * (ratio - 1),
        "paired_ratio_median": statistics.median(paired) if paired else None, "paired_ratios": [round(x, 4) for x in paired],
        "predictor_s_per_update": statistics.median(r["predictor_s_per_update"] for r in own) if own else None,
        "predictor_share_median": statistics.median(shares) if shares else None,
        "predictor_shares": [round(x, 4) for x in shares],
        "params": None if params is None else {"flow": params["flow_params"], "predictor": params["predictor_params"],
                                               "ratio": params["predictor_params"] / params["flow_params"]},
    }  # fmt: skip


def table(result: dict[str, Any]) -> str:
    """A short plain-text report of `summarize`'s figures."""
    summary, s = result["summary"], result["settings"]
    lines = [f"recipe {s['recipe']} {' '.join(s['overrides'])}".rstrip() + f"; {s['updates']} timed updates after "
             f"{s['warmup']}, {s['repeats']} interleaved rounds", f"{'duration':<10} {'median s/update':>16}  rounds"]  # fmt: skip
    for name, v in summary["variants"].items():
        rounds = "" if v is None else " ".join(f"{x:.4f}" for x in v["rounds"])
        lines.append(f"{name:<10} {'failed':>16}" if v is None else f"{name:<10} {v['s_per_update']:>16.4f}  {rounds}")
    if summary["ratio"] is not None:
        lines.append(f"ratio {VARIANTS[1]}/{VARIANTS[0]}: {summary['ratio']:.3f} ({summary['overhead_pct']:+.1f} %); "
                     f"median of the per-round ratios: {summary['paired_ratio_median']:.3f}")  # fmt: skip
    if (share := summary["predictor_share_median"]) is not None:
        lines.append(f"the predictor's own forward/backward/step, timed in the same process: "
                     f"{summary['predictor_s_per_update']:.4f} s/update, median {100 * share:.1f} % of the update with it")  # fmt: skip
    if (params := summary["params"]) is not None:
        lines.append(f"parameters: flow model {params['flow']:,}, predictor {params['predictor']:,} "
                     f"({100 * params['ratio']:.1f} % of the flow model)")  # fmt: skip
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (unknown `key=value` words are config overrides for both variants)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add, count = parser.add_argument, runner.at_least(1)
    add("--recipe", default="demo", help="recipe both variants train (default demo)")
    add("--repeats", type=count, default=3, help="rounds; each runs every variant once, in turn (default 3)")
    add("--updates", type=count, default=20, help="timed updates per run (default 20)")
    add("--warmup", type=runner.at_least(0), default=3, help="untimed updates first (default 3)")
    add("--threads", type=count, default=None, help="torch CPU threads (default torch's)")
    add("--timeout", type=float, default=900, help="seconds one run may take (default 900)")
    add("--out", type=Path, default=Path(__file__).resolve().parents[1] / "build" / "bench" / "duration.json",
        help="the JSON result (default build/bench/duration.json)")  # fmt: skip
    add("--note", default="", help="free text kept in the result")
    add("overrides", nargs="*", help="config overrides for both variants, e.g. data.frames_per_gpu=4000")
    args = parser.parse_args(argv)
    if any(o.split("=", 1)[0].lstrip("+~").split(".")[0] in ("duration", "run_dir") for o in args.overrides):
        parser.error("the overrides may not set duration or run_dir: the benchmark sets them")
    return args


def main(argv: list[str] | None = None) -> int:
    """Measure, write `--out`, print the table (or, with `--child SPEC`, run one measurement)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if (spec := runner.child_spec(argv)) is not None:
        print(json.dumps(measure(**spec)))
        return 0
    args = parse_args(argv)
    settings = {"recipe": args.recipe, "overrides": args.overrides, "updates": args.updates, "warmup": args.warmup,
                "threads": args.threads}  # fmt: skip
    configs = [runner.child_config(variant, __file__, {"variant": variant, **settings}) for variant in VARIANTS]

    def show(run: runner.Run) -> None:  # the record without its long lists of times
        brief = {k: v for k, v in run.record(variant=run.config).items() if not k.endswith("update_s")}
        print(json.dumps(brief), file=sys.stderr, flush=True)

    done = runner.run_interleaved(configs, args.repeats, check=False, timeout=args.timeout, on_run=show)
    runs = [run.record(variant=run.config) for run in done]
    settings |= {"variants": [f"duration={v}" for v in VARIANTS], "repeats": args.repeats}
    result = {**results.run_header(), "settings": settings, "summary": summarize(runs), "runs": runs, "note": args.note}
    results.write_results(args.out, result)
    print(table(result))
    print(f"machine: {results.describe(result)}; written to {args.out}")
    return 0 if result["summary"]["ratio"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
