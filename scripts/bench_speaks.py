"""When does a model trained from scratch start to say words? Held-out WER / SIM / MOS against minutes and updates.

    make speak-corpus
    PYTHONPATH=.f5tts python scripts/bench_speaks.py --minutes 45 --out-dir scripts/results

Issue 41's curve. The arms (`--arms`, `ARMS`) train from scratch side by side for the same wall-clock budget, each
with an equal share of the cores (`benchmarks.arms`); `f5tts` is F5-TTS's own `Trainer` as `compare_f5tts_run.py`
runs it, with speak_cpu_char's model, vocab and settings. Then up to `--points` kept checkpoints per arm (evenly
spread, the last always) are scored by `f5lite-eval` on the first `--limit` held-out rows (WER through the corpus's
recogniser vocabulary, SIM, MOS, Griffin-Lim), beside the floors: the test set's own recordings, as recorded and
through log-mel and Griffin-Lim. A checkpoint's minute is its file's time after the arm's launch. `--runs ARM=DIR`
scores runs already made without training.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks import arms as bench_arms
from benchmarks import f5tts, results
from benchmarks.arms import Arm, Point, eval_keys, evaluate, tool

REPO = Path(__file__).resolve().parent.parent
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
    f5 = ARMS[arm.name][0] == "f5tts"
    pattern, paths = (
        (F5TTS_STEP, root.glob("model_*.pt")) if f5 else (F5LITE_STEP, (root / "checkpoints").glob("step-*"))
    )
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


def eval_command(arm: Arm, step: int, path: Path, work: Path, limit: int) -> tuple[list[str], Path]:
    """The f5lite-eval command that scores one checkpoint (an f5lite one through its export)."""
    corpus, out = Path(arm.corpus), work / "eval" / f"{arm.name}-{step:08d}"
    if ARMS[arm.name][0] == "f5tts":
        model = [f"model={path}", f"recipe={arm.recipe}", f"vocab={corpus / 'vocab.txt'}"]
    else:
        model = [f"model={bench_arms.export(arm.run_dir, step, work / 'exports' / f'{arm.name}-{step:08d}')}"]
    return [tool("f5lite-eval"), *model, *eval_keys(corpus, out, limit), "floor_vocoder=none"], out


def cloning_means(summary: dict[str, Any]) -> tuple[float | None, float | None]:
    """The output's calibrated similarity and top-1 identification on the held-out voices (all rows when the test
    set has none held out), or Nones without cloning metrics."""
    if not (cloning := summary.get("cloning")):
        return None, None
    output = (cloning["by_split"].get("held_out") or cloning["overall"]).get("output") or {}
    return output.get("sim_calibrated"), output.get("top1")


def score(arms: Sequence[Arm], work: Path, limit: int, points: int, jobs: int) -> None:
    """Score up to `points` checkpoints of every arm, `jobs` f5lite-eval processes at a time."""
    tasks = []
    for arm in arms:
        for step, path, seconds in pick(checkpoints(arm), points):
            arm.points.append(point := Point(update=step, minutes=round(seconds / 60, 2)))
            tasks.append((arm, point, path))

    def one(task: tuple[Arm, Point, Path]) -> None:
        arm, point, path = task
        summary = evaluate(*eval_command(arm, point.update, path, work, limit))
        means = summary["means"]
        point.wer, point.sim, point.mos = means.get("wer"), means.get("sim"), means.get("mos")
        point.sim_calibrated, point.top1 = cloning_means(summary)
        print(f"bench_speaks: {arm.name} update {point.update} ({point.minutes} min): WER {point.wer}", flush=True)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, tasks))


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
    plt = results.pyplot()
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
    machine = result["header"]["machine"]
    fig.suptitle(f"From scratch on {machine['logical_cores']} cores of {machine['cpu']}, {result['header']['date'][:10]}"
                 f" ({result['threads']} thread(s) per arm)", fontsize=10)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown(result: dict[str, Any]) -> str:
    """The curve as a table per arm, with the floors."""
    header = result["header"]
    budget = f"{result['minutes']} min" if result["minutes"] else "none (runs made apart, scored with --runs)"
    lines = [f"# bench_speaks: {header['date']}", "",
             f"{header['machine']['cpu']} ({', '.join(result['cpu_flags'])}), {header['machine']['logical_cores']} "
             f"logical cores; {result['threads']} thread(s) per arm; budget: {budget}; {result['limit']} held-out rows.",
             ""]  # fmt: skip
    for key, values in (result.get("floors") or {}).items():
        if values and key != "cloning":
            lines.append(f"- floor, {key}: WER {_fmt(values.get('wer'))}, SIM {_fmt(values.get('sim'))}, "
                         f"MOS {_fmt(values.get('mos'))}")  # fmt: skip
    for name, arm in result["arms"].items():
        overrides = "".join(f", {o}" for o in arm.get("overrides") or [])
        rows = [[p["update"], p["minutes"], *(_fmt(p.get(k)) for k in ("wer", "sim", "mos", "sim_calibrated", "top1"))]
                for p in arm["points"]]  # fmt: skip
        head = ["update", "minutes", "WER", "SIM", "MOS", "calibrated SIM", "top-1"]
        lines += [
            "",
            f"## {name} (recipe {arm['recipe']}{overrides}, {arm['corpus']})",
            "",
            *results.table(head, rows, "r" * 7),
        ]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--arms", nargs="+", choices=sorted(ARMS), default=list(DEFAULT_ARMS),
        help=f"what to train (default: {' '.join(DEFAULT_ARMS)})")  # fmt: skip
    add("--minutes", type=float, default=45.0, help="wall-clock budget of every arm (default 45)")
    add("--threads", type=int, default=None, help="threads per arm (default: cores / arms)")
    add("--char-corpus", type=Path, default=REPO / "runs" / "speak_corpus")
    add("--ipa-corpus", type=Path, default=REPO / "runs" / "speak_corpus_ipa")
    add("--runs", nargs="+", default=[], metavar="ARM=DIR", help="score these runs, train none")
    add("--set", nargs="+", default=[], metavar="KEY=VALUE", dest="overrides",
        help="training overrides for every arm (not model.*: the recipes fix the model)")  # fmt: skip
    add("--limit", type=int, default=30, help="held-out rows scored per checkpoint (default 30)")
    add("--points", type=int, default=8, help="checkpoints scored per arm (default 8)")
    add("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="f5lite-eval processes")
    add("--work", type=Path, default=REPO / "runs" / "bench_speaks", help="runs and scores")
    add("--out-dir", type=Path, default=None, help="write bench_speaks.{json,md,png} here")
    add("--tag", default="cpu", help="results file suffix (default cpu)")
    return parser.parse_args(argv)


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


def main(argv: Sequence[str] | None = None) -> int:
    """Train (unless `--runs`), score and write `bench_speaks_TAG.{json,md,png}`."""
    args = parse_args(argv)
    arms = arms_of(args)
    threads = args.threads or max(1, (os.cpu_count() or 1) // len(arms))
    args.work.mkdir(parents=True, exist_ok=True)
    if not args.runs:
        if existing := [arm.run_dir for arm in arms if Path(arm.run_dir).exists()]:
            raise SystemExit(f"bench_speaks.py: {existing[0]} exists; remove it or give another --work")
        bench_arms.train(arms, args.minutes, threads, args.work, arm_command)
    score(arms, args.work, args.limit, args.points, args.jobs)
    result = {
        "header": results.run_header(["f5-tts"]), "cpu_flags": results.cpu_flags(),
        "minutes": None if args.runs else args.minutes, "threads": threads, "limit": args.limit,
        "floors": floors(Path(arms[0].corpus), args.work, args.limit), "arms": {arm.name: asdict(arm) for arm in arms},
    }  # fmt: skip
    stem = (args.out_dir or args.work) / f"bench_speaks_{args.tag}"
    results.write_results(stem.with_suffix(".json"), result, markdown(result), plot=lambda path: plot(result, path))
    print(f"bench_speaks: wrote {stem}.{{json,md,png}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
