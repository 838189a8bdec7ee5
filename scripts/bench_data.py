"""Training data loader benchmark: batches/s, seconds of audio/s and peak memory per input kind and worker count.

    python scripts/bench_data.py                          # all inputs, 0/1/2 workers, 3 rounds (minutes)
    python scripts/bench_data.py --quick --out-dir /tmp/x # seconds: a small budget, few batches, one round

Timed is what training runs, `build_train_data` with the dit_base budget, over `--batches` batches after `--warmup`
untimed ones. Inputs, prepared once from the demo clips repeated under new ids (from the page cache: the loader's CPU
cost, not a disk's): `audio` (decode, resample from `--audio-rate`, log-mel), `mels` (the mel cache), `shar` (Shar
shards with mels). Each configuration (input x `--workers`) runs in its own process, rounds interleaved, with its
peak RSS (`VmHWM`) of the main process and of each worker; `data_cpu.json` and `.md` go to `--out-dir`.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import results, runner

KINDS = {"audio": "audio files (decode + resample + log-mel)", "mels": "mel cache (`--mels`)",
         "shar": "Shar shards with mels"}  # fmt: skip
HOP_LENGTH, SAMPLE_RATE = 256, 24000  # f5lite.audio's: one mel frame is 256 samples at 24 kHz
# What one dit_base step consumes on one GPU: a full batch of 38400 frames, ~410 s of audio. The step time is a
# reference figure for an H100 in bf16 ("a few tenths of a second"), not a measurement of this script.
REFERENCE_FRAMES, REFERENCE_STEP_S = 38400, 0.4
# A partly filled bucket at the end of the epoch yields smaller batches: the CutSet gets this much more than the
# batches need, plus a batch per bucket.
_MARGIN, _BUCKETS = 1.25, 20
PROFILES = {
    # dit_base's budget; 60 timed batches after 6 untimed ones, in which the workers start and fill their queues.
    "full": {"frames_per_gpu": 38400, "max_samples": 64, "batches": 60, "warmup": 6, "clips": 200, "rounds": 3,
             "audio_rate": 22050},
    # seconds: a small budget over few clips, kept at 24 kHz (converting them would take longer than the rest).
    "quick": {"frames_per_gpu": 4000, "max_samples": 8, "batches": 3, "warmup": 1, "clips": 24, "rounds": 1,
              "audio_rate": 24000},
}  # fmt: skip


def _clips(root: Path, count: int, rate: int) -> Path:
    """A metadata CSV of the first `count` demo utterances; their audio converted to `rate` Hz unless 24000."""
    import soundfile as sf

    from f5lite.audio import load_audio
    from f5lite.paths import demo_dir

    with open(demo_dir() / "metadata.csv", newline="", encoding="utf-8") as file:
        header, *rows = list(csv.reader(file, delimiter="|"))[: count + 1]
    (out := root / "clips").mkdir(parents=True, exist_ok=True)
    for i, row in enumerate(rows):
        source = row[0] = str(demo_dir() / row[0])
        if rate != SAMPLE_RATE:  # as shipped, 24 kHz: nothing to resample
            row[0] = str(out / f"{i:04d}.ogg")
            sf.write(row[0], load_audio(source, rate).numpy(), rate, format="OGG", subtype="VORBIS")
    with open(out / "metadata.csv", "w", newline="", encoding="utf-8") as file:
        csv.writer(file, delimiter="|", lineterminator="\n").writerows([header, *rows])
    return out / "metadata.csv"


def copies_needed(batches: int, warmup: int, max_samples: int, clips: int) -> int:
    """How many times to repeat the clips so that one epoch surely holds `warmup + batches` batches."""
    return max(1, math.ceil(((warmup + batches) * _MARGIN + _BUCKETS) * max_samples / clips))


def build_inputs(root: Path, kinds: list[str], *, clips: int, copies: int, rate: int, shard_size: int) -> dict:
    """Prepare the demo clips once; `{kind: data.dir}` of each kind's repeated CutSet or shards, and `prepare_s`."""
    from f5lite.data.cuts import FRAMES, MEL_PATH, MEL_TYPE, TOKEN_IDS, make_cut, text_of, write_cuts
    from f5lite.prepare import PrepareOptions, prepare
    from f5lite.prepare.shar_writer import SharItem, write_shar

    start, prepared = time.perf_counter(), root / "prepared"
    workers = 1 if clips * copies <= 1000 else os.cpu_count() or 1  # a pool costs seconds to start
    result = prepare(_clips(root, clips, rate), prepared, PrepareOptions(mels=True, workers=workers))

    def repeated(mels: bool) -> list:
        return [make_cut(f"{cut.id}-{copy:03d}", cut.recording.sources[0].source,
                         sample_rate=cut.recording.sampling_rate, num_samples=cut.recording.num_samples,
                         channels=len(cut.recording.channel_ids), text=text_of(cut), speaker=cut.supervisions[0].speaker,
                         token_ids=cut.custom[TOKEN_IDS], frames=cut.custom[FRAMES],
                         mel_path=cut.custom[MEL_PATH] if mels else None, mel_type=cut.custom[MEL_TYPE] if mels else None)
                for copy in range(copies) for cut in result.cuts]  # fmt: skip

    # CutSet files beside the prepared cuts: relative mel paths resolve against their folder, vocab.txt is found.
    paths: dict[str, Any] = {}
    for kind in ("audio", "mels"):
        if kind in kinds:
            write_cuts(path := prepared / f"{kind}.jsonl.gz", repeated(mels=kind == "mels"))
            paths[kind] = path
    if "shar" in kinds:
        items = [
            SharItem(c, Path(c.recording.sources[0].source), prepared / c.custom[MEL_PATH]) for c in repeated(True)
        ]
        write_shar(root / "shar", items, shard_size=shard_size, vocab_path=prepared / "vocab.txt", workers=workers)
        paths["shar"] = root / "shar"
    return {**paths, "prepare_s": time.perf_counter() - start}


