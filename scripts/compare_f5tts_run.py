"""Whole training runs: F5-TTS's own `Trainer` against `python -m f5lite.train` on the same clips, interleaved.

    PYTHONPATH=.f5tts python scripts/compare_f5tts_run.py --rounds 2 --out-dir scripts/results

Both train the same DiT (`--model`) on the demo's training clips (F5-TTS from its own format, `benchmarks.f5tts`)
with the same batches, precision, optimizer, EMA, workers and checkpoint interval, each run in its own process, the
sides alternating within every round. F5-TTS runs whole epochs: `--updates` is rounded up to whole epochs. Measured:
wall clock from launch to exit, updates/s and frames/s over the steady part (after `--skip` updates, checkpoint time
taken out), the time inside each save, and peak memory (VmHWM of the process and its workers, the largest VmRSS of
the tree polled every 0.2 s). Results are written after every run. Method and caveats: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import f5tts, results, runner
from benchmarks.models import DITS

SIDES = ("f5tts", "f5lite")
"""The two trainers, in the order of the first round."""
MODELS = {name: DITS[name] for name in ("base", "mid", "small", "tiny")}
"""DiT constructor arguments of `--model`."""


def write_f5lite_mels(clips: Sequence[dict[str, Any]], demo: Path, out: Path) -> Path:
    """f5lite's training directory of the same clips with a mel cache (`f5lite-prepare --mels`, the demo's vocab)."""
    out.mkdir(parents=True, exist_ok=True)
    csv = out / "metadata.csv"
    csv.write_text("audio_file|text\n" + "".join(f"{c['audio_path']}|{c['text']}\n" for c in clips), encoding="utf-8")
    prepared, vocab = out / "f5lite_mels", ["--vocab", str(demo / "vocab.txt"), "--fixed-vocab"]
    command = [sys.executable, "-m", "f5lite.prepare", str(csv), str(prepared), "--mels", *vocab]
    if (done := subprocess.run(command, capture_output=True, text=True)).returncode != 0:
        raise SystemExit(f"compare_f5tts_run.py: f5lite-prepare --mels failed: {done.stderr.strip()[-500:]}")
    return prepared


def f5lite_overrides(spec: dict[str, Any]) -> list[str]:
    """The command-line overrides of `python -m f5lite.train` for this spec."""
    return [
        f"data.dir={spec['f5lite_data']}", *(f"model.{key}={value}" for key, value in spec["model"].items()),
        f"data.frames_per_gpu={spec['frames']}", f"data.max_samples={spec['max_samples']}",
        f"data.num_workers={spec['workers']}", f"optim.max_updates={spec['updates']}",
        f"optim.warmup_updates={spec['warmup']}", f"optim.lr={spec['lr']}", "optim.max_grad_norm=1.0",
        f"perf.precision={spec['precision']}", f"ema.decay={spec['ema_decay']}",
        f"ema.update_every={spec['ema_update_every']}", f"ema.update_after={spec['ema_update_after']}",
        f"ckpt.every={spec['ckpt_every']}", f"seed={spec['seed']}", "eval.every=0", "logger.backend=none",
        "run_name=compare_f5tts_run", f"run_dir={spec['run_dir']}", *spec.get("f5lite_extra", []),
    ]  # fmt: skip


def run_f5lite_child(spec: dict[str, Any], events: f5tts.Events) -> int:
    """`python -m f5lite.train` with the spec's overrides, its update and save calls timestamped."""
    from f5lite.train import cli
    from f5lite.train import trainer as module

    cls = module.Trainer
    train_update, fit = cls.train_update, cls.fit

    def timed_update(self: Any, group: Any) -> Any:
        events.add_frames(sum(int(b.mel_lengths.sum()) for b in group))
        loss = train_update(self, group)
        events.update_done()
        return loss

    def timed_fit(self: Any, *args: Any, **kwargs: Any) -> Any:
        events.data["t_train_start"] = time.monotonic()
        return fit(self, *args, **kwargs)

    cls.train_update, cls.fit = timed_update, timed_fit  # type: ignore[method-assign, assignment]
    cls.save = events.timed("save", cls.save)
    module.export_run = events.timed("export", module.export_run)
    return cli.main(f5lite_overrides(spec))


