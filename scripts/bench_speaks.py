"""When does a model trained from scratch start to say words? Held-out WER / SIM / MOS against minutes and updates.

Issue 41's curve. Each arm trains from scratch on `make speak-corpus`'s data, in its own process, all arms launched
together for the same wall-clock budget (`--minutes`), each with an equal share of the cores (`--threads`, default
the CPU count divided among the arms, at least 1); at the end of the budget every arm is stopped (SIGTERM: f5lite
saves a last checkpoint, F5-TTS keeps its last numbered one). Then every kept checkpoint (at most `--points` per
arm, evenly spread, the last always) is scored by `f5lite-eval` on the first `--limit` rows of the held-out test
set: WER through the corpus's recogniser vocabulary (`asr=pocketsphinx:CORPUS/asr`), SIM (Resemblyzer), MOS
(DNSMOS), speech made with the sampler's defaults and Griffin-Lim. The floors are the test set's own recordings,
scored the same way, as recorded and through log-mel and Griffin-Lim (the model's speech goes through it too).

Arms (`--arms`):
  f5lite       `python -m f5lite.train +recipe=speak_cpu` (IPA phonemes, text spread over the frames)
  f5lite-char  `python -m f5lite.train +recipe=speak_cpu_char` (characters, F5-TTS's text padding)
  f5tts        F5-TTS's own `Trainer` (as `compare_f5tts_run.py` runs it: its dataset format, its train.py's
               model, tokenizer and dataset) with speak_cpu_char's model, characters and vocab, batch in frames,
               learning rate, warm-up, EMA, precision and checkpoint interval; a checkpoint every
               `ckpt.every` updates, all kept; epochs enough for the recipe's `optim.max_updates`.
  f5lite-ipa-pad, f5lite-char-spread   one lever each: IPA with F5-TTS's padding; characters spread (not default)
F5-TTS is not a dependency: `make bench-speaks` installs it beside (`.f5tts`) and puts it on PYTHONPATH.

A checkpoint's minute is its file's time after the arm's launch, so start-up and saving count. `--runs ARM=DIR`
scores runs already made (e.g. `python -m f5lite.train +recipe=speak_cpu` alone on the whole machine) without
training. Results (JSON, Markdown, PNG) go to `--out-dir` with the machine, its CPU and the date.

    make speak-corpus
    PYTHONPATH=.f5tts python scripts/bench_speaks.py --minutes 45 --out-dir scripts/results
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent
ARMS = {
    "f5lite": ("f5lite", "speak_cpu", "ipa", ()),
    "f5lite-char": ("f5lite", "speak_cpu_char", "char", ()),
    "f5tts": ("f5tts", "speak_cpu_char", "char", ()),
    "f5lite-ipa-pad": ("f5lite", "speak_cpu", "ipa", ("model.text_fit=pad",)),
    "f5lite-char-spread": ("f5lite", "speak_cpu_char", "char", ("model.text_fit=spread",)),
}
"""Arm name -> (trainer, recipe, corpus, the arm's own overrides). The last two isolate one lever each."""
DEFAULT_ARMS = ("f5lite", "f5lite-char", "f5tts")
STOP_GRACE_S = 90
"""How long an arm may take to stop after SIGTERM (f5lite writes its last checkpoint) before it is killed."""
STOPPED = (0, 128 + signal.SIGTERM, -signal.SIGTERM)
"""Exit statuses of an arm that finished or was stopped at the budget (f5lite exits 143 after its last save)."""
F5LITE_STEP = re.compile(r"step-(\d+)$")
F5TTS_STEP = re.compile(r"model_(\d+)\.pt$")


@dataclass
class Point:
    """One scored checkpoint."""

    update: int
    minutes: float
    wer: float | None = None
    sim: float | None = None
    mos: float | None = None
    sim_calibrated: float | None = None
    top1: float | None = None


@dataclass
class Arm:
    """One arm's run and its curve."""

    name: str
    run_dir: str
    recipe: str
    corpus: str
    overrides: list[str] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    launched: float | None = None
    stopped_after_s: float | None = None
    returncode: int | None = None
    error: str | None = None


# ------------------------------------------------------------------------------------------------- training


def f5lite_command(arm: Arm) -> list[str]:
    """`python -m f5lite.train` with the arm's recipe on its corpus (how a user runs the recipe)."""
    return [sys.executable, "-m", "f5lite.train", f"+recipe={arm.recipe}", f"data.dir={arm.corpus}",
            f"run_dir={arm.run_dir}", "logger.backend=none", *arm.overrides]  # fmt: skip


def f5tts_command(arm: Arm, work: Path) -> list[str]:
    """F5-TTS's `Trainer` through `compare_f5tts_run.py`'s child, on F5-TTS's format of the corpus's clips."""
    sys.path.insert(0, str(SCRIPTS))
    import torch
    from compare_f5tts_run import demo_clips, f5tts_batches, write_f5tts_dataset

    from f5lite.config import compose_config
    from f5lite.models import backbone_kwargs
    from f5lite.train.precision import choose_precision

    cfg = compose_config([f"+recipe={arm.recipe}", *arm.overrides])
    corpus = Path(arm.corpus)
    data = work / "f5tts_data"
    durations = write_f5tts_dataset(demo_clips(corpus), data)
    (data / "vocab.txt").write_text((corpus / "vocab.txt").read_text(encoding="utf-8"), encoding="utf-8")
    model = backbone_kwargs(cfg.model, text_num_embeds=1)
    for key in ("text_num_embeds", "mel_dim", "text_fit"):  # the vocab size comes from vocab.txt, as in train.py
        model.pop(key)
    per_epoch = f5tts_batches(durations, cfg.data.frames_per_gpu, cfg.data.max_samples)
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
    spec_path = work / "f5tts_spec.json"
    spec_path.write_text(json.dumps(spec, indent=1), encoding="utf-8")
    events = work / "f5tts_events.json"
    return [sys.executable, str(SCRIPTS / "compare_f5tts_run.py"), "--child", "f5tts", str(spec_path), str(events)]


def arm_command(arm: Arm, work: Path) -> list[str]:
    """The command that trains one of this bench's arms (`work`: a folder of its own for what it needs)."""
    return f5tts_command(arm, work) if ARMS[arm.name][0] == "f5tts" else f5lite_command(arm)


def train(
    arms: Sequence[Arm], minutes: float, threads: int, work: Path,
    command_of: Callable[[Arm, Path], list[str]] = arm_command,
) -> None:  # fmt: skip
    """Launch every arm at once (`command_of` gives each one's command), stop them all after `minutes`, wait."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    procs = []
    for arm in arms:
        arm_work = work / f"{arm.name}.work"
        arm_work.mkdir(parents=True, exist_ok=True)
        command = command_of(arm, arm_work)
        log = (work / f"{arm.name}.log").open("w", encoding="utf-8")
        arm.launched = time.time()
        procs.append((arm, subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)))
        print(f"bench: {arm.name} launched ({threads} thread(s)): {' '.join(command)}", flush=True)
    deadline = time.time() + minutes * 60
    while time.time() < deadline and any(p.poll() is None for _, p in procs):
        time.sleep(5)
    for _, proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for arm, proc in procs:
        try:
            arm.returncode = proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            arm.returncode = proc.wait()
        assert arm.launched is not None
        arm.stopped_after_s = time.time() - arm.launched
        print(f"bench: {arm.name} stopped after {arm.stopped_after_s / 60:.1f} min (rc {arm.returncode})")
        if arm.returncode not in STOPPED:
            lines = (work / f"{arm.name}.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()
            arm.error = lines[-1] if lines else f"exit status {arm.returncode}"
            print(f"bench: {arm.name} failed: {arm.error}", file=sys.stderr)


# -------------------------------------------------------------------------------------------------- scoring


def checkpoints(arm: Arm) -> list[tuple[int, Path, float]]:
    """The arm's kept checkpoints: (update, path, seconds after launch, from the file's time), in update order."""
    root = Path(arm.run_dir)
    found = []
    if ARMS[arm.name][0] == "f5tts":
        for path in root.glob("model_*.pt"):
            if m := F5TTS_STEP.search(path.name):
                found.append((int(m.group(1)), path))
    else:
        for path in (root / "checkpoints").glob("step-*"):
            if m := F5LITE_STEP.search(path.name):
                found.append((int(m.group(1)), path))
    launched = arm.launched if arm.launched is not None else _first_mtime(root)
    return sorted((step, path, path.stat().st_mtime - launched) for step, path in found)


def _first_mtime(root: Path) -> float:
    """Launch time of a run made elsewhere: its config file's time (written before the first update)."""
    config = root / "config.yaml"
    return config.stat().st_mtime if config.exists() else min(p.stat().st_mtime for p in root.iterdir())