def measure(kind: str, path: str, workers: int, *, batches: int, warmup: int, frames_per_gpu: int,
            max_samples: int) -> dict[str, object]:  # fmt: skip
    """Build the training loader on `path`, iterate `warmup` then `batches` timed batches; time and memory.

    Raises:
        RuntimeError: the epoch ended before `warmup + batches` batches.
    """
    from f5lite.config.data import DataConfig
    from f5lite.data.loader import build_train_data

    load = os.getloadavg()[0]  # other work on the machine: the timings are only as good as it is idle
    start = time.perf_counter()
    data = build_train_data(DataConfig(dir=path, frames_per_gpu=frames_per_gpu, max_samples=max_samples,
                                       num_workers=workers), seed=0)  # fmt: skip
    built, frames, cuts = time.perf_counter(), 0, 0
    try:
        loader = iter(data.loader)
        for i in range(warmup + batches):
            if i == warmup:
                warm = time.perf_counter()
                cpu_start = {pid: runner.cpu_seconds(pid) for pid in [os.getpid(), *runner.forked_children()]}
            batch = next(loader, None)
            if i == 0:
                first = time.perf_counter()
            if batch is None:
                raise RuntimeError(f"{kind}: the epoch ended after {i} batches: give more --copies")
            if i >= warmup:
                frames, cuts = frames + int(batch.mel_lengths.sum()), cuts + len(batch.paths)
        end = time.perf_counter()
        cpu_end = {pid: runner.cpu_seconds(pid) for pid in [os.getpid(), *runner.forked_children()]}
        # High-water marks, read while the workers still live (closing the loader ends them).
        worker_peaks = [runner.peak_rss(pid) for pid in runner.forked_children()]
        main_peak = runner.peak_rss()
    finally:
        data.close_workers()
    # CPU time of the main process and the workers over the timed batches: unlike the rates, it hardly depends on
    # what else runs on the machine.
    cpu = sum(v - (cpu_start.get(pid) or 0.0) for pid, v in cpu_end.items() if v is not None)
    measured, audio_s = end - warm, frames * HOP_LENGTH / SAMPLE_RATE
    return {
        "kind": kind, "workers": workers, "frames_per_gpu": frames_per_gpu, "max_samples": max_samples,
        "warmup": warmup, "batches": batches, "build_s": built - start, "first_batch_s": first - start,
        "warmup_s": warm - built, "measured_s": measured, "cuts": cuts, "frames": frames, "audio_s": audio_s,
        "batches_per_s": batches / measured, "audio_s_per_s": audio_s / measured, "cpu_s": cpu,
        "audio_s_per_cpu_s": audio_s / cpu if cpu > 0 else None, "load_before": load, "main_peak_rss": main_peak,
        "worker_peak_rss": [p for p in worker_peaks if p is not None],
    }  # fmt: skip


