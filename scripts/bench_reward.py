"""Does online RL make a trained model say the words better? GRPO against plain fine-tuning for the same time.

Issue 42's measurement. Two arms start from the same trained model (`--start`, an f5lite export: the [speaks]
model of `make speak-corpus` and `+recipe=speak_cpu`) and train side by side, each in its own process with an equal
share of the cores, launched together for the same wall-clock budget (`--minutes`) and stopped together (SIGTERM:
f5lite saves a last checkpoint):
  grpo       `python -m f5lite.train +recipe=grpo` on the corpus's RL prompts (`CORPUS/rl/prompts.txt`, training
             material), rewards WER (the corpus's recogniser vocabulary) and SIM
  finetune   `python -m f5lite.train +recipe=speak_cpu`, the flow objective on the corpus, from the same weights
Both with the same learning rate (`--lr`, constant), EMA and no validation. Then the start and each arm's last
checkpoint (its export: the EMA weights) are scored by `f5lite-eval` on the first `--limit` held-out rows, once per
noise seed (`--seeds`): WER, SIM, MOS, with the sampler's defaults and Griffin-Lim. The same seed gives every model
the same noise, so differences are paired by seed; the table gives each model's mean and spread over the seeds and
each arm's change from the start. Sampling cost: each arm's seconds per update and, for GRPO, the clips it generated
and scored. Reward hacking is watched: a model whose WER fell while its SIM or MOS fell by more than the seeds'
spread is flagged.

With `--duration DIR` (a trained duration predictor, e.g. `+recipe=duration_small`'s export) the flow model only
speaks and the arms train the predictor: `grpo` is `+recipe=duration_grpo` (RL of the lengths it picks, rewarded by
WER and SIM of the takes), `finetune` is `+recipe=duration_small` from the same predictor on the corpus; the start
and each arm are scored as the start's model with that predictor.

    make speak-corpus   # and a trained speak_cpu export, e.g. runs/speak_cpu/export
    python scripts/bench_reward.py --start runs/speak_cpu/export --minutes 45 --out-dir scripts/results
    python scripts/bench_reward.py --start runs/speak_cpu/export --duration runs/duration_small/export --lr 1e-3
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

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))
from bench_speaks import REPO, Arm, _run, cpu_flags, eval_keys, evaluate, tool, train  # noqa: E402

ARMS = ("grpo", "finetune")
METRICS = ("wer", "sim", "mos")
MAX_UPDATES = 1_000_000
"""Both arms' `optim.max_updates`: never reached, so the learning rate stays constant until the budget stops them."""


def command(arm: Arm, work: Path) -> list[str]:
    """`python -m f5lite.train` for one arm (as a user runs the recipe)."""
    return [sys.executable, "-m", "f5lite.train", f"+recipe={arm.recipe}", f"run_dir={arm.run_dir}",
            "logger.backend=none", *arm.overrides]  # fmt: skip


def arm_settings(name: str, args: argparse.Namespace) -> list[str]:
    """The overrides of one arm; what both share comes last (learning rate, EMA, no validation)."""
    corpus = args.corpus.resolve()
    if args.duration is not None:
        return duration_arm_settings(name, args)
    shared = [f"init.weights={args.start.resolve()}", f"data.dir={corpus}", f"optim.lr={args.lr}",
              "optim.warmup_updates=0", f"optim.max_updates={MAX_UPDATES}", "ema.update_after=0",
              f"ema.decay={args.ema_decay}", "eval.every=0", "logger.every=5"]  # fmt: skip
    if name == "grpo":
        own = [f"grpo.prompts={corpus / 'rl' / 'prompts.txt'}", f"eval.asr=pocketsphinx:{corpus / 'asr'}",
               "ckpt.every=50"]  # fmt: skip
    else:
        own = ["ckpt.every=500"]
    return [*own, *shared, *args.overrides]