def pick(items: Sequence[Any], count: int) -> list[Any]:
    """At most `count` of `items`, evenly spread, the last always included."""
    if len(items) <= count:
        return list(items)
    chosen = {round(i * (len(items) - 1) / (count - 1)) for i in range(count)}
    return [items[i] for i in sorted(chosen)]


def eval_command(arm: Arm, step: int, path: Path, work: Path, limit: int) -> tuple[list[str], Path]:
    """The f5lite-eval command that scores one checkpoint (an f5lite one through its export)."""
    corpus = Path(arm.corpus)
    out = work / "eval" / f"{arm.name}-{step:08d}"
    if ARMS[arm.name][0] == "f5tts":
        model = [f"model={path}", f"recipe={arm.recipe}", f"vocab={corpus / 'vocab.txt'}"]
    else:
        export = work / "exports" / f"{arm.name}-{step:08d}"
        if not export.exists():
            _run([tool("f5lite-export"), arm.run_dir, "--step", str(step), "--out", str(export)])
        model = [f"model={export}"]
    return [tool("f5lite-eval"), *model, *eval_keys(corpus, out, limit), "floor_vocoder=none"], out


def tool(name: str) -> str:
    """An f5lite command installed beside this Python (as a user runs it)."""
    return str(Path(sys.executable).parent / name)


