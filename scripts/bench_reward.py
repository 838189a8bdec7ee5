"""Does online RL make a trained model say the words better? GRPO against plain fine-tuning for the same time.

    make speak-corpus   # and a trained speak_cpu export, e.g. runs/speak_cpu/export
    python scripts/bench_reward.py --start runs/speak_cpu/export --minutes 45 --out-dir scripts/results
    python scripts/bench_reward.py --start runs/speak_cpu/export --duration runs/duration_small/export --lr 1e-3

Issue 42's measurement. Two arms start from the same model (`--start`) and train side by side for `--minutes`
(`benchmarks.arms`): `grpo` (`+recipe=grpo` on the corpus's RL prompts, rewarded by WER and SIM) and `finetune`
(`+recipe=speak_cpu`, the flow objective), with the same constant learning rate, EMA and no validation. The start
and each arm's last checkpoint are scored by `f5lite-eval` on `--limit` held-out rows once per noise seed, so
differences pair by seed (and by row, with a bootstrap interval). A model whose WER fell while its SIM or MOS fell by
more than the seeds' spread is flagged (reward hacking). With `--duration DIR` the arms train that duration
predictor instead (`+recipe=duration_grpo` against `+recipe=duration_small`), the start's model speaking.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks import arms as bench_arms
from benchmarks import results
from benchmarks.arms import REPO, Arm, eval_keys, evaluate, tool

ARMS = ("grpo", "finetune")
METRICS = ("wer", "sim", "mos")
MAX_UPDATES = 1_000_000
"""Both arms' `optim.max_updates`: never reached, so the learning rate stays constant until the budget stops them."""


def arm_settings(name: str, args: argparse.Namespace) -> list[str]:
    """The overrides of one arm; what both share comes last (learning rate, EMA, no validation).

    With `--duration`, RL of the predictor or the predictor fine-tuned on the corpus, both from `--duration` at the
    learning rate `--lr`; the flow model (`--start`) only speaks.
    """
    corpus, grpo = args.corpus.resolve(), name == "grpo"
    rl = [f"grpo.prompts={corpus / 'rl' / 'prompts.txt'}", f"eval.asr=pocketsphinx:{corpus / 'asr'}"]
    shared = [f"data.dir={corpus}", "optim.warmup_updates=0", f"optim.max_updates={MAX_UPDATES}"]
    if args.duration is None:
        own = [*rl, "ckpt.every=50"] if grpo else ["ckpt.every=500"]
        shared = [f"init.weights={args.start.resolve()}", *shared[:1], f"optim.lr={args.lr}", *shared[1:],
                  "ema.update_after=0", f"ema.decay={args.ema_decay}"]  # fmt: skip
    else:
        tokenizer = json.loads((args.start / "config.json").read_text(encoding="utf-8"))["tokenizer"]
        own = [f"init.weights={args.start.resolve()}", *rl, "ckpt.every=25"] if grpo else ["ckpt.every=500"]
        shared = [f"duration.init={args.duration.resolve()}", *shared[:1], f"data.tokenizer={tokenizer}",
                  f"duration.lr={args.lr}", *shared[1:]]  # fmt: skip
    return [*own, *shared, "eval.every=0", "logger.every=5", *args.overrides]


def last_checkpoint(arm: Arm) -> int:
    """The update of the arm's newest checkpoint."""
    steps = [int(p.name.removeprefix("step-")) for p in (Path(arm.run_dir) / "checkpoints").glob("step-*")]
    if not steps:
        raise SystemExit(f"bench_reward.py: {arm.name} saved no checkpoint; see its log in the work folder")
    return max(steps)


def model_keys(arms: Sequence[Arm], start: Path, duration: Path | None, work: Path) -> dict[str, list[str]]:
    """Each model to score as its f5lite-eval keys: the start, and every arm's export of its last checkpoint (with
    `--duration`: the start's flow model with each predictor)."""
    speaker = [f"model={start.resolve()}"]
    models = {"start": speaker if duration is None else [*speaker, f"duration={duration.resolve()}"]}
    for arm in arms:
        export = work / "exports" / arm.name
        if not export.exists():
            bench_arms.export(arm.run_dir, last_checkpoint(arm), export)
        models[arm.name] = [f"model={export}"] if duration is None else [*speaker, f"duration={export}"]
    return models


def score(models: dict[str, list[str]], corpus: Path, work: Path, seeds: Sequence[int], limit: int, jobs: int) -> dict:
    """f5lite-eval of every model with every seed (run again where scored before): {model: {seed: means}}."""

    def one(task: tuple[str, int]) -> tuple[str, int, dict[str, float]]:
        name, seed = task
        out = work / "eval" / f"{name}-seed{seed}"
        command = [tool("f5lite-eval"), *models[name], *eval_keys(corpus, out, limit), "floor_vocoder=none",
                   f"sample.seed={seed}"]  # fmt: skip
        means = evaluate(command, out)["means"]
        print(f"bench_reward: {name} seed {seed}: " + ", ".join(f"{k} {means.get(k)}" for k in METRICS), flush=True)
        return name, seed, {k: means[k] for k in METRICS if k in means}

    scores: dict[str, dict[int, dict[str, float]]] = {name: {} for name in models}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, seed, means in pool.map(one, [(name, seed) for name in models for seed in seeds]):
            scores[name][seed] = means
    return scores


