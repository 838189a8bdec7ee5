"""Does training start, and stay within memory, on a CutSet of millions of cuts? Start-up time and peak RSS.

Writes a CutSet of N cuts (default 2,000,000) that point at a few real demo utterances, each cut as
`f5lite-prepare` writes it (`make_cut` with `token_ids` and `frames`, unique ids, `write_cuts`), and a baseline
CutSet of 1,000 cuts, then trains on each for a few updates with the `debug_tiny` recipe and 2 loader workers:

    python scripts/scale_data.py                       # 2,000,000 cuts against 1,000 (the file is kept in /tmp)
    python scripts/scale_data.py --cuts 2000 --out-dir /tmp/x   # a tiny check

Each run is `python -m f5lite.train +recipe=debug_tiny data.dir=CUTS data.vocab=DEMO/vocab.txt data.num_workers=2
optim.max_updates=3 ckpt.every=100 logger.every=1 run_dir=TMP`, launched through this script's `--child` mode, which
runs that very command line (`f5lite.train.cli.main`) with `Trainer.train_update` wrapped to note when the first
optimizer update completes and to read the peak RSS (`VmHWM`) of the main process and of each loader worker (its
children) after every update, before the loader is shut down. Measured per run: seconds from launching the process
to the end of the first update (split into imports, `Trainer(...)`, waiting for the first batch, the update), and
the peak RSS of every process. The goals: training starts within 60 s, and no process peaks more than 1 GB higher
with N cuts than with 1,000. The results go to `scripts/results/scale_cpu.json` and `.md`.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from f5lite.bench import sidebyside as sbs

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CACHE = Path(tempfile.gettempdir()) / "f5lite_scale_data"
START_GOAL_S = 60.0
"""Training must complete its first optimizer update within this many seconds of launch."""
MEMORY_GOAL_BYTES = 1_000_000_000
"""No process may peak more than this much higher with N cuts than with the baseline."""


def _sibling(name: str) -> ModuleType:
    """Another script of this folder, loaded from its file (`scripts` is not a package)."""
    spec = importlib.util.spec_from_file_location(f"_f5lite_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The /proc readings are bench_data.py's.
_bench_data = _sibling("bench_data")
peak_rss = _bench_data.peak_rss
forked_children = _bench_data.forked_children


# ------------------------------------------------------------------------------------------------- the cuts


def demo_dir() -> Path:
    from f5lite.paths import demo_dir as find

    return find()


def scaled_cuts(n: int, clips: int = 8) -> Iterator[object]:
    """`n` cuts cycling over the first `clips` demo utterances, with unique ids, as `f5lite-prepare` writes them.

    The audio paths are absolute (the CutSet lives outside the demo folder); `token_ids` are the demo's own, so
    `data.vocab` must be the demo's `vocab.txt`.
    """
    from lhotse import CutSet

    from f5lite.data.cuts import FRAMES, TOKEN_IDS, make_cut, text_of

    demo = demo_dir()
    templates = []
    for cut in CutSet.from_jsonl_lazy(demo / "cuts.jsonl.gz"):
        recording = cut.recording
        templates.append(
            {
                "source": str(demo / recording.sources[0].source),
                "sample_rate": recording.sampling_rate,
                "num_samples": recording.num_samples,
                "channels": len(recording.channel_ids),
                "text": text_of(cut),
                "speaker": cut.supervisions[0].speaker,
                "token_ids": cut.custom[TOKEN_IDS],
                "frames": cut.custom[FRAMES],
            }
        )
        if len(templates) == clips:
            break
    width = len(str(n - 1))
    for i in range(n):
        template = dict(templates[i % len(templates)])
        yield make_cut(f"scale/{i:0{width}d}", template.pop("source"), **template)


def cuts_file(n: int, cache: Path) -> tuple[Path, float]:
    """The CutSet of `n` cuts in `cache` (written once, then reused) and the seconds spent writing it now."""
    from f5lite.data.cuts import write_cuts

    # The cuts name the demo audio by absolute path: another checkout gets its own file.
    tag = hashlib.sha1(str(demo_dir()).encode()).hexdigest()[:8]
    path = cache / f"scale_{n}_{tag}.jsonl.gz"
    if path.is_file():
        return path, 0.0
    cache.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    write_cuts(path, scaled_cuts(n))  # atomic: an interrupted run leaves no half file to reuse
    return path, time.perf_counter() - start


# ------------------------------------------------------------------------------------------------ the child


def child(record_path: Path, overrides: list[str]) -> int:
    """Run `python -m f5lite.train OVERRIDES` with `Trainer` instrumented; write the measurements as JSON."""
    launched = float(os.environ.get(sbs.LAUNCHED_AT_ENV, time.time()))  # the parent's wall clock at launch
    marks: dict[str, float] = {}  # seconds from launch
    peaks: dict[int, int] = {}  # pid -> VmHWM; the main process under its own pid
    after_init: list[int] = []  # the main process's VmHWM once `Trainer(...)` is done (before any worker starts)

    def mark(name: str) -> None:
        marks.setdefault(name, time.time() - launched)

    def sample() -> None:
        # VmHWM only grows: the last reading of a process is its peak so far. Workers live until `fit` ends.
        for pid in [os.getpid(), *forked_children()]:
            value = peak_rss(pid)
            if value is not None:
                peaks[pid] = max(peaks.get(pid, 0), value)

    from f5lite.train import cli
    from f5lite.train.trainer import Trainer

    mark("imported_s")
    init, update = Trainer.__init__, Trainer.train_update

    def timed_init(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        init(self, *args, **kwargs)
        mark("trainer_ready_s")
        after_init.append(peak_rss() or 0)

    def timed_update(self, batches):  # type: ignore[no-untyped-def]
        mark("first_batch_s")
        loss = update(self, batches)
        float(loss)  # wait for the update itself (a no-op on a CPU, a sync on a GPU)
        mark("first_update_s")
        sample()
        return loss

    Trainer.__init__ = timed_init  # type: ignore[method-assign]
    Trainer.train_update = timed_update  # type: ignore[method-assign]
    code = cli.main(overrides)
    main_pid = os.getpid()
    record = {
        "exit_code": code,
        **marks,
        # The whole run's peak (the final checkpoint and export included: they do not depend on the cuts).
        "main_peak_rss": max(peaks.get(main_pid, 0), peak_rss() or 0),
        "main_peak_rss_after_init": after_init[0] if after_init else None,
        "worker_peak_rss": [peaks[pid] for pid in sorted(peaks) if pid != main_pid],
    }
    record_path.write_text(json.dumps(record))
    return code


# ----------------------------------------------------------------------------------------------- the parent


def train_on(cuts: Path, args: argparse.Namespace) -> dict[str, object]:
    """Launch one instrumented training run on `cuts`; its record (or the error it stopped with), with the load
    average at launch."""
    with tempfile.TemporaryDirectory(prefix="f5lite_scale_") as tmp:
        overrides = [
            "+recipe=debug_tiny",
            f"data.dir={cuts}",
            f"data.vocab={demo_dir() / 'vocab.txt'}",
            f"data.num_workers={args.workers}",
            f"optim.max_updates={args.updates}",
            "ckpt.every=100",
            "logger.every=1",
            f"run_dir={Path(tmp) / 'run'}",
        ]
        argv = [sys.executable, str(Path(__file__).resolve()), "--child", sbs.RESULT, "--", *overrides]
        run = sbs.run_child(sbs.Config(cuts.name, argv), result_dir=Path(tmp), timeout=args.timeout)
    # Other work on the machine slows the start-up.
    return {"load_before": run.load_before, **run.record()}


def compare(small: dict[str, object], large: dict[str, object]) -> dict[str, object]:
    """Growth of every process's peak RSS from the baseline to the large run, and whether the goals hold."""
    if "error" in small or "error" in large:
        return {"start_goal_met": False, "memory_goal_met": False}
    growth = {"main": int(large["main_peak_rss"]) - int(small["main_peak_rss"])}  # type: ignore[call-overload]
    for i, (a, b) in enumerate(zip(small["worker_peak_rss"], large["worker_peak_rss"], strict=False)):  # type: ignore[call-overload]
        growth[f"worker {i}"] = int(b) - int(a)
    start = float(large["first_update_s"])  # type: ignore[arg-type]
    return {
        "peak_rss_growth": growth,
        "start_goal_met": start <= START_GOAL_S,
        "memory_goal_met": max(growth.values()) <= MEMORY_GOAL_BYTES,
    }