def duration_arm_settings(name: str, args: argparse.Namespace) -> list[str]:
    """`--duration`'s arms: RL of the predictor, or the predictor fine-tuned on the corpus, both from `--duration`
    at the learning rate `--lr`; the flow model (`--start`) only speaks."""
    corpus = args.corpus.resolve()
    tokenizer = json.loads((args.start / "config.json").read_text(encoding="utf-8"))["tokenizer"]
    shared = [f"duration.init={args.duration.resolve()}", f"data.dir={corpus}", f"data.tokenizer={tokenizer}",
              f"duration.lr={args.lr}", "optim.warmup_updates=0", f"optim.max_updates={MAX_UPDATES}", "eval.every=0",
              "logger.every=5"]  # fmt: skip
    if name == "grpo":
        own = [f"init.weights={args.start.resolve()}", f"grpo.prompts={corpus / 'rl' / 'prompts.txt'}",
               f"eval.asr=pocketsphinx:{corpus / 'asr'}", "ckpt.every=25"]  # fmt: skip
    else:
        own = ["ckpt.every=500"]
    return [*own, *shared, *args.overrides]


def last_checkpoint(arm: Arm) -> int:
    """The update of the arm's newest checkpoint."""
    steps = [int(p.name.removeprefix("step-")) for p in (Path(arm.run_dir) / "checkpoints").glob("step-*")]
    if not steps:
        raise SystemExit(f"bench_reward.py: {arm.name} saved no checkpoint; see its log in the work folder")
    return max(steps)


def model_keys(arms: Sequence[Arm], start: Path, duration: Path | None, work: Path) -> dict[str, list[str]]:
    """Each model to score, as its f5lite-eval keys: the start, and every arm's export of its last checkpoint (with
    `--duration`: the start's flow model with each predictor)."""
    speaker = [f"model={start.resolve()}"]
    models = {"start": speaker if duration is None else [*speaker, f"duration={duration.resolve()}"]}
    for arm in arms:
        export = work / "exports" / arm.name
        if not export.exists():
            _run([tool("f5lite-export"), arm.run_dir, "--step", str(last_checkpoint(arm)), "--out", str(export)])
        models[arm.name] = [f"model={export}"] if duration is None else [*speaker, f"duration={export}"]
    return models


def score(models: dict[str, list[str]], corpus: Path, work: Path, seeds: Sequence[int], limit: int, jobs: int) -> dict:
    """f5lite-eval of every model with every seed (run again where scored before: `bench_speaks.evaluate`):
    {model: {seed: means}}."""
    tasks = [(name, seed) for name in models for seed in seeds]

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
        for name, seed, means in pool.map(one, tasks):
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
        if name != "start":
            row["hacked"] = hacked(row)
        summary[name] = row
    return summary


def hacked(row: dict[str, Any]) -> list[str]:
    """What a model gave up for its WER: SIM or MOS below the start by more than the seeds' spread, while WER fell."""
    if row["wer"]["change"]["max"] >= 0:
        return []
    return [key for key in ("sim", "mos") if row[key]["change"]["mean"] < -max(row[key]["sd"], 1e-9)]


def costs(arms: Sequence[Arm]) -> dict[str, Any]:
    """Each arm's updates, seconds per update (its last checkpoint's time after its config's: start-up counts) and,
    for GRPO, the clips it generated and scored, and its mean reward over its first and last 20 logged updates."""
    from f5lite.config import compose_config

    result = {}
    for arm in arms:
        root = Path(arm.run_dir)
        updates = last_checkpoint(arm)
        seconds = (root / "checkpoints" / f"step-{updates:08d}").stat().st_mtime - (
            root / "config.yaml"
        ).stat().st_mtime
        entry: dict[str, Any] = {"updates": updates, "seconds_per_update": round(seconds / max(updates, 1), 2)}
        if arm.name == "grpo":
            cfg = compose_config([f"+recipe={arm.recipe}", *arm.overrides])
            entry["clips"] = updates * cfg.grpo.group * cfg.grpo.prompts_per_update
            log = root / "logs" / "train.jsonl"
            lines = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
            rewards = [x["reward"] for x in lines if "reward" in x]
            if rewards:
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
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(ids), size=(resamples, len(ids)))
    result: dict[str, Any] = {"rows": len(ids)}
    for key in METRICS:
        deltas = np.array([rows_a[i][key] - rows_b[i][key] for i in ids])
        means = deltas[picks].mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        result[key] = {"mean": round(float(deltas.mean()), 4), "ci95": [round(float(low), 4), round(float(high), 4)]}
    return result


