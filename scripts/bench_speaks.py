"""When does a model trained from scratch say words, and does online RL make a trained one say them better?

    make speak-corpus
    PYTHONPATH=.f5tts python scripts/bench_speaks.py --minutes 45 --out-dir scripts/results
    python scripts/bench_speaks.py --start runs/speak_cpu/export --minutes 45 --out-dir scripts/results
    python scripts/bench_speaks.py --start runs/speak_cpu/export --duration runs/duration_small/export --lr 1e-3
    python scripts/bench_speaks.py --start runs/speak_cpu/export --spread 6 --out-dir scripts/results

From scratch (issue 41's curve, `bench_speaks_TAG`): the arms (`--arms`) train side by side for the same wall-clock
budget (`benchmarks.arms`; `f5tts` is F5-TTS's own `Trainer` with speak_cpu_char's settings). Up to `--points`
checkpoints per arm (the last always; its minute: its file's time after the launch) are scored by `f5lite-eval` on
`--limit` held-out rows beside the floors, the recordings as recorded and through Griffin-Lim (`--runs`: runs made).

From `--start` (issue 42, `bench_reward_TAG`): `grpo` (`+recipe=grpo`, rewarded by WER and SIM) and `finetune`
(`+recipe=speak_cpu`) train side by side with the same constant learning rate and EMA. The start and each arm's last
checkpoint are scored on `--limit` held-out rows once per noise seed, paired by seed and by row (bootstrap interval);
a WER gain bought with SIM or MOS beyond the seeds' spread is flagged (reward hacking). With `--duration DIR` the
arms train that duration predictor. `--spread N` trains nothing: on N RL prompts it scores `independent` groups
(takes that differ only in their start: the ODE sampler, no step to credit) and `window` groups (GRPO's rollouts,
what its loss sees): mean WER, best-of-group WER, within-group spread of WER and reward (`grpo_spread_TAG.json`).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks import arms as bench_arms
from benchmarks import f5tts, results
from benchmarks.arms import REPO, Arm, eval_keys, evaluate, tool

ARMS = {
    "f5lite": ("f5lite", "speak_cpu", "ipa", ()),
    "f5lite-char": ("f5lite", "speak_cpu_char", "char", ()),
    "f5tts": ("f5tts", "speak_cpu_char", "char", ()),
    "f5lite-ipa-pad": ("f5lite", "speak_cpu", "ipa", ("model.text_fit=pad",)),
    "f5lite-char-spread": ("f5lite", "speak_cpu_char", "char", ("model.text_fit=spread",)),
}
"""Arm name -> (trainer, recipe, corpus, the arm's own overrides). The last two isolate one lever each."""
DEFAULT_ARMS = ("f5lite", "f5lite-char", "f5tts")
F5LITE_STEP, F5TTS_STEP = re.compile(r"step-(\d+)$"), re.compile(r"model_(\d+)\.pt$")


REWARD_ARMS = ("grpo", "finetune")
METRICS = ("wer", "sim", "mos")
MAX_UPDATES = 1_000_000
"""Both reward arms' `optim.max_updates`: never reached, so the learning rate stays constant until the budget ends."""


def f5tts_command(arm: Arm, work: Path) -> list[str]:
    """F5-TTS's `Trainer` through `compare_f5tts_run.py`'s child, on F5-TTS's format of the corpus's clips."""
    import torch

    from f5lite.config import compose_config
    from f5lite.models import backbone_kwargs
    from f5lite.train.precision import choose_precision

    cfg = compose_config([f"+recipe={arm.recipe}", *arm.overrides])
    corpus, data = Path(arm.corpus), work / "f5tts_data"
    durations = f5tts.write_dataset(f5tts.demo_clips(corpus), data)
    (data / "vocab.txt").write_text((corpus / "vocab.txt").read_text(encoding="utf-8"), encoding="utf-8")
    model = backbone_kwargs(cfg.model, text_num_embeds=1)
    for key in ("text_num_embeds", "mel_dim", "text_fit"):  # the vocab size comes from vocab.txt, as in train.py
        model.pop(key)
    per_epoch = f5tts.batches_per_epoch(durations, cfg.data.frames_per_gpu, cfg.data.max_samples)
    # F5-TTS runs as its users run it on this CPU: in the precision the CPU computes (`perf.precision=auto`'s choice).
    precision = choose_precision(cfg.perf.precision, torch.device("cpu")).precision
    spec = {
        "f5tts_data": str(data), "run_dir": arm.run_dir, "model": model, "seed": cfg.seed,
        "epochs": -(-cfg.optim.max_updates // per_epoch), "lr": cfg.optim.lr, "warmup": cfg.optim.warmup_updates,
        "ckpt_every": cfg.ckpt.every, "keep_checkpoints": -1, "frames": cfg.data.frames_per_gpu,
        "max_samples": cfg.data.max_samples, "precision": precision, "ema_decay": cfg.ema.decay,
        "ema_update_every": cfg.ema.update_every, "ema_update_after": cfg.ema.update_after,
        "workers": max(1, cfg.data.num_workers),  # its DataLoader keeps workers alive, so it needs one
    }  # fmt: skip
    (spec_path := work / "f5tts_spec.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
    child = [str(REPO / "scripts" / "compare_f5tts_run.py"), "--child", "f5tts", str(spec_path)]
    return [sys.executable, *child, str(work / "f5tts_events.json")]


def arm_command(arm: Arm, work: Path) -> list[str]:
    """The command that trains one of this bench's arms (`work`: a folder of its own for what it needs)."""
    if ARMS[arm.name][0] == "f5tts":
        return f5tts_command(arm, work)
    return bench_arms.f5lite_train(arm, f"data.dir={arm.corpus}")


def checkpoints(arm: Arm) -> list[tuple[int, Path, float]]:
    """The arm's kept checkpoints: (update, path, seconds after launch, from the file's time), in update order."""
    root = Path(arm.run_dir)
    if ARMS[arm.name][0] == "f5tts":
        pattern, paths = F5TTS_STEP, root.glob("model_*.pt")
    else:
        pattern, paths = F5LITE_STEP, (root / "checkpoints").glob("step-*")
    found = [(int(m.group(1)), path) for path in paths if (m := pattern.search(path.name))]
    if arm.launched is not None:
        launched = arm.launched
    else:  # a run made elsewhere: its config file's time (written before the first update)
        config = root / "config.yaml"
        launched = config.stat().st_mtime if config.exists() else min(p.stat().st_mtime for p in root.iterdir())
    return sorted((step, path, path.stat().st_mtime - launched) for step, path in found)


def pick(items: Sequence[Any], count: int) -> list[Any]:
    """At most `count` of `items`, evenly spread, the last always included."""
    if len(items) <= count:
        return list(items)
    return [items[i] for i in sorted({round(i * (len(items) - 1) / (count - 1)) for i in range(count)})]


def cloning_means(summary: dict[str, Any]) -> tuple[float | None, float | None]:
    """Calibrated similarity and top-1 of the held-out voices' outputs (else all rows'; Nones without cloning)."""
    if not (cloning := summary.get("cloning")):
        return None, None
    output = (cloning["by_split"].get("held_out") or cloning["overall"]).get("output") or {}
    return output.get("sim_calibrated"), output.get("top1")


def score(arms: Sequence[Arm], work: Path, limit: int, points: int, jobs: int) -> None:
    """Score up to `points` checkpoints of every arm, `jobs` f5lite-eval processes at a time."""
    tasks = []
    for arm in arms:
        for step, path, seconds in pick(checkpoints(arm), points):
            arm.points.append(point := {"update": step, "minutes": round(seconds / 60, 2)})
            tasks.append((arm, point, path))

    def one(task: tuple[Arm, dict[str, Any], Path]) -> None:
        arm, point, path = task
        corpus, slug = Path(arm.corpus), f"{arm.name}-{point['update']:08d}"
        if ARMS[arm.name][0] == "f5tts":
            model = [f"model={path}", f"recipe={arm.recipe}", f"vocab={corpus / 'vocab.txt'}"]
        else:  # an f5lite checkpoint through its export
            model = [f"model={bench_arms.export(arm.run_dir, point['update'], work / 'exports' / slug)}"]
        out = work / "eval" / slug
        summary = evaluate([tool("f5lite-eval"), *model, *eval_keys(corpus, out, limit), "floor_vocoder=none"], out)
        point.update({k: summary["means"].get(k) for k in ("wer", "sim", "mos")})
        point["sim_calibrated"], point["top1"] = cloning_means(summary)
        print(f"bench_speaks: {arm.name} update {point['update']} ({point['minutes']} min): WER {point['wer']}")

    bench_arms.parallel(one, tasks, jobs)


def floors(corpus: Path, work: Path, limit: int) -> dict[str, Any]:
    """The test set's own recordings scored as the models are: as recorded, and through log-mel and Griffin-Lim."""
    out = work / "eval" / "ground_truth"
    keys = [k for k in eval_keys(corpus, out, limit) if not k.startswith("sample.vocoder=")]
    command = [tool("f5lite-eval"), f"audio_dir={corpus / 'test' / 'audio'}", *keys, "floor_vocoder=griffin_lim"]
    summary = evaluate(command, out, threads=2)
    floor = {"recorded": summary["means"], "vocoded": summary.get("ground_truth_vocoded")}
    if summary.get("cloning"):
        floor["cloning"] = summary["cloning"]["by_split"]
    return floor


def plot(result: dict[str, Any], path: Path) -> None:
    """Draw the curves: WER against minutes and updates, SIM and MOS against minutes, the floors as level lines."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    panels = [(axes[0][0], "held-out WER", "minutes", "wer"), (axes[0][1], "held-out WER", "updates", "wer"),
              (axes[1][0], "SIM", "minutes", "sim"), (axes[1][1], "MOS (DNSMOS)", "minutes", "mos")]  # fmt: skip
    floor = result.get("floors") or {}
    for ax, title, xlabel, metric in panels:
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        for name, arm in result["arms"].items():
            points = [p for p in arm["points"] if p["wer"] is not None]
            x = [p["minutes" if xlabel == "minutes" else "update"] for p in points]
            ax.plot(x, [p[metric] for p in points], marker="o", label=name)
        for key, style, label in (("recorded", "--", "recordings"), ("vocoded", ":", "recordings via Griffin-Lim")):
            if (value := (floor.get(key) or {}).get(metric)) is not None:
                ax.axhline(value, color="gray", linestyle=style, label=f"{label} ({value:.3f})")
    axes[0][0].set_ylim(bottom=0)
    axes[0][0].legend(fontsize=8)
    machine = result["machine"]
    fig.suptitle(f"From scratch on {machine['logical_cores']} cores of {machine['cpu']}, {result['date'][:10]}"
                 f" ({result['threads']} thread(s) per arm)", fontsize=10)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def intro(result: dict[str, Any], name: str, what: str) -> list[str]:
    """A page's title and its machine, threads and `what`."""
    machine, flags = result["machine"], ", ".join(result["machine"]["flags"])
    cores = f"{machine['logical_cores']} logical cores, {result['threads']} thread(s) per arm"
    return [f"# {name}: {result['date']}", "", f"{machine['cpu']} ({flags}), {cores}; {what}", ""]


def markdown(result: dict[str, Any]) -> str:
    """The curve as a table per arm, with the floors."""
    budget = f"{result['minutes']} min" if result["minutes"] else "none (runs made apart, scored with --runs)"
    lines = intro(result, "bench_speaks", f"budget: {budget}; {result['limit']} held-out rows.")
    for key, values in (result.get("floors") or {}).items():
        if values and key != "cloning":
            lines.append(f"- floor, {key}: WER {_fmt(values.get('wer'))}, SIM {_fmt(values.get('sim'))}, "
                         f"MOS {_fmt(values.get('mos'))}")  # fmt: skip
    for name, arm in result["arms"].items():
        overrides = "".join(f", {o}" for o in arm.get("overrides") or [])
        rows = [[p["update"], p["minutes"], *(_fmt(p.get(k)) for k in ("wer", "sim", "mos", "sim_calibrated", "top1"))]
                for p in arm["points"]]  # fmt: skip
        head = ["update", "minutes", "WER", "SIM", "MOS", "calibrated SIM", "top-1"]
        title = f"## {name} (recipe {arm['recipe']}{overrides}, {arm['corpus']})"
        lines += ["", title, "", *results.table(head, rows, "r" * 7)]
    return "\n".join(lines) + "\n"


def arm_settings(name: str, args: argparse.Namespace) -> list[str]:
    """One arm's overrides, what both share last; with `--duration` both train that predictor (`--start` speaks)."""
    corpus, grpo = args.ipa_corpus.resolve(), name == "grpo"
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


def spread(args: argparse.Namespace) -> dict[str, Any]:
    """`--spread`: the WER and reward spread of `independent` and `window` groups of the same prompts."""
    import torch

    from f5lite.config import compose_config
    from f5lite.train import Trainer

    torch.set_num_threads(args.threads or torch.get_num_threads())
    corpus, seed = args.ipa_corpus.resolve(), args.seeds[0]
    with tempfile.TemporaryDirectory() as run:
        cfg = compose_config([
            "+recipe=grpo", f"init.weights={args.start.resolve()}", f"data.dir={corpus}", f"run_dir={run}",
            f"grpo.prompts={corpus / 'rl' / 'prompts.txt'}", f"eval.asr=pocketsphinx:{corpus / 'asr'}",
            "perf.precision=no", "logger.backend=none", "grpo.likelihood=sde", *args.overrides,
        ])  # fmt: skip
        grpo = Trainer(cfg).net.module
    if "wer" not in grpo.rewards.names:
        raise SystemExit("bench_speaks.py: --spread measures the WER's spread; the WER reward is off")
    s, kinds = grpo.settings, {"independent": [], "window": []}
    picks = torch.linspace(0, len(grpo.pieces) - 1, args.spread).round().long().tolist()
    generator, started = torch.Generator().manual_seed(seed), time.perf_counter()
    with torch.no_grad():
        for i in picks:
            piece = grpo.pieces[i]
            waves = [grpo.synthesizer.generate([piece], grpo.options, seed=seed * 1_000 + j)[0] for j in range(s.group)]
            texts, refs = [piece.text] * s.group, [piece.reference.wave] * s.group
            kinds["independent"].append(grpo.rewards.terms(waves, texts, refs))
            kinds["window"].append(grpo.rollout([piece], generator).terms)
            print(f"bench_reward: prompt {i} scored ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    found: dict[str, Any] = {"start": str(args.start), "prompts": picks, "group": s.group, "steps": s.sample.steps}
    found |= {"train_steps": s.train_steps, "noise_level": s.noise_level, "seed": seed}
    for kind, groups in kinds.items():
        terms = torch.stack(groups)  # [prompts, group, terms]
        wer, total = -terms[..., grpo.rewards.names.index("wer")], (terms * grpo.rewards.weights).sum(dim=-1)
        spreads = {"wer_spread": wer, "reward_spread": total}
        found[kind] = {"wer": float(wer.mean()), "best_of_group_wer": float(wer.min(dim=1).values.mean())}
        found[kind] |= {key: float(x.std(dim=1, unbiased=False).mean()) for key, x in spreads.items()}
    return found


def last_checkpoint(arm: Arm) -> int:
    """The update of the arm's newest checkpoint."""
    if not (steps := sorted(int(p.name[5:]) for p in (Path(arm.run_dir) / "checkpoints").glob("step-*"))):
        raise SystemExit(f"bench_speaks.py: {arm.name} saved no checkpoint; see its log in the work folder")
    return steps[-1]


def model_keys(arms: Sequence[Arm], start: Path, duration: Path | None, work: Path) -> dict[str, list[str]]:
    """The f5lite-eval keys of the start and of each arm's last export (with `--duration`: as the start's predictor)."""
    speaker = [f"model={start.resolve()}"]
    models = {"start": speaker if duration is None else [*speaker, f"duration={duration.resolve()}"]}
    for arm in arms:
        export = work / "exports" / arm.name
        if not export.exists():
            bench_arms.export(arm.run_dir, last_checkpoint(arm), export)
        models[arm.name] = [f"model={export}"] if duration is None else [*speaker, f"duration={export}"]
    return models


def score_seeds(models: dict[str, list[str]], args: argparse.Namespace) -> dict[str, dict[int, dict[str, float]]]:
    """f5lite-eval of every model with every seed (run again where scored before): {model: {seed: means}}."""
    corpus, work, limit = args.ipa_corpus.resolve(), args.work, args.limit

    def one(task: tuple[str, int]) -> tuple[str, int, dict[str, float]]:
        name, seed = task
        out = work / "eval" / f"{name}-seed{seed}"
        command = [tool("f5lite-eval"), *models[name], *eval_keys(corpus, out, limit), "floor_vocoder=none",
                   f"sample.seed={seed}"]  # fmt: skip
        means = evaluate(command, out)["means"]
        print(f"bench_reward: {name} seed {seed}: " + ", ".join(f"{k} {means.get(k)}" for k in METRICS), flush=True)
        return name, seed, {k: means[k] for k in METRICS if k in means}

    scores: dict[str, dict[int, dict[str, float]]] = {name: {} for name in models}
    for name, seed, means in bench_arms.parallel(one, [(n, seed) for n in models for seed in args.seeds], args.jobs):
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
            bought, lost = row["wer"]["change"]["max"] < 0, {k: -max(row[k]["sd"], 1e-9) for k in ("sim", "mos")}
            row["hacked"] = [k for k, floor in lost.items() if bought and row[k]["change"]["mean"] < floor]
        summary[name] = row
    return summary


def costs(arms: Sequence[Arm]) -> dict[str, Any]:
    """Each arm's updates and s/update (start-up counts); GRPO's clips scored, mean reward of its first and last 20."""
    from f5lite.config import compose_config

    result = {}
    for arm in arms:
        root, updates = Path(arm.run_dir), last_checkpoint(arm)
        configured = (root / "config.yaml").stat().st_mtime
        seconds = (root / "checkpoints" / f"step-{updates:08d}").stat().st_mtime - configured
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


def reward_markdown(result: dict[str, Any]) -> str:
    """The results as a table (means over the seeds, spread, paired change from the start)."""
    rows, duration = [], f" with the duration predictor {result['duration']}" if result.get("duration") else ""
    for name, row in result["summary"].items():
        cost, change = result["costs"].get(name, {}), row["wer"].get("change")
        moved = f"{change['mean']:+.3f} ({change['min']:+.3f}..{change['max']:+.3f})" if change else ""
        rows.append([name, cost.get("updates", 0), cost.get("seconds_per_update", ""),
                     *(f"{row[k]['mean']:.3f} ± {row[k]['sd']:.3f}" for k in METRICS), moved,
                     ", ".join(row.get("hacked", [])) or ""])  # fmt: skip
    paired_rows = [[label, *(f"{d[k]['mean']:+.3f} [{d[k]['ci95'][0]:+.3f}, {d[k]['ci95'][1]:+.3f}]" for k in METRICS)]
                   for label, d in result["paired"].items()]  # fmt: skip
    what = f"{result['minutes']} min per arm side by side; {result['limit']} held-out rows, seeds {result['seeds']}"
    lines = [*intro(result, "bench_reward", f"{what}; start {result['start']}{duration}."),
             *results.table(["model", "updates", "s/update", "WER", "SIM", "MOS", "WER change (min..max)", "flagged"], rows),
             "", "± is the spread (standard deviation) over the seeds; a change is paired by seed (same noise).", "",
             "Per held-out row (each the mean over the seeds), paired, with a 95 % bootstrap interval over the rows:", "",
             *results.table(["comparison", "WER", "SIM", "MOS"], paired_rows)]  # fmt: skip
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--arms", nargs="+", choices=sorted(ARMS), default=list(DEFAULT_ARMS),
        help=f"what to train from scratch (default: {' '.join(DEFAULT_ARMS)})")  # fmt: skip
    add("--char-corpus", type=Path, default=REPO / "runs" / "speak_corpus")
    add("--ipa-corpus", "--corpus", type=Path, default=REPO / "runs" / "speak_corpus_ipa", help="RL's with --start")
    add("--runs", nargs="+", default=[], metavar="ARM=DIR", help="score these runs, train none")
    add("--points", type=int, default=8, help="checkpoints scored per arm (default 8)")
    add("--start", type=Path, help="GRPO against plain fine-tuning from this f5lite export, not from scratch")
    add("--duration", type=Path, default=None, help="with --start: RL of this duration predictor instead")
    add("--lr", type=float, default=1e-4, help="with --start: both arms' constant learning rate (default 1e-4)")
    add("--ema-decay", type=float, default=0.9, help="with --start: both arms' EMA decay (default 0.9)")
    add("--seeds", type=int, nargs="+", default=[0, 1, 2], help="with --start: f5lite-eval noise seeds")
    add("--score-only", action="store_true", help="with --start: score the runs already in --work, train none")
    add("--spread", type=int, default=0, metavar="PROMPTS", help="with --start: the GRPO groups' spread, no training")
    bench_arms.add_arguments(parser)
    args = parser.parse_args(argv)
    args.work = args.work or REPO / "runs" / ("bench_speaks" if args.start is None else "bench_reward")
    return args


def arms_of(args: argparse.Namespace) -> list[Arm]:
    """The arms to train (`--arms`) or to score (`--runs`)."""
    corpora = {"char": args.char_corpus, "ipa": args.ipa_corpus}
    if any(o.lstrip("+~").startswith("model.") for o in args.overrides):
        raise SystemExit("bench_speaks.py: --set cannot change model.*; the recipes fix each arm's model")
    arms = []
    for name, run_dir in [item.split("=", 1) for item in args.runs] or [[n, str(args.work / n)] for n in args.arms]:
        if name not in ARMS:
            raise SystemExit(f"bench_speaks.py: unknown arm {name!r}; choose from {', '.join(ARMS)}")
        _, recipe, corpus, own = ARMS[name]
        if not (corpora[corpus] / "test" / "testset.txt").is_file():
            raise SystemExit(f"bench_speaks.py: {corpora[corpus]} is not a speak corpus; run `make speak-corpus`")
        arms.append(Arm(name=name, run_dir=str(Path(run_dir).resolve()), recipe=recipe, corpus=str(corpora[corpus]),
                        overrides=[*own, *args.overrides]))  # fmt: skip
    return arms


def curve(args: argparse.Namespace) -> int:
    """From scratch: train (unless `--runs`), score and write `bench_speaks_TAG.{json,md,png}`."""
    arms = arms_of(args)
    threads = bench_arms.launch(arms, args, None if args.runs else arm_command)
    score(arms, args.work, args.limit, args.points, args.jobs)
    result = {
        **results.run_header(["f5-tts"]), "minutes": None if args.runs else args.minutes, "threads": threads,
        "limit": args.limit, "floors": floors(Path(arms[0].corpus), args.work, args.limit),
        "arms": {arm.name: asdict(arm) for arm in arms},
    }  # fmt: skip
    bench_arms.write(args, "bench_speaks", result, markdown(result), plot=lambda path: plot(result, path))
    return 0


def reward(args: argparse.Namespace) -> int:
    """`--start`: train both arms (unless `--score-only`), score them with the start, write `bench_reward_TAG`."""
    if not (args.start / "config.json").is_file():
        raise SystemExit(f"bench_speaks.py: --start {args.start} is not an f5lite export (no config.json)")
    if args.spread:
        try:
            result = {**results.run_header(), **spread(args)}
        except ValueError as err:  # a bad --corpus or --set: one line, as the trainer words it
            raise SystemExit(f"bench_speaks.py: {err}") from None
        print(json.dumps(result, indent=2))
        bench_arms.write(args, "grpo_spread", result, None)
        return 0
    if not (args.ipa_corpus / "rl" / "prompts.txt").is_file():
        raise SystemExit(f"bench_speaks.py: {args.ipa_corpus} has no rl/prompts.txt; run `make speak-corpus`")
    if args.duration is not None and not (args.duration / "duration.json").is_file():
        raise SystemExit(f"bench_speaks.py: --duration {args.duration} holds no duration predictor (duration.json)")
    recipes = {"grpo": "duration_grpo", "finetune": "duration_small"} if args.duration else {"grpo": "grpo"}
    corpus, arms = args.ipa_corpus.resolve(), []
    for n in REWARD_ARMS:
        run_dir, recipe = str((args.work / n).resolve()), recipes.get(n, "speak_cpu")
        arms.append(Arm(name=n, run_dir=run_dir, recipe=recipe, corpus=str(corpus), overrides=arm_settings(n, args)))
    train = None if args.score_only else (lambda arm, work: bench_arms.f5lite_train(arm))
    threads = bench_arms.launch(arms, args, train)
    scores = score_seeds(model_keys(arms, args.start, args.duration, args.work), args)
    result = {
        **results.run_header(), "minutes": args.minutes, "threads": threads,
        "limit": args.limit, "seeds": args.seeds, "start": str(args.start), "lr": args.lr,
        "duration": str(args.duration) if args.duration else None,
        "arms": {arm.name: {"overrides": arm.overrides, "returncode": arm.returncode, "error": arm.error} for arm in arms},
        "costs": costs(arms), "scores": scores, "summary": summarize(scores),
        "paired": {f"{a} - {b}": paired(args.work, a, b, args.seeds)
                   for a, b in (("grpo", "start"), ("finetune", "start"), ("grpo", "finetune"))},
    }  # fmt: skip
    bench_arms.write(args, "bench_reward", result, reward_markdown(result))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """From scratch, or from `--start`; write the results."""
    args = parse_args(argv)
    return curve(args) if args.start is None else reward(args)


if __name__ == "__main__":
    sys.exit(main())