def markdown(result: dict[str, Any]) -> str:
    """The Markdown page of `data_cpu.json`."""
    records, s = result["records"], result["settings"]
    need = REFERENCE_FRAMES * HOP_LENGTH / SAMPLE_RATE / REFERENCE_STEP_S
    ref_audio = REFERENCE_FRAMES * HOP_LENGTH / SAMPLE_RATE
    ok = [r for r in records if "error" not in r]
    per_batch = statistics.mean(r["audio_s"] / r["batches"] for r in ok) if ok else 0.0
    rows = []
    for r in records:
        name = KINDS.get(r["kind"], r["kind"])
        if "error" in r:
            rows.append([name, r["workers"], f"failed: {r['error']}", *[""] * 7])
            continue
        per_cpu = "-" if r.get("audio_s_per_cpu_s") is None else f"{r['audio_s_per_cpu_s']:.0f}"
        rows.append([name, r["workers"], f"{r['first_batch_s']:.2f}", f"{r['batches_per_s']:.2f}",
                     f"{r['audio_s_per_s']:.0f}", f"{r['audio_s_per_s'] / need:.2f}", per_cpu, f"{r['load_before']:.1f}",
                     f"{r['main_peak_rss'] / 1e9:.2f}", ", ".join(f"{p / 1e9:.2f}" for p in r["worker_peak_rss"]) or "-"])  # fmt: skip
    head = ["input", "workers", "first batch (s)", "batches/s", "audio s/s", "share of one GPU's need",
            "audio s per CPU s", "load", "main peak (GB)", "worker peaks (GB)"]  # fmt: skip
    lines = [
        "# Training data loader throughput and memory (CPU)", "", f"Machine: {results.describe(result['machine'])}.", "",
        f"Budget `frames_per_gpu={s['frames_per_gpu']}`, `max_samples={s['max_samples']}`; {s['clips']} demo clips "
        f"repeated {s['copies']} times under new ids; {s['batches']} timed batches after {s['warmup']} warm-up ones; "
        f"median of {s['rounds']} interleaved round(s), each configuration in its own process. Audio input: Ogg Vorbis "
        f"at {s['audio_rate']} Hz. Files come from the page cache (the same clips again and again): this is the "
        "loader's CPU cost.", "", *results.table(head, rows), "",
        f"Reference (not measured here): a dit_base step takes `frames_per_gpu=38400` frames per GPU, {ref_audio:.0f} s "
        f"of audio, and takes a few tenths of a second on an H100 in bf16; at {REFERENCE_STEP_S} s per step one GPU "
        f"consumes about {need:.0f} s of audio per second. \"Share of one GPU's need\" is the measured audio s/s over "
        "that figure: below 1, the loader (with these workers on this machine) cannot keep one GPU busy. The demo clips "
        f"are short (about 3 s), so `max_samples` caps a batch well below {ref_audio:.0f} s of audio (about "
        f"{per_batch:.0f} s here); compare audio s/s, not batches/s, with a GPU step.", "",
        '"Audio s per CPU s" divides the audio of the timed batches by the CPU time the main process and the workers '
        "used meanwhile: the loader's cost, which depends much less than the rates on other work on the machine "
        '(busy-waiting thread pools still count). "Load" is the 1-minute load average when the configuration started.',
        "", '"First batch" counts from calling `build_train_data` (worker start-up included). A worker\'s peak RSS '
        "includes the pages it shares with the main process since the fork (copy-on-write), so main + workers "
        "overstates the total.",
    ]  # fmt: skip
    return "\n".join(lines + (["", str(result["note"])] if result.get("note") else [])) + "\n"