def markdown(result: dict[str, Any]) -> str:
    """The results as a table (means over the seeds, spread, paired change from the start)."""
    header = result["header"]
    lines = [f"# bench_reward: {header['date']}", "",
             f"{header['machine']['cpu']} ({', '.join(result['cpu_flags'])}), {header['machine']['logical_cores']} "
             f"logical cores, {result['threads']} thread(s) per arm, {result['minutes']} min per arm side by side; "
             f"{result['limit']} held-out rows, seeds {result['seeds']}; start {result['start']}"
             f"{' with the duration predictor ' + result['duration'] if result.get('duration') else ''}.", "",
             "| model | updates | s/update | WER | SIM | MOS | WER change (min..max) | flagged |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for name, row in result["summary"].items():
        cost = result["costs"].get(name, {})
        cells = [f"{row[k]['mean']:.3f} ± {row[k]['sd']:.3f}" for k in METRICS]
        change = row["wer"].get("change")
        moved = f"{change['mean']:+.3f} ({change['min']:+.3f}..{change['max']:+.3f})" if change else ""
        lines.append(f"| {name} | {cost.get('updates', 0)} | {cost.get('seconds_per_update', '')} | "
                     f"{' | '.join(cells)} | {moved} | {', '.join(row.get('hacked', [])) or ''} |")  # fmt: skip
    lines += ["", "± is the spread (standard deviation) over the seeds; a change is paired by seed (same noise).", "",
              "Per held-out row (each the mean over the seeds), paired, with a 95 % bootstrap interval over the rows:", "",
              "| comparison | WER | SIM | MOS |", "| --- | --- | --- | --- |"]  # fmt: skip
    for label, diff in result["paired"].items():
        cells = [f"{diff[k]['mean']:+.3f} [{diff[k]['ci95'][0]:+.3f}, {diff[k]['ci95'][1]:+.3f}]" for k in METRICS]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--start", type=Path, required=True, help="the trained model to start from (an export)")
    parser.add_argument("--duration", type=Path, default=None,
                        help="RL of this duration predictor instead of the flow model (issue 42 item 2)")  # fmt: skip
    parser.add_argument("--corpus", type=Path, default=REPO / "runs" / "speak_corpus_ipa", help="make speak-corpus's")
    parser.add_argument("--minutes", type=float, default=45.0, help="wall-clock budget of each arm (default 45)")
    parser.add_argument("--lr", type=float, default=1e-4, help="both arms' constant learning rate (default 1e-4)")
    parser.add_argument("--ema-decay", type=float, default=0.9, help="both arms' EMA decay (default 0.9)")
    parser.add_argument("--threads", type=int, default=None, help="threads per arm (default: cores / 2)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="f5lite-eval noise seeds")
    parser.add_argument("--limit", type=int, default=30, help="held-out rows scored (default 30)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="f5lite-eval processes")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="training overrides for both arms")  # fmt: skip
    parser.add_argument("--score-only", action="store_true", help="score the runs already in --work, train none")
    parser.add_argument("--work", type=Path, default=REPO / "runs" / "bench_reward", help="runs and scores")
    parser.add_argument("--out-dir", type=Path, default=None, help="write bench_reward_TAG.{json,md} here")
    parser.add_argument("--tag", default="cpu", help="results file suffix (default cpu)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from f5lite.bench.sidebyside import run_header

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
        for arm in arms:
            if Path(arm.run_dir).exists():
                raise SystemExit(f"bench_reward.py: {arm.run_dir} exists; remove it or give another --work")
        train(arms, args.minutes, threads, args.work, command)
    models = model_keys(arms, args.start, args.duration, args.work)
    scores = score(models, args.corpus.resolve(), args.work, args.seeds, args.limit, args.jobs)
    result = {
        "header": run_header([]), "cpu_flags": cpu_flags(), "minutes": args.minutes, "threads": threads,
        "limit": args.limit, "seeds": args.seeds, "start": str(args.start), "lr": args.lr,
        "duration": str(args.duration) if args.duration else None,
        "arms": {arm.name: {"overrides": arm.overrides, "returncode": arm.returncode, "error": arm.error}
                 for arm in arms},
        "costs": costs(arms), "scores": scores, "summary": summarize(scores),
        "paired": {f"{a} - {b}": paired(args.work, a, b, args.seeds)
                   for a, b in (("grpo", "start"), ("finetune", "start"), ("grpo", "finetune"))},
    }  # fmt: skip
    out = args.out_dir or args.work
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"bench_reward_{args.tag}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(f"bench_reward: wrote {stem}.{{json,md}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