def eval_keys(corpus: Path, out: Path, limit: int) -> list[str]:
    """The f5lite-eval keys every scoring shares: test set, recogniser vocabulary, metrics, vocoder, rows; and the
    corpus's enrollment list (`make clone-corpus`'s `test/voices.txt`) when it has one, for the cloning metrics."""
    voices = corpus / "test" / "voices.txt"
    cloning = [f"voices={voices}"] if voices.is_file() else []
    return [f"testset={corpus / 'test' / 'testset.txt'}", f"output={out}", "metrics=[wer,sim,mos]",
            f"asr=pocketsphinx:{corpus / 'asr'}", "vocoder=griffin_lim", f"limit={limit}", *cloning]  # fmt: skip


def cloning_means(summary: dict[str, Any]) -> tuple[float | None, float | None]:
    """The output's calibrated similarity and top-1 identification on the held-out voices (all rows when the test
    set has none held out), or Nones without cloning metrics."""
    cloning = summary.get("cloning")
    if not cloning:
        return None, None
    scope = cloning["by_split"].get("held_out") or cloning["overall"]
    output = scope.get("output") or {}
    return output.get("sim_calibrated"), output.get("top1")


def evaluate(command: list[str], out: Path, threads: int = 1) -> dict[str, Any]:
    """Run an `f5lite-eval` command that writes into `out`; returns its `summary.json`.

    Run even where `out` holds an earlier run's summary: f5lite-eval keeps the rows it scored there with the same
    settings, scores the rest of `limit`, and refuses a folder scored with other settings (another model), so a
    rerun with another `--limit` or `--start` never reads a stale summary.
    """
    _run(command, threads)
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _run(command: list[str], threads: int = 1) -> None:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"{' '.join(command[:4])} ... failed: {tail[0]}")