def tree_memory() -> Callable[[int], dict[str, Any]]:
    """A poll of a run's process tree: `peaks` (each process's VmHWM in KiB) and `tree_rss_kb` (the largest sum of
    their VmRSS) so far."""
    import psutil  # a dependency of accelerate

    seen: dict[str, Any] = {"peaks": {}, "tree_rss_kb": 0}

    def poll(pid: int) -> dict[str, Any]:
        with contextlib.suppress(psutil.Error):
            pids = [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
            seen["tree_rss_kb"] = max(seen["tree_rss_kb"], sum(runner.status_kb(p, "VmRSS") or 0 for p in pids))
            seen["peaks"] |= {p: max(seen["peaks"].get(p, 0), runner.status_kb(p, "VmHWM") or 0) for p in pids}
        return seen

    return poll


def summarize(run: dict[str, Any], events: dict[str, Any], skip: int) -> dict[str, Any]:
    """One run's figures from the parent's measurements and the child's events."""
    updates, frames = events["updates"], events["frames"]
    saves = [s["end"] - s["start"] for s in events["saves"] if s["kind"] == "save"]
    first = min(skip, len(updates) - 2)  # the steady part starts after `skip` updates (start-up, lazy init)
    lo, hi = updates[first], updates[-1]
    inside = [s["end"] - s["start"] for s in events["saves"] if s["kind"] == "save" and lo <= s["start"] < hi]
    steady = hi - lo - sum(inside)
    workers = sum(v for p, v in run["peaks"].items() if p != run["pid"])
    main_hwm = max(events["vmhwm_kb"], run["peaks"].get(run["pid"], 0))
    return {
        "wall_s": run["wall_s"], "updates": len(updates), "frames": sum(frames),
        "to_first_update_s": updates[0] - run["launch"],
        "after_last_update_s": run["launch"] + run["wall_s"] - updates[-1],
        "steady_updates_per_s": (len(updates) - 1 - first) / steady,
        "steady_frames_per_s": sum(frames[first + 1 :]) / steady,
        "saves": len(saves), "ckpt_total_s": sum(saves), "ckpt_mean_s": statistics.mean(saves) if saves else 0.0,
        "export_s": sum(s["end"] - s["start"] for s in events["saves"] if s["kind"] == "export"),
        "peak_rss_mb": (main_hwm + workers) / 1024, "main_vmhwm_mb": main_hwm / 1024,
        "polled_tree_rss_mb": run["tree_rss_kb"] / 1024, "processes": len(run["peaks"]), "threads": events["threads"],
    }  # fmt: skip


LABELS = {"f5tts": "F5-TTS {v} `Trainer`", "f5lite": "f5lite {v} `python -m f5lite.train`"}
ROWS = (
    ("wall clock, launch to exit (s)", "{wall_s:.1f}"),
    ("updates / frames trained", "{updates:.0f} / {frames:.0f}"),
    ("launch to first update (s)", "{to_first_update_s:.1f}"),
    ("steady updates/s", "{steady_updates_per_s:.3f}"),
    ("steady frames/s (unpadded)", "{steady_frames_per_s:.0f}"),
    ("checkpoints written / total s / mean s", "{saves:.0f} / {ckpt_total_s:.2f} / {ckpt_mean_s:.2f}"),
    ("final export (s)", "{export_s:.2f}"),
    ("last update to exit (s)", "{after_last_update_s:.1f}"),
    ("peak RSS, VmHWM incl. workers (MB)", "{peak_rss_mb:.0f}"),
    ("peak RSS, main process (MB)", "{main_vmhwm_mb:.0f}"),
)


def ratios(medians: dict[str, dict[str, float]]) -> dict[str, float]:
    """F5-TTS / f5lite for times and memory, f5lite / F5-TTS for rates: above 1 means f5lite is better."""
    f5, ours = medians["f5tts"], medians["f5lite"]
    return {
        "wall_clock": f5["wall_s"] / ours["wall_s"],
        "steady_updates_per_s": ours["steady_updates_per_s"] / f5["steady_updates_per_s"],
        "steady_frames_per_s": ours["steady_frames_per_s"] / f5["steady_frames_per_s"],
        "ckpt_total_s": f5["ckpt_total_s"] / ours["ckpt_total_s"] if ours["ckpt_total_s"] else math.inf,
        "peak_rss": f5["peak_rss_mb"] / ours["peak_rss_mb"],
    }


def markdown(result: dict[str, Any]) -> str:
    """The result as a Markdown report."""
    s, med, v = result["settings"], result["medians"], result["versions"]
    sides = [side for side in SIDES if side in med]
    labels = [LABELS[side].format(v=v.get("f5-tts" if side == "f5tts" else side, "?")) for side in sides]
    epochs = f" ({s['epochs']} F5-TTS epoch(s) of {s['batches']} batches)" if "f5tts" in sides else ""
    mels = ", f5lite reading their mels from its cache (`f5lite-prepare --mels`)" if s.get("f5lite_mels") else ""
    lines = [
        "# Whole training runs: F5-TTS's own trainer vs f5lite", "", f"Machine: {results.describe(result)}.",
        f"Model: DiT `{s['model_name']}` {s['model']} ({s['precision']} precision); data: the demo dataset's "
        f"{s['clips']} training clips ({s['audio_s']:.0f} s){mels}, {s['frames']} frames per batch, at most "
        f"{s['max_samples']} utterances; {s['updates']} updates{epochs}; lr {s['lr']}, warm-up {s['warmup']}; EMA decay "
        f"{s['ema_decay']}, every {s['ema_update_every']}, after {s['ema_update_after']}; a checkpoint every "
        f"{s['ckpt_every']} updates; {s['workers']} DataLoader worker(s). Median of {s['rounds']} interleaved rounds, "
        f"each run its own process; the steady part starts after update {s['skip']}, checkpoint time taken out.", "",
        *results.table(["", *labels], [[label, *(fmt.format(**med[x]) for x in sides)] for label, fmt in ROWS],
                       " " + "r" * len(sides)), "",
    ]  # fmt: skip
    # The spread between rounds says how far the medians can be trusted on a shared machine.
    for side, label in zip(sides, labels, strict=True):
        per_round = ", ".join(f"{x['wall_s']:.1f} s / {x['steady_frames_per_s']:.0f}" for x in result["runs"][side])
        lines.append(f"- per round, wall clock / steady frames/s, {label}: {per_round}")
    if "load_average" in result:
        lines.append(f"- load average (1, 5, 15 min) before and after: {result['load_average']}")
    if r := result.get("ratios"):
        lines += ["", f"Ratio F5-TTS / f5lite: wall clock **{r['wall_clock']:.2f}x** (goal: 1.3x); steady updates/s "
                  f"f5lite / F5-TTS {r['steady_updates_per_s']:.2f}x, frames/s {r['steady_frames_per_s']:.2f}x; "
                  f"checkpoint time {r['ckpt_total_s']:.2f}x; peak RSS {r['peak_rss']:.2f}x (above 1: f5lite better)."]  # fmt: skip
    reads = "the same clips' mels from its cache" if s.get("f5lite_mels") else "the same Ogg files through soundfile"
    lines += ["", "F5-TTS reads audio through `torchaudio.load`, replaced in its process by a soundfile reader "
              f"(torchcodec is not installed); f5lite reads {reads}. F5-TTS writes `model_last.pt` (`last_per_updates`, no "
              "numbered copies) and once more after its last epoch; f5lite writes its checkpoint and, at the end, its "
              f"export. Command: `{result['command']}`.", ""]  # fmt: skip
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line of the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add, count = parser.add_argument, runner.at_least(1)
    add("--rounds", type=count, default=2, help="interleaved rounds (default 2); medians reported")
    add("--sides", default="f5tts,f5lite", help="comma-separated: f5tts, f5lite (default both)")
    add("--model", choices=sorted(MODELS), default="mid", help="DiT size (default mid)")
    add("--updates", type=count, default=20, help="optimizer updates; with F5-TTS rounded up to whole epochs")
    add("--frames", type=count, default=2400, help="mel frames per batch (default 2400)")
    add("--max-samples", type=int, default=64, help="most utterances per batch (default 64)")
    add("--ckpt-every", type=count, default=8, help="checkpoint interval in updates (default 8)")
    add("--precision", choices=("no", "bf16"), default="bf16", help="accelerate mixed precision")
    add("--lr", type=float, default=7.5e-5)
    add("--warmup", type=int, default=5, help="warm-up updates (default 5)")
    add("--ema-decay", type=float, default=0.9999)
    add("--ema-update-every", type=int, default=10)
    add("--ema-update-after", type=int, default=10, help="default 10 (both trainers' default is 100: copies only)")
    add("--workers", type=count, default=1, help="DataLoader workers, at least 1 (F5-TTS needs one)")
    add("--skip", type=int, default=3, help="updates before the steady part (default 3)")
    add("--seed", type=int, default=f5tts.F5TTS_SEED)
    add("--f5lite-extra", action="append", default=[], help="another f5lite override (repeatable)")
    add("--f5tts-compile", action="store_true", help="wrap F5-TTS's DiT forward in torch.compile, as its users do on "
        "a GPU (f5lite's: perf.compile=true)")  # fmt: skip
    add("--f5lite-mels", action="store_true", help="f5lite reads the same clips' mels from a cache (f5lite-prepare "
        "--mels) instead of decoding audio")  # fmt: skip
    add("--out-dir", type=Path, help="write NAME.json and NAME.md here")
    add("--name", default="f5tts_run_cpu")
    add("--work-dir", type=Path, help="datasets, runs and logs (default a temporary directory)")
    add("--keep", action="store_true", help="keep the work directory")
    add("--child", nargs=3, metavar=("SIDE", "SPEC", "EVENTS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    if not args.sides or any(s not in SIDES for s in args.sides):
        parser.error(f"--sides takes a comma-separated subset of {', '.join(SIDES)}")
    if "f5tts" in args.sides and args.child is None and (why := f5tts.missing("datasets")):
        parser.error(f"F5-TTS is not importable ({why}); install it beside f5lite, see benchmarks/f5tts.py")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison; print the result as JSON and, with `--out-dir`, write NAME.json and NAME.md."""
    args = parse_args(argv)
    if args.child:  # one run's process (an F5-TTS one imports no f5lite module: they would count in its memory)
        events, spec = f5tts.Events(), json.loads(Path(args.child[1]).read_text(encoding="utf-8"))
        rc = (f5tts.train if args.child[0] == "f5tts" else run_f5lite_child)(spec, events)
        events.write(Path(args.child[2]), rc=rc)
        return rc
    from f5lite.paths import demo_dir

    demo = Path(demo_dir())
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="f5tts_run_"))
    work.mkdir(parents=True, exist_ok=True)
    clips = f5tts.demo_clips(demo)
    durations = f5tts.write_dataset(clips, work / "f5tts_data")
    batches = f5tts.batches_per_epoch(durations, args.frames, args.max_samples)
    epochs = math.ceil(args.updates / batches)
    updates = epochs * batches if "f5tts" in args.sides else args.updates  # F5-TTS runs whole epochs
    spec = {
        "model": MODELS[args.model], "frames": args.frames, "max_samples": args.max_samples, "updates": updates,
        "epochs": epochs, "ckpt_every": args.ckpt_every, "precision": args.precision, "lr": args.lr,
        "warmup": args.warmup, "ema_decay": args.ema_decay, "ema_update_every": args.ema_update_every,
        "ema_update_after": args.ema_update_after, "workers": args.workers, "seed": args.seed,
        "f5tts_data": str(work / "f5tts_data"),
        "f5lite_data": str(write_f5lite_mels(clips, demo, work) if args.f5lite_mels else demo),
        "f5lite_mels": args.f5lite_mels, "f5lite_extra": args.f5lite_extra, "f5tts_compile": args.f5tts_compile,
    }  # fmt: skip
    configs = []
    for side in args.sides:
        spec_path = work / f"spec_{side}.json"
        spec_path.write_text(json.dumps({**spec, "run_dir": str(work / f"run_{side}")}), encoding="utf-8")
        shutil.rmtree(work / f"run_{side}", ignore_errors=True)  # a fresh run each time, never a resume
        command = [sys.executable, str(Path(__file__).resolve()), "--child", side, str(spec_path), runner.RESULT]
        configs.append(runner.Config(side, command))
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in args.sides}
    load_before = os.getloadavg()  # other work on the machine shows up here, and in the spread between rounds
    command_line = " ".join(["python", "scripts/compare_f5tts_run.py", *(argv if argv is not None else sys.argv[1:])])

    def log(run: runner.Run) -> Path:
        (path := work / f"log_{run.config}_{run.round}.txt").write_text(run.stdout + run.stderr, encoding="utf-8")
        return path

    def result() -> dict[str, Any]:
        """The document of the runs so far: settings, every run, medians, and the ratios once both sides ran."""
        medians = {side: {k: statistics.median(run[k] for run in rs) for k in rs[0]} for side, rs in runs.items() if rs}
        settings = {"model_name": args.model, **{k: v for k, v in spec.items() if not k.endswith("_data")},
                    "batches": batches, "clips": len(durations), "audio_s": sum(durations), "rounds": args.rounds,
                    "skip": args.skip, "sides": args.sides,
                    "f5lite_overrides": f5lite_overrides({**spec, "run_dir": "RUN_DIR", "f5lite_data": "DEMO"})}  # fmt: skip
        document = {**results.run_header(["f5-tts", "accelerate", "datasets", "lhotse", "ema-pytorch"]),
                    "command": command_line, "settings": settings, "runs": runs, "medians": medians,
                    "load_average": [[round(x, 2) for x in load_before], [round(x, 2) for x in os.getloadavg()]]}  # fmt: skip
        if set(SIDES) <= set(medians):
            document["ratios"] = ratios(medians)
        return document

    def write(document: dict[str, Any]) -> None:
        if args.out_dir is not None:  # now, not at the end: a comparison cut short keeps the runs it finished
            results.write_results(args.out_dir / f"{args.name}.json", document, markdown(document), indent=2)

    def done(run: runner.Run) -> None:
        path = log(run)
        measured = {"launch": run.started, "wall_s": run.wall_s, "pid": run.pid, **run.watched}
        summary = summarize(measured, run.result or {}, args.skip)
        if summary["updates"] != updates:
            raise SystemExit(f"{run.config} ran {summary['updates']} updates, not {updates}; see {path}")
        runs[run.config].append(summary)
        print(f"round {run.round + 1} {run.config}: {json.dumps({k: round(v, 3) for k, v in summary.items()})}")
        write(result())
        if run.round < args.rounds - 1:  # the last one stays for --keep
            shutil.rmtree(work / f"run_{run.config}", ignore_errors=True)

    try:
        # Sides alternate which goes first, so a drift in the machine's speed hits both alike.
        runner.run_interleaved(configs, args.rounds, alternate=True, work_dir=work, watch=tree_memory, poll_s=0.2,
                               on_run=done)  # fmt: skip
    except runner.ChildFailedError as err:
        sys.stderr.write(f"end of {log(err.run)}:\n{(err.run.stdout + err.run.stderr)[-3000:]}\n{err}\n")
        return 1
    finally:
        if not args.keep and args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    write(final := result())
    print(json.dumps(final["medians"]) + (f"\n{json.dumps(final['ratios'])}" if "ratios" in final else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