def summarize(scores: dict[str, dict[int, dict[str, float]]]) -> dict[str, Any]:
    """Each model's mean and spread over the seeds, each arm's paired change from the start, and hacking flags."""
    summary: dict[str, Any] = {}
    for name, by_seed in scores.items():
        row: dict[str, Any] = {}
        for key in METRICS:
            values = [by_seed[s][key] for s in sorted(by_seed)]
            row[key] = {"mean": statistics.fmean(values), "sd": statistics.stdev(values) if len(values) > 1 else 0.0}
            if name != "start":
                deltas = [by_seed[s][key] - scores["start"][s][key] for s in sorted(by_seed)]
                row[key]["change"] = {"mean": statistics.fmean(deltas), "min": min(deltas), "max": max(deltas)}
        if name != "start":  # what it gave up for its WER: SIM or MOS below the start by more than the seeds' spread
            hacked = row["wer"]["change"]["max"] < 0
            row["hacked"] = [
                k for k in ("sim", "mos") if hacked and row[k]["change"]["mean"] < -max(row[k]["sd"], 1e-9)
            ]
        summary[name] = row
    return summary


def costs(arms: Sequence[Arm]) -> dict[str, Any]:
    """Each arm's updates and seconds per update (its last checkpoint's time after its config's: start-up counts);
    for GRPO the clips it generated and scored, and its mean reward over its first and last 20 logged updates."""
    from f5lite.config import compose_config

    result = {}
    for arm in arms:
        root, updates = Path(arm.run_dir), last_checkpoint(arm)
        seconds = (root / "checkpoints" / f"step-{updates:08d}").stat().st_mtime - (
            root / "config.yaml"
        ).stat().st_mtime
        entry: dict[str, Any] = {"updates": updates, "seconds_per_update": round(seconds / max(updates, 1), 2)}
        if arm.name == "grpo":
            cfg = compose_config([f"+recipe={arm.recipe}", *arm.overrides])
            entry["clips"] = updates * cfg.grpo.group * cfg.grpo.prompts_per_update
            lines = [json.loads(x) for x in (root / "logs" / "train.jsonl").read_text(encoding="utf-8").splitlines()]
            if rewards := [x["reward"] for x in lines if "reward" in x]:
                window = max(1, min(4, len(rewards) // 2))  # logged every 5 updates: 4 lines are 20 updates
                entry["reward_first"] = round(statistics.fmean(rewards[:window]), 4)
                entry["reward_last"] = round(statistics.fmean(rewards[-window:]), 4)
        result[arm.name] = entry
    return result


def row_scores(work: Path, name: str, seeds: Sequence[int]) -> dict[str, dict[str, float]]:
    """A model's per-row scores, each the mean over the seeds: {row id: {metric: value}}."""
    sums: dict[str, dict[str, list[float]]] = {}
    for seed in seeds:
        for line in (work / "eval" / f"{name}-seed{seed}" / "results.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            for key in METRICS:
                sums.setdefault(row["id"], {}).setdefault(key, []).append(float(row[key]))
    return {ident: {k: statistics.fmean(v) for k, v in keys.items()} for ident, keys in sums.items()}


def paired(work: Path, a: str, b: str, seeds: Sequence[int], resamples: int = 10_000) -> dict[str, Any]:
    """`a - b` per held-out row (each the mean over the seeds), with a 95 % bootstrap interval over the rows."""
    import numpy as np

    rows_a, rows_b = row_scores(work, a, seeds), row_scores(work, b, seeds)
    ids = sorted(rows_a.keys() & rows_b.keys())
    picks = np.random.default_rng(0).integers(0, len(ids), size=(resamples, len(ids)))
    result: dict[str, Any] = {"rows": len(ids)}
    for key in METRICS:
        deltas = np.array([rows_a[i][key] - rows_b[i][key] for i in ids])
        low, high = np.percentile(deltas[picks].mean(axis=1), [2.5, 97.5])
        result[key] = {"mean": round(float(deltas.mean()), 4), "ci95": [round(float(low), 4), round(float(high), 4)]}
    return result


def markdown(result: dict[str, Any]) -> str:
    """The results as a table (means over the seeds, spread, paired change from the start)."""
    header, rows = result["header"], []
    duration = f" with the duration predictor {result['duration']}" if result.get("duration") else ""
    for name, row in result["summary"].items():
        cost, change = result["costs"].get(name, {}), row["wer"].get("change")
        moved = f"{change['mean']:+.3f} ({change['min']:+.3f}..{change['max']:+.3f})" if change else ""
        rows.append([name, cost.get("updates", 0), cost.get("seconds_per_update", ""),
                     *(f"{row[k]['mean']:.3f} ± {row[k]['sd']:.3f}" for k in METRICS), moved,
                     ", ".join(row.get("hacked", [])) or ""])  # fmt: skip
    paired_rows = [[label, *(f"{d[k]['mean']:+.3f} [{d[k]['ci95'][0]:+.3f}, {d[k]['ci95'][1]:+.3f}]" for k in METRICS)]
                   for label, d in result["paired"].items()]  # fmt: skip
    lines = [f"# bench_reward: {header['date']}", "",
             f"{header['machine']['cpu']} ({', '.join(result['cpu_flags'])}), {header['machine']['logical_cores']} "
             f"logical cores, {result['threads']} thread(s) per arm, {result['minutes']} min per arm side by side; "
             f"{result['limit']} held-out rows, seeds {result['seeds']}; start {result['start']}{duration}.", "",
             *results.table(["model", "updates", "s/update", "WER", "SIM", "MOS", "WER change (min..max)", "flagged"], rows),
             "", "± is the spread (standard deviation) over the seeds; a change is paired by seed (same noise).", "",
             "Per held-out row (each the mean over the seeds), paired, with a 95 % bootstrap interval over the rows:", "",
             *results.table(["comparison", "WER", "SIM", "MOS"], paired_rows)]  # fmt: skip
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add = parser.add_argument
    add("--start", type=Path, required=True, help="the trained model to start from (an export)")
    add("--duration", type=Path, default=None, help="RL of this duration predictor instead of the flow model")
    add("--corpus", type=Path, default=REPO / "runs" / "speak_corpus_ipa", help="make speak-corpus's")
    add("--minutes", type=float, default=45.0, help="wall-clock budget of each arm (default 45)")
    add("--lr", type=float, default=1e-4, help="both arms' constant learning rate (default 1e-4)")
    add("--ema-decay", type=float, default=0.9, help="both arms' EMA decay (default 0.9)")
    add("--threads", type=int, default=None, help="threads per arm (default: cores / 2)")
    add("--seeds", type=int, nargs="+", default=[0, 1, 2], help="f5lite-eval noise seeds")
    add("--limit", type=int, default=30, help="held-out rows scored (default 30)")
    add("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="f5lite-eval processes")
    add("--set", nargs="+", default=[], metavar="KEY=VALUE", dest="overrides", help="training overrides for both arms")
    add("--score-only", action="store_true", help="score the runs already in --work, train none")
    add("--work", type=Path, default=REPO / "runs" / "bench_reward", help="runs and scores")
    add("--out-dir", type=Path, default=None, help="write bench_reward_TAG.{json,md} here")
    add("--tag", default="cpu", help="results file suffix (default cpu)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Train both arms (unless `--score-only`), score them with the start, write `bench_reward_TAG.{json,md}`."""
    args = parse_args(argv)
    if not (args.corpus / "rl" / "prompts.txt").is_file():
        raise SystemExit(f"bench_reward.py: {args.corpus} has no rl/prompts.txt; run `make speak-corpus`")
    if not (args.start / "config.json").is_file():
        raise SystemExit(f"bench_reward.py: --start {args.start} is not an f5lite export (no config.json)")
    if args.duration is not None and not (args.duration / "duration.json").is_file():
        raise SystemExit(f"bench_reward.py: --duration {args.duration} holds no duration predictor (duration.json)")
    recipes = (
        {"grpo": "duration_grpo", "finetune": "duration_small"}
        if args.duration
        else {"grpo": "grpo", "finetune": "speak_cpu"}
    )
    arms = [Arm(name=n, run_dir=str((args.work / n).resolve()), recipe=recipes[n], corpus=str(args.corpus.resolve()),
                overrides=arm_settings(n, args)) for n in ARMS]  # fmt: skip
    threads = args.threads or max(1, (os.cpu_count() or 1) // len(arms))
    args.work.mkdir(parents=True, exist_ok=True)
    if not args.score_only:
        if existing := [arm.run_dir for arm in arms if Path(arm.run_dir).exists()]:
            raise SystemExit(f"bench_reward.py: {existing[0]} exists; remove it or give another --work")
        bench_arms.train(arms, args.minutes, threads, args.work, lambda arm, work: bench_arms.f5lite_train(arm))
    scores = score(model_keys(arms, args.start, args.duration, args.work), args.corpus.resolve(), args.work, args.seeds,
                   args.limit, args.jobs)  # fmt: skip
    result = {
        "header": results.run_header([]), "cpu_flags": results.cpu_flags(), "minutes": args.minutes, "threads": threads,
        "limit": args.limit, "seeds": args.seeds, "start": str(args.start), "lr": args.lr,
        "duration": str(args.duration) if args.duration else None,
        "arms": {arm.name: {"overrides": arm.overrides, "returncode": arm.returncode, "error": arm.error} for arm in arms},
        "costs": costs(arms), "scores": scores, "summary": summarize(scores),
        "paired": {f"{a} - {b}": paired(args.work, a, b, args.seeds)
                   for a, b in (("grpo", "start"), ("finetune", "start"), ("grpo", "finetune"))},
    }  # fmt: skip
    stem = (args.out_dir or args.work) / f"bench_reward_{args.tag}"
    results.write_results(stem.with_suffix(".json"), result, markdown(result))
    print(f"bench_reward: wrote {stem}.{{json,md}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