def score(arms: Sequence[Arm], work: Path, limit: int, points: int, jobs: int) -> None:
    """Score up to `points` checkpoints of every arm, `jobs` f5lite-eval processes at a time."""
    tasks = []
    for arm in arms:
        for step, path, seconds in pick(checkpoints(arm), points):
            point = Point(update=step, minutes=round(seconds / 60, 2))
            arm.points.append(point)
            tasks.append((arm, point, path))

    def one(task: tuple[Arm, Point, Path]) -> None:
        arm, point, path = task
        command, out = eval_command(arm, point.update, path, work, limit)
        summary = evaluate(command, out)
        means = summary["means"]
        point.wer, point.sim, point.mos = means.get("wer"), means.get("sim"), means.get("mos")
        point.sim_calibrated, point.top1 = cloning_means(summary)
        print(f"bench_speaks: {arm.name} update {point.update} ({point.minutes} min): WER {point.wer}", flush=True)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, tasks))


def floors(corpus: Path, work: Path, limit: int) -> dict[str, Any]:
    """The test set's own recordings scored as the models are: as recorded, and through log-mel and Griffin-Lim."""
    out = work / "eval" / "ground_truth"
    keys = [k for k in eval_keys(corpus, out, limit) if not k.startswith("vocoder=")]
    command = [tool("f5lite-eval"), f"audio_dir={corpus / 'test' / 'audio'}", *keys, "floor_vocoder=griffin_lim"]
    summary = evaluate(command, out, threads=2)
    floor = {"recorded": summary["means"], "vocoded": summary.get("ground_truth_vocoded")}
    if summary.get("cloning"):
        floor["cloning"] = summary["cloning"]["by_split"]
    return floor


# -------------------------------------------------------------------------------------------------- results


def cpu_flags() -> list[str]:
    """The CPU's vector extensions that decide the speed of fp32 and bf16 (AVX2, AVX-512, AVX-512 BF16, AMX)."""
    wanted = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return []
    flags = set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))
    return [f for f in wanted if f in flags]