def write_results(result: dict[str, object], out_dir: Path) -> None:
    """`scale_cpu.json` and a markdown table `scale_cpu.md` under `out_dir`."""
    runs: list[dict[str, object]] = result["runs"]  # type: ignore[assignment]
    gb = 1e9
    lines = [
        "# Training start-up and memory on a large CutSet (CPU)",
        "",
        f"Machine: {sbs.describe(result['machine'])}.",  # type: ignore[arg-type]
        "",
        f"`debug_tiny` recipe, {result['workers']} loader workers, {result['updates']} updates; the cuts cycle over "
        "a few demo utterances (`f5lite-prepare`'s fields: token ids, frames). Times are seconds from launching "
        'the process; peaks are `VmHWM`. "Written in": seconds spent writing the CutSet (0: reused from an '
        'earlier run). "Load": the machine\'s 1-minute load average at launch.',
        "",
        "| cuts | file (MB) | written in (s) | load | imports (s) | `Trainer()` ready (s) | first batch (s) | "
        "first update (s) | main peak (GB) | worker peaks (GB) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in runs:
        if "error" in run:
            lines.append(f"| {run['cuts']:,} | | | | failed: {run['error']} | | | | | |")
            continue
        workers = ", ".join(f"{int(w) / gb:.2f}" for w in run["worker_peak_rss"])  # type: ignore[attr-defined]
        lines.append(
            f"| {run['cuts']:,} | {int(run['file_bytes']) / 1e6:.2f} | "  # type: ignore[call-overload]
            f"{float(run['write_s']):.0f} | {float(run['load_before']):.1f} | {float(run['imported_s']):.1f} | "  # type: ignore[arg-type]
            f"{float(run['trainer_ready_s']):.1f} | {float(run['first_batch_s']):.1f} | "  # type: ignore[arg-type]
            f"{float(run['first_update_s']):.1f} | {int(run['main_peak_rss']) / gb:.2f} | {workers} |"  # type: ignore[call-overload, arg-type]
        )
    verdict: dict[str, object] = result["verdict"]  # type: ignore[assignment]
    growth: dict[str, int] = verdict.get("peak_rss_growth", {})  # type: ignore[assignment]
    grown = ", ".join(f"{name} {value / 1e6:+.0f} MB" for name, value in growth.items())
    lines += [
        "",
        f"Goals with {runs[-1]['cuts']:,} cuts against {runs[0]['cuts']:,}: first update within {START_GOAL_S:.0f} s "
        f"of launch: {'met' if verdict['start_goal_met'] else 'MISSED'}; at most {MEMORY_GOAL_BYTES / gb:.0f} GB "
        f"more peak RSS per process: {'met' if verdict['memory_goal_met'] else 'MISSED'} ({grown or 'no data'}).",
    ]
    if result.get("note"):
        lines += ["", str(result["note"])]
    sbs.write_results(out_dir / "scale_cpu.json", result, "\n".join(lines) + "\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cuts", type=int, default=2_000_000, help="cuts of the large CutSet (default 2,000,000)")
    parser.add_argument("--baseline", type=int, default=1000, help="cuts of the small CutSet (default 1,000)")
    parser.add_argument("--workers", type=int, default=2, help="data.num_workers (default 2)")
    parser.add_argument("--updates", type=int, default=3, help="optim.max_updates (default 3)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds one training run may take")
    parser.add_argument("--cache-dir", type=Path, default=CACHE, help=f"where the CutSets are kept (default {CACHE})")
    parser.add_argument("--out-dir", type=Path, default=RESULTS, help="where the results go (default scripts/results)")
    parser.add_argument("--note", default="", help="free text for the results table")
    args = parser.parse_args(argv)
    if min(args.cuts, args.baseline, args.updates) < 1 or args.workers < 0:
        parser.error("--cuts, --baseline and --updates must be at least 1, --workers at least 0")
    return args


def run(args: argparse.Namespace) -> dict[str, object]:
    """Write (or reuse) both CutSets, train on each, and return the whole record."""
    runs = []
    for n in (args.baseline, args.cuts):
        path, wrote_s = cuts_file(n, args.cache_dir)
        record = {"cuts": n, "file": str(path), "file_bytes": path.stat().st_size, "write_s": wrote_s}
        record |= train_on(path, args)
        print(json.dumps(record), flush=True)
        runs.append(record)
    return {
        "machine": sbs.flat_header(sbs.run_header(["lhotse"])),
        "workers": args.workers,
        "updates": args.updates,
        "start_goal_s": START_GOAL_S,
        "memory_goal_bytes": MEMORY_GOAL_BYTES,
        "runs": runs,
        "verdict": compare(runs[0], runs[1]),
        "note": args.note,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure, print one JSON line per run and the verdict, write the results."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:  # one instrumented training run: `--child RECORD -- OVERRIDES...`
        overrides = argv[2:]
        return child(Path(argv[1]), overrides[1:] if overrides[:1] == ["--"] else overrides)
    args = parse_args(argv)
    result = run(args)
    print(json.dumps(result["verdict"]), flush=True)
    write_results(result, args.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
