"""Training arms side by side for a wall-clock budget, then scored by `f5lite-eval` (bench_speaks, bench_reward).

All arms are launched together, each with an equal share of the cores, and stopped together when the budget ends
(SIGTERM: f5lite saves a last checkpoint, F5-TTS keeps its last numbered one). Scoring runs the f5lite commands
installed beside this Python, as a user runs them (`evaluate`, also eval_paths').
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import results
from benchmarks.runner import threads_env

REPO = Path(__file__).resolve().parents[1]
STOP_GRACE_S = 90
"""How long an arm may take to stop after SIGTERM (f5lite writes its last checkpoint) before it is killed."""
STOPPED = (0, 128 + signal.SIGTERM, -signal.SIGTERM)
"""Exit statuses of an arm that finished or was stopped at the budget (f5lite exits 143 after its last save)."""


@dataclass
class Arm:
    """One arm's run (its recipe, corpus and own overrides), how it ended, and its scored checkpoints (`points`)."""

    name: str
    run_dir: str
    recipe: str
    corpus: str
    overrides: list[str] = field(default_factory=list)
    points: list[dict[str, Any]] = field(default_factory=list)
    launched: float | None = None
    stopped_after_s: float | None = None
    returncode: int | None = None
    error: str | None = None


def f5lite_train(arm: Arm, *extra: str) -> list[str]:
    """`python -m f5lite.train` with the arm's recipe, run directory, `extra` and its overrides."""
    return [sys.executable, "-m", "f5lite.train", f"+recipe={arm.recipe}", *extra, f"run_dir={arm.run_dir}",
            "logger.backend=none", *arm.overrides]  # fmt: skip


def train(arms: Sequence[Arm], minutes: float, threads: int, work: Path,
          command_of: Callable[[Arm, Path], list[str]]) -> None:  # fmt: skip
    """Launch every arm at once (`command_of(arm, its own work folder)`), stop them all after `minutes`, wait.

    Each arm's log is `work/NAME.log`; its last line is the arm's `error` when it failed.
    """
    procs = []
    for arm in arms:
        (arm_work := work / f"{arm.name}.work").mkdir(parents=True, exist_ok=True)
        command = command_of(arm, arm_work)
        log = (work / f"{arm.name}.log").open("w", encoding="utf-8")
        arm.launched = time.time()
        proc = subprocess.Popen(command, env=threads_env(threads), stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        procs.append((arm, proc))
        print(f"bench: {arm.name} launched ({threads} thread(s)): {' '.join(command)}", flush=True)  # noqa: T201
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
        arm.stopped_after_s = time.time() - (arm.launched or 0.0)
        print(f"bench: {arm.name} stopped after {arm.stopped_after_s / 60:.1f} min (rc {arm.returncode})")  # noqa: T201
        if arm.returncode not in STOPPED:
            lines = (work / f"{arm.name}.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()
            arm.error = lines[-1] if lines else f"exit status {arm.returncode}"
            print(f"bench: {arm.name} failed: {arm.error}", file=sys.stderr)  # noqa: T201


def tool(name: str) -> str:
    """An f5lite command installed beside this Python (as a user runs it)."""
    return str(Path(sys.executable).parent / name)


def run_tool(command: list[str], threads: int = 1) -> None:
    """Run an f5lite command with `threads` threads; a RuntimeError ending with its last line of output if it fails."""
    done = subprocess.run(command, env=threads_env(threads), cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"{' '.join(command[:4])} ... failed: {tail[0]}")


def export(run_dir: str, step: int, out: Path) -> Path:
    """`f5lite-export` of the run's checkpoint at `step` into `out`, unless it is there already."""
    if not out.exists():
        run_tool([tool("f5lite-export"), run_dir, "--step", str(step), "--out", str(out)])
    return out


def eval_keys(corpus: Path, out: Path, limit: int) -> list[str]:
    """The f5lite-eval keys of a corpus's scoring: test set, recogniser, metrics, vocoder, rows (and its voices).

    A corpus with an enrollment list (`make clone-corpus`'s `test/voices.txt`) is scored for cloning too.
    """
    voices = corpus / "test" / "voices.txt"
    cloning = [f"voices={voices}"] if voices.is_file() else []
    return [f"testset={corpus / 'test' / 'testset.txt'}", f"output={out}", "metrics=[wer,sim,mos]",
            f"asr=pocketsphinx:{corpus / 'asr'}", "sample.vocoder=griffin_lim", f"limit={limit}", *cloning]  # fmt: skip


def evaluate(command: list[str], out: Path, threads: int = 1) -> dict[str, Any]:
    """Run an `f5lite-eval` command that writes into `out`; its `summary.json`.

    Run even where `out` holds an earlier summary: f5lite-eval keeps the rows it scored there with the same settings,
    scores the rest, and refuses a folder scored with other settings, so a rerun never reads a stale summary.
    """
    run_tool(command, threads)
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of every arms benchmark: budget, threads, scoring, overrides, and where its files go."""
    add = parser.add_argument
    add("--minutes", type=float, default=45.0, help="wall-clock budget of every arm (default 45)")
    add("--threads", type=int, default=None, help="threads per arm (default: cores / arms)")
    add("--limit", type=int, default=30, help="held-out rows scored (default 30)")
    add("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="f5lite-eval processes")
    add("--set", nargs="+", default=[], metavar="KEY=VALUE", dest="overrides", help="training overrides, every arm")
    add("--work", type=Path, default=None, help="runs and scores (default runs/BENCH)")
    add("--out-dir", type=Path, default=None, help="write BENCH_TAG.{json,md} here (default --work)")
    add("--tag", default="cpu", help="results file suffix (default cpu)")


def launch(arms: Sequence[Arm], args: argparse.Namespace, command_of: Callable[[Arm, Path], list[str]] | None) -> int:
    """Train the arms for `--minutes` (none when `command_of` is None; never over a run); the threads per arm."""
    threads = args.threads or max(1, (os.cpu_count() or 1) // len(arms))
    args.work.mkdir(parents=True, exist_ok=True)
    if command_of is not None:
        if existing := [arm.run_dir for arm in arms if Path(arm.run_dir).exists()]:
            raise SystemExit(f"{existing[0]} exists; remove it or give another --work")
        train(arms, args.minutes, threads, args.work, command_of)
    return threads


def parallel(fn: Callable[[Any], Any], tasks: Iterable[Any], jobs: int) -> list[Any]:
    """`fn` of every task, `jobs` at a time (each task runs an f5lite-eval process)."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(fn, tasks))


def write(args: argparse.Namespace, name: str, result: dict[str, Any], page: str | None, plot: Any = None) -> None:
    """Write `NAME_TAG.json` (with `page`: `.md`; with `plot`: its `.png`) into `--out-dir`, else `--work`."""
    stem = (args.out_dir or args.work) / f"{name}_{args.tag}"
    results.write_results(stem.with_suffix(".json"), result, page, plot=plot)
    print(f"{name}: wrote {stem}.json" + (" and .md" if page else "") + (", .png" if plot else ""))  # noqa: T201
