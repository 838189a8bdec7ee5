"""Does training start, and stay within memory, on a CutSet of millions of cuts? Start-up time and peak RSS.

    python scripts/scale_data.py                       # 2,000,000 cuts against 1,000 (the file is kept in /tmp)
    python scripts/scale_data.py --cuts 2000 --out-dir /tmp/x   # a tiny check

A CutSet of `--cuts` cuts pointing at a few demo utterances (as `f5lite-prepare` writes them) and a baseline of
1,000; then `python -m f5lite.train +recipe=debug_tiny` on each for a few updates with 2 loader workers, through this
script's `--child` mode, which notes when the first update completes and reads the peak RSS (`VmHWM`) of the main
process and of each worker. The goals: the first update within 60 s of launch, and no process peaking more than 1 GB
higher than with 1,000 cuts. The results go to `scale_cpu.json` and `.md`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import results, runner

CACHE = Path(tempfile.gettempdir()) / "f5lite_scale_data"
START_GOAL_S = 60.0
"""Training must complete its first optimizer update within this many seconds of launch."""
MEMORY_GOAL_BYTES = 1_000_000_000
"""No process may peak more than this much higher with N cuts than with the baseline."""


def scaled_cuts(n: int, clips: int = 8) -> Iterator[object]:
    """`n` cuts cycling over the first `clips` demo utterances (absolute audio paths, the demo's token ids)."""
    from lhotse import CutSet

    from f5lite.data.cuts import FRAMES, TOKEN_IDS, make_cut, text_of
    from f5lite.paths import demo_dir

    templates = []
    for cut in list(CutSet.from_jsonl_lazy(demo_dir() / "cuts.jsonl.gz"))[:clips]:
        recording = cut.recording
        templates.append({"source": str(demo_dir() / recording.sources[0].source), "sample_rate": recording.sampling_rate,
                          "num_samples": recording.num_samples, "channels": len(recording.channel_ids),
                          "text": text_of(cut), "speaker": cut.supervisions[0].speaker,
                          "token_ids": cut.custom[TOKEN_IDS], "frames": cut.custom[FRAMES]})  # fmt: skip
    for i in range(n):
        template = dict(templates[i % len(templates)])
        yield make_cut(f"scale/{i:0{len(str(n - 1))}d}", template.pop("source"), **template)


def cuts_file(n: int, cache: Path) -> tuple[Path, float]:
    """The CutSet of `n` cuts in `cache` (written once, then reused) and the seconds spent writing it now."""
    from f5lite.data.cuts import write_cuts
    from f5lite.paths import demo_dir

    # The cuts name the demo audio by absolute path: another checkout gets its own file.
    path = cache / f"scale_{n}_{hashlib.sha1(str(demo_dir()).encode()).hexdigest()[:8]}.jsonl.gz"
    if path.is_file():
        return path, 0.0
    cache.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    write_cuts(path, scaled_cuts(n))  # atomic: an interrupted run leaves no half file to reuse
    return path, time.perf_counter() - start


def child(record_path: Path, overrides: list[str]) -> int:
    """Run `python -m f5lite.train OVERRIDES` with `Trainer` instrumented; write the measurements as JSON."""
    launched = float(os.environ.get(runner.LAUNCHED_AT_ENV, time.time()))  # the parent's wall clock at launch
    marks: dict[str, float] = {}  # seconds from launch
    peaks: dict[int, int] = {}  # pid -> VmHWM; the main process under its own pid
    after_init: list[int] = []  # the main process's VmHWM once `Trainer(...)` is done (before any worker starts)

    def mark(name: str) -> None:
        marks.setdefault(name, time.time() - launched)

    from f5lite.train import cli
    from f5lite.train.trainer import Trainer

    mark("imported_s")
    init, update = Trainer.__init__, Trainer.train_update

    def timed_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        mark("trainer_ready_s")
        after_init.append(runner.peak_rss() or 0)

    def timed_update(self: Any, batches: Any) -> Any:
        mark("first_batch_s")
        loss = update(self, batches)
        float(loss)  # wait for the update itself (a no-op on a CPU, a sync on a GPU)
        mark("first_update_s")
        # VmHWM only grows: the last reading of a process is its peak so far. Workers live until `fit` ends.
        for pid in [os.getpid(), *runner.forked_children()]:
            if (value := runner.peak_rss(pid)) is not None:
                peaks[pid] = max(peaks.get(pid, 0), value)
        return loss

    Trainer.__init__, Trainer.train_update = timed_init, timed_update  # type: ignore[method-assign]
    code = cli.main(overrides)
    main_pid = os.getpid()
    record = {"exit_code": code, **marks,
              # The whole run's peak (the final checkpoint and export included: they do not depend on the cuts).
              "main_peak_rss": max(peaks.get(main_pid, 0), runner.peak_rss() or 0),
              "main_peak_rss_after_init": after_init[0] if after_init else None,
              "worker_peak_rss": [peaks[pid] for pid in sorted(peaks) if pid != main_pid]}  # fmt: skip
    record_path.write_text(json.dumps(record))
    return code


def train_on(cuts: Path, args: argparse.Namespace) -> dict[str, object]:
    """One instrumented training run on `cuts`: its record (or the error it stopped with) and the load at launch."""
    from f5lite.paths import demo_dir

    with tempfile.TemporaryDirectory(prefix="f5lite_scale_") as tmp:
        overrides = ["+recipe=debug_tiny", f"data.dir={cuts}", f"data.vocab={demo_dir() / 'vocab.txt'}",
                     f"data.num_workers={args.workers}", f"optim.max_updates={args.updates}", "ckpt.every=100",
                     "logger.every=1", f"run_dir={Path(tmp) / 'run'}"]  # fmt: skip
        argv = [sys.executable, str(Path(__file__).resolve()), "--child", runner.RESULT, "--", *overrides]
        run = runner.run_child(runner.Config(cuts.name, argv), result_dir=Path(tmp), timeout=args.timeout)
    return {"load_before": run.load_before, **run.record()}  # other work on the machine slows the start-up


def compare(small: dict[str, Any], large: dict[str, Any]) -> dict[str, object]:
    """Growth of every process's peak RSS from the baseline to the large run, and whether the goals hold."""
    if "error" in small or "error" in large:
        return {"start_goal_met": False, "memory_goal_met": False}
    growth = {"main": large["main_peak_rss"] - small["main_peak_rss"]}
    for i, (a, b) in enumerate(zip(small["worker_peak_rss"], large["worker_peak_rss"], strict=False)):
        growth[f"worker {i}"] = b - a
    return {"peak_rss_growth": growth, "start_goal_met": large["first_update_s"] <= START_GOAL_S,
            "memory_goal_met": max(growth.values()) <= MEMORY_GOAL_BYTES}  # fmt: skip


def markdown(result: dict[str, Any]) -> str:
    """The Markdown page of `scale_cpu.json`."""
    runs, verdict = result["runs"], result["verdict"]
    rows = []
    for r in runs:
        if "error" in r:
            rows.append([f"{r['cuts']:,}", "", "", "", f"failed: {r['error']}", "", "", "", "", ""])
            continue
        rows.append([f"{r['cuts']:,}", f"{r['file_bytes'] / 1e6:.2f}", f"{r['write_s']:.0f}", f"{r['load_before']:.1f}",
                     *(f"{r[k]:.1f}" for k in ("imported_s", "trainer_ready_s", "first_batch_s", "first_update_s")),
                     f"{r['main_peak_rss'] / 1e9:.2f}", ", ".join(f"{w / 1e9:.2f}" for w in r["worker_peak_rss"])])  # fmt: skip
    head = ["cuts", "file (MB)", "written in (s)", "load", "imports (s)", "`Trainer()` ready (s)", "first batch (s)",
            "first update (s)", "main peak (GB)", "worker peaks (GB)"]  # fmt: skip
    grown = ", ".join(f"{name} {value / 1e6:+.0f} MB" for name, value in verdict.get("peak_rss_growth", {}).items())
    met = {key: "met" if verdict[key] else "MISSED" for key in ("start_goal_met", "memory_goal_met")}
    lines = [
        "# Training start-up and memory on a large CutSet (CPU)", "", f"Machine: {results.describe(result['machine'])}.",
        "", f"`debug_tiny` recipe, {result['workers']} loader workers, {result['updates']} updates; the cuts cycle over "
        "a few demo utterances (`f5lite-prepare`'s fields: token ids, frames). Times are seconds from launching the "
        'process; peaks are `VmHWM`. "Written in": seconds spent writing the CutSet (0: reused from an earlier run). '
        '"Load": the machine\'s 1-minute load average at launch.', "", *results.table(head, rows), "",
        f"Goals with {runs[-1]['cuts']:,} cuts against {runs[0]['cuts']:,}: first update within {START_GOAL_S:.0f} s "
        f"of launch: {met['start_goal_met']}; at most {MEMORY_GOAL_BYTES / 1e9:.0f} GB more peak RSS per process: "
        f"{met['memory_goal_met']} ({grown or 'no data'}).",
    ]  # fmt: skip
    return "\n".join(lines + (["", str(result["note"])] if result.get("note") else [])) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--cuts", type=int, default=2_000_000, help="cuts of the large CutSet (default 2,000,000)")
    add("--baseline", type=int, default=1000, help="cuts of the small CutSet (default 1,000)")
    add("--workers", type=int, default=2, help="data.num_workers (default 2)")
    add("--updates", type=int, default=3, help="optim.max_updates (default 3)")
    add("--timeout", type=float, default=900, help="seconds one training run may take")
    add("--cache-dir", type=Path, default=CACHE, help=f"where the CutSets are kept (default {CACHE})")
    add("--out-dir", type=Path, default=Path(__file__).resolve().parent / "results", help="where the results go")
    add("--note", default="", help="free text for the results table")
    args = parser.parse_args(argv)
    if min(args.cuts, args.baseline, args.updates) < 1 or args.workers < 0:
        parser.error("--cuts, --baseline and --updates must be at least 1, --workers at least 0")
    return args


def main(argv: list[str] | None = None) -> int:
    """Measure, print one JSON line per run and the verdict, write the results."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [runner.CHILD]:  # one instrumented training run: `--child RECORD -- OVERRIDES...`
        return child(Path(argv[1]), argv[3:] if argv[2:3] == ["--"] else argv[2:])
    args = parse_args(argv)
    runs = []
    for n in (args.baseline, args.cuts):
        path, wrote_s = cuts_file(n, args.cache_dir)
        record = {"cuts": n, "file": str(path), "file_bytes": path.stat().st_size, "write_s": wrote_s}
        runs.append(record | train_on(path, args))
        print(json.dumps(runs[-1]), flush=True)
    result = {"machine": results.flat_header(results.run_header(["lhotse"])), "workers": args.workers,
              "updates": args.updates, "start_goal_s": START_GOAL_S, "memory_goal_bytes": MEMORY_GOAL_BYTES,
              "runs": runs, "verdict": compare(runs[0], runs[1]), "note": args.note}  # fmt: skip
    print(json.dumps(result["verdict"]), flush=True)
    results.write_results(args.out_dir / "scale_cpu.json", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