def _kinds(text: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    if not values or any(v not in KINDS for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(KINDS)}")
    return values


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; unset sizes come from the profile (`--quick` or the full dit_base one)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--kinds", type=_kinds, default=list(KINDS), help=f"inputs to measure (default {','.join(KINDS)})")
    add("--workers", type=runner.int_list(0), default=[0, 1, 2], help="DataLoader worker counts (default 0,1,2)")
    add("--quick", action="store_true", help="a small budget, few batches, one round: seconds")
    add("--frames-per-gpu", type=int, help="frame budget of a batch (default 38400, dit_base; quick 4000)")
    add("--max-samples", type=int, help="utterances per batch at most (default 64; quick 8)")
    add("--batches", type=int, help="timed batches (default 60; quick 3)")
    add("--warmup", type=int, help="untimed batches first (default 6; quick 1)")
    add("--rounds", type=int, help="runs of every configuration, interleaved (default 3; quick 1)")
    add("--clips", type=int, help="demo clips used, at most 200 (default 200; quick 24)")
    add("--copies", type=int, help="times the clips are repeated (default: enough for the batches)")
    add(
        "--audio-rate",
        type=int,
        help="rate of the audio input in Hz, 24000 keeps the demo's (default 22050; quick 24000)",
    )
    add("--shard-size", type=int, default=1000, help="cuts per Shar shard (default 1000)")
    add("--out-dir", type=Path, default=Path(__file__).resolve().parent / "results", help="where the results go")
    add("--note", default="", help="free text for the results table")
    args = parser.parse_args(argv)
    for key, value in PROFILES["quick" if args.quick else "full"].items():
        setattr(args, key, value if getattr(args, key) is None else getattr(args, key))
    sizes = ("frames_per_gpu", "max_samples", "batches", "rounds", "clips", "shard_size", "audio_rate")
    if min(getattr(args, key) for key in sizes) < 1:
        parser.error(", ".join(f"--{k.replace('_', '-')}" for k in sizes) + " must be >= 1")
    if args.warmup < 0 or args.clips > 200 or (args.copies is not None and args.copies < 1):
        parser.error("--warmup must be >= 0, --clips at most 200 (the demo's), --copies at least 1")
    args.copies = args.copies or copies_needed(args.batches, args.warmup, args.max_samples, args.clips)
    return args


def run(args: argparse.Namespace) -> dict[str, object]:
    """Build the inputs, run every configuration in every round, and return the whole result."""
    settings = {key: getattr(args, key) for key in ("frames_per_gpu", "max_samples", "batches", "warmup")}
    with tempfile.TemporaryDirectory(prefix="f5lite_bench_data_") as tmp:
        inputs = build_inputs(Path(tmp), args.kinds, clips=args.clips, copies=args.copies, rate=args.audio_rate,
                              shard_size=args.shard_size)  # fmt: skip
        ids = {f"{k}, {w} workers": {"kind": k, "workers": w} for k in args.kinds for w in args.workers}
        configs = [runner.child_config(name, __file__, {**i, "path": str(inputs[i["kind"]]), **settings})
                   for name, i in ids.items()]  # fmt: skip
        runs = runner.run_interleaved(configs, args.rounds, check=False, on_run=lambda run: print(
            json.dumps(run.record(**ids[run.config])), file=sys.stderr, flush=True))  # fmt: skip
    records = [runner.median_record([r.record(**ids[n]) for r in runs if r.config == n], "batches_per_s") for n in ids]
    for record in records:
        print(json.dumps(record), flush=True)
    return {
        "machine": results.flat_header(results.run_header(["lhotse"])),
        "settings": {**settings, "rounds": args.rounds, "clips": args.clips, "copies": args.copies,
                     "audio_rate": args.audio_rate, "shard_size": args.shard_size, "prepare_s": inputs["prepare_s"]},
        "reference": {"frames_per_step": REFERENCE_FRAMES, "step_s": REFERENCE_STEP_S,
                      "audio_s_per_s": REFERENCE_FRAMES * HOP_LENGTH / SAMPLE_RATE / REFERENCE_STEP_S, "measured": False},
        "records": records, "note": args.note,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or, with `--child SPEC`, one configuration) and write the results."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if (spec := runner.child_spec(argv)) is not None:
        print(json.dumps(measure(**spec)))
        return 0
    args = parse_args(argv)
    result = run(args)
    results.write_results(args.out_dir / "data_cpu.json", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