def plot(result: dict[str, Any], path: Path) -> None:
    """Draw the curves: WER against minutes and updates, SIM and MOS against minutes, the floors as level lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    titles = (("held-out WER", "minutes"), ("held-out WER", "updates"), ("SIM", "minutes"), ("MOS (DNSMOS)", "minutes"))
    for ax, (title, xlabel) in zip([a for row in axes for a in row], titles, strict=True):
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    for name, arm in result["arms"].items():
        points = [p for p in arm["points"] if p["wer"] is not None]
        minutes = [p["minutes"] for p in points]
        updates = [p["update"] for p in points]
        axes[0][0].plot(minutes, [p["wer"] for p in points], marker="o", label=name)
        axes[0][1].plot(updates, [p["wer"] for p in points], marker="o", label=name)
        axes[1][0].plot(minutes, [p["sim"] for p in points], marker="o", label=name)
        axes[1][1].plot(minutes, [p["mos"] for p in points], marker="o", label=name)
    floor = result.get("floors") or {}
    for key, style, label in (("recorded", "--", "recordings"), ("vocoded", ":", "recordings via Griffin-Lim")):
        values = floor.get(key) or {}
        for ax, metric in ((axes[0][0], "wer"), (axes[0][1], "wer"), (axes[1][0], "sim"), (axes[1][1], "mos")):
            if values.get(metric) is not None:
                ax.axhline(values[metric], color="gray", linestyle=style, label=f"{label} ({values[metric]:.3f})")
    axes[0][0].set_ylim(bottom=0)
    axes[0][0].legend(fontsize=8)
    machine = result["header"]["machine"]
    fig.suptitle(f"From scratch on {machine['logical_cores']} cores of {machine['cpu']}, {result['header']['date'][:10]}"
                 f" ({result['threads']} thread(s) per arm)", fontsize=10)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


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
        lines += ["", f"## {name} (recipe {arm['recipe']}{overrides}, {arm['corpus']})", "",
                  "| update | minutes | WER | SIM | MOS | calibrated SIM | top-1 |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
        lines += [f"| {p['update']} | {p['minutes']} | {_fmt(p['wer'])} | {_fmt(p['sim'])} | {_fmt(p['mos'])} | "
                  f"{_fmt(p.get('sim_calibrated'))} | {_fmt(p.get('top1'))} |" for p in arm["points"]]  # fmt: skip
    return "\n".join(lines) + "\n"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


# ----------------------------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--arms",
        nargs="+",
        choices=sorted(ARMS),
        default=list(DEFAULT_ARMS),
        help=f"what to train (default: {' '.join(DEFAULT_ARMS)})",
    )
    parser.add_argument("--minutes", type=float, default=45.0, help="wall-clock budget of every arm (default 45)")
    parser.add_argument("--threads", type=int, default=None, help="threads per arm (default: cores / arms)")
    parser.add_argument("--char-corpus", type=Path, default=REPO / "runs" / "speak_corpus")
    parser.add_argument("--ipa-corpus", type=Path, default=REPO / "runs" / "speak_corpus_ipa")
    parser.add_argument("--runs", nargs="+", default=[], metavar="ARM=DIR", help="score these runs, train none")
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="training overrides for every arm (not model.*: the recipes fix the model)",
    )
    parser.add_argument("--limit", type=int, default=30, help="held-out rows scored per checkpoint (default 30)")
    parser.add_argument("--points", type=int, default=8, help="checkpoints scored per arm (default 8)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="f5lite-eval processes")
    parser.add_argument("--work", type=Path, default=REPO / "runs" / "bench_speaks", help="runs and scores")
    parser.add_argument("--out-dir", type=Path, default=None, help="write bench_speaks.{json,md,png} here")
    parser.add_argument("--tag", default="cpu", help="results file suffix (default cpu)")
    return parser.parse_args(argv)


def arms_of(args: argparse.Namespace) -> list[Arm]:
    """The arms to train (`--arms`) or to score (`--runs`)."""
    corpora = {"char": args.char_corpus, "ipa": args.ipa_corpus}
    if any(o.lstrip("+~").startswith("model.") for o in args.overrides):
        raise SystemExit("bench_speaks.py: --set cannot change model.*; the recipes fix each arm's model")
    chosen = [item.split("=", 1) for item in args.runs] or [[n, str(args.work / n)] for n in args.arms]
    arms = []
    for name, run_dir in chosen:
        if name not in ARMS:
            raise SystemExit(f"bench_speaks.py: unknown arm {name!r}; choose from {', '.join(ARMS)}")
        _, recipe, corpus, own = ARMS[name]
        if not (corpora[corpus] / "test" / "testset.txt").is_file():
            raise SystemExit(f"bench_speaks.py: {corpora[corpus]} is not a speak corpus; run `make speak-corpus`")
        arms.append(Arm(name=name, run_dir=str(Path(run_dir).resolve()), recipe=recipe, corpus=str(corpora[corpus]),
                        overrides=[*own, *args.overrides]))  # fmt: skip
    return arms


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from f5lite.bench.sidebyside import run_header

    arms = arms_of(args)
    threads = args.threads or max(1, (os.cpu_count() or 1) // len(arms))
    args.work.mkdir(parents=True, exist_ok=True)
    if not args.runs:
        for arm in arms:
            if Path(arm.run_dir).exists():
                raise SystemExit(f"bench_speaks.py: {arm.run_dir} exists; remove it or give another --work")
        train(arms, args.minutes, threads, args.work)
    score(arms, args.work, args.limit, args.points, args.jobs)
    result = {
        "header": run_header(["f5-tts"]), "cpu_flags": cpu_flags(), "minutes": None if args.runs else args.minutes, "threads": threads,
        "limit": args.limit, "floors": floors(Path(arms[0].corpus), args.work, args.limit),
        "arms": {arm.name: asdict(arm) for arm in arms},
    }  # fmt: skip
    out = args.out_dir or args.work
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"bench_speaks_{args.tag}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    plot(result, stem.with_suffix(".png"))
    print(f"bench_speaks: wrote {stem}.{{json,md,png}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
