"""Training data loader benchmark: batches/s, seconds of audio/s and peak memory per input kind and worker count.

What is timed is what training runs: `f5lite.data.loader.build_train_data` (sources -> `CutBatchSampler` ->
`CutDataset` -> DataLoader) with the dit_base budget (`frames_per_gpu=38400`, `max_samples=64`), then iterating
`--batches` batches after `--warmup` untimed ones (worker start-up and first reads happen there). Inputs, built once
into a temporary directory from the shipped demo data with `f5lite.prepare`:

    audio   a prepared directory without mel cache: the workers decode, resample and compute each log-mel (the
            demo clips are converted to `--audio-rate`, 22.05 kHz Ogg Vorbis by default, so resampling happens)
    mels    a prepared directory with the mel cache (`f5lite-prepare --mels`): the workers read `.npy` files
    shar    Shar shards with mels (`f5lite-prepare --shar DIR --mels`): the workers read tar members

The 200 demo clips are far too few for the dit_base budget, so each input's CutSet repeats them under new ids
(`make_cut`, as `f5lite-prepare` writes cuts). The same files are read again and again, from the page cache: this
measures the loader's CPU cost, not a disk.

Each configuration (input x `--workers`) runs in its own process, so that its memory figures are its own: peak RSS
(`VmHWM` from `/proc/PID/status`) of the main process and of each worker (the main process's children, read at the
end of the iteration before the loader shuts them down). Configurations are interleaved over `--rounds` rounds and
each keeps its median round (a VM's speed drifts). One JSON line per configuration is printed, and
`scripts/results/data_cpu.json` and `.md` are written:

    python scripts/bench_data.py                          # all inputs, 0/1/2 workers, 3 rounds (minutes)
    python scripts/bench_data.py --quick --out-dir /tmp/x # seconds: a small budget, few batches, one round
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

from f5lite.bench import sidebyside as sbs
from f5lite.bench.args import int_list

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
KINDS = ("audio", "mels", "shar")
KIND_NAMES = {
    "audio": "audio files (decode + resample + log-mel)",
    "mels": "mel cache (`--mels`)",
    "shar": "Shar shards with mels",
}
HOP_LENGTH, SAMPLE_RATE = 256, 24000  # f5lite.audio's: one mel frame is 256 samples at 24 kHz
# What one dit_base step consumes on one GPU: a full batch of frames_per_gpu frames, ~410 s of audio. The step time
# is a reference figure for an H100 in bf16 ("a few tenths of a second"), not a measurement of this script.
REFERENCE_FRAMES = 38400
REFERENCE_STEP_S = 0.4
# Utterances a batch holds at most is `max_samples`; a partly filled bucket at the end of the epoch yields smaller
# batches, so the CutSet gets this much more than the batches need, plus a batch per bucket.
_MARGIN, _BUCKETS = 1.25, 20

PROFILES = {
    # dit_base's budget; 60 timed batches after 6 untimed ones, in which the workers start, read their first
    # batches and fill their prefetch queues (2 batches each), which the timed ones then start from.
    "full": {
        "frames_per_gpu": 38400,
        "max_samples": 64,
        "batches": 60,
        "warmup": 6,
        "clips": 200,
        "rounds": 3,
        "audio_rate": 22050,
    },
    # seconds: a small budget over few clips, kept at 24 kHz (converting them would take longer than the rest).
    "quick": {
        "frames_per_gpu": 4000,
        "max_samples": 8,
        "batches": 3,
        "warmup": 1,
        "clips": 24,
        "rounds": 1,
        "audio_rate": 24000,
    },
}


# ---------------------------------------------------------------------------------------------- /proc readings


def peak_rss(pid: int | str = "self") -> int | None:
    """`VmHWM` (peak resident set size) of a process in bytes, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def children(pid: int | str = "self") -> list[int]:
    """The live child processes of a process, in pid order."""
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                found.update(int(p) for p in listing.read().split())
        except OSError:
            continue
    return sorted(found)


def cpu_seconds(pid: int | str = "self") -> float | None:
    """User + system CPU seconds a process has used so far, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # After the command name: fields 14 and 15 of proc(5), utime and stime, in clock ticks.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def forked_children() -> list[int]:
    """This process's children that were forked from it (DataLoader workers; not a spawned helper process)."""
    own = Path("/proc/self/cmdline").read_bytes()
    forked = []
    for pid in children():
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == own:
                forked.append(pid)
        except OSError:
            continue
    return forked


def machine() -> dict[str, object]:
    """The CPU model and core count, the library versions and the date: where the numbers come from."""
    return sbs.flat_header(sbs.run_header(["lhotse"]))


# ------------------------------------------------------------------------------------------------- the inputs


def _clips(root: Path, count: int, rate: int) -> Path:
    """A metadata CSV of the first `count` demo utterances; their audio converted to `rate` Hz unless 24000."""
    import soundfile as sf

    from f5lite.audio import load_audio
    from f5lite.paths import demo_dir

    demo = demo_dir()
    with open(demo / "metadata.csv", newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file, delimiter="|"))
    header, rows = rows[0], rows[1 : count + 1]
    out = root / "clips"
    out.mkdir(parents=True, exist_ok=True)
    for row in rows:
        source = demo / row[0]
        if rate == SAMPLE_RATE:  # as shipped: 24 kHz, nothing to resample
            row[0] = str(source)
            continue
        target = out / f"{len(list(out.iterdir())):04d}.ogg"
        sf.write(target, load_audio(source, rate).numpy(), rate, format="OGG", subtype="VORBIS")
        row[0] = str(target)
    metadata = out / "metadata.csv"
    with open(metadata, "w", newline="", encoding="utf-8") as file:
        csv.writer(file, delimiter="|", lineterminator="\n").writerows([header, *rows])
    return metadata


def copies_needed(batches: int, warmup: int, max_samples: int, clips: int) -> int:
    """How many times to repeat the clips so that one epoch surely holds `warmup + batches` batches."""
    cuts = ((warmup + batches) * _MARGIN + _BUCKETS) * max_samples
    return max(1, math.ceil(cuts / clips))


def build_inputs(root: Path, kinds: list[str], *, clips: int, copies: int, rate: int, shard_size: int) -> dict:
    """Prepare the demo clips once and write each input kind's repeated CutSet (or Shar shards) under `root`.

    Returns:
        `{kind: data.dir}` for the kinds asked for, and `"prepare_s"`: the seconds all this took.
    """
    from f5lite.data.cuts import FRAMES, MEL_PATH, MEL_TYPE, TOKEN_IDS, make_cut, text_of, write_cuts
    from f5lite.prepare import PrepareOptions, prepare
    from f5lite.prepare.shar_writer import SharItem, write_shar

    start = time.perf_counter()
    prepared = root / "prepared"
    # A pool of processes costs seconds to start: not worth it for a few clips.
    workers = 1 if clips * copies <= 1000 else os.cpu_count() or 1
    result = prepare(_clips(root, clips, rate), prepared, PrepareOptions(mels=True, workers=workers))

    def repeated(with_mels: bool) -> list:
        cuts = []
        for copy in range(copies):
            for cut in result.cuts:
                custom, recording = cut.custom or {}, cut.recording
                cuts.append(
                    make_cut(
                        f"{cut.id}-{copy:03d}",
                        recording.sources[0].source,
                        sample_rate=recording.sampling_rate,
                        num_samples=recording.num_samples,
                        channels=len(recording.channel_ids),
                        text=text_of(cut),
                        speaker=cut.supervisions[0].speaker,
                        token_ids=custom[TOKEN_IDS],
                        frames=custom[FRAMES],
                        mel_path=custom[MEL_PATH] if with_mels else None,
                        mel_type=custom[MEL_TYPE] if with_mels else None,
                    )
                )
        return cuts

    paths: dict[str, object] = {}
    # CutSet files beside the prepared cuts: relative mel paths resolve against their folder, vocab.txt is found.
    if "audio" in kinds:
        write_cuts(prepared / "audio.jsonl.gz", repeated(with_mels=False))
        paths["audio"] = prepared / "audio.jsonl.gz"
    if "mels" in kinds:
        write_cuts(prepared / "mels.jsonl.gz", repeated(with_mels=True))
        paths["mels"] = prepared / "mels.jsonl.gz"
    if "shar" in kinds:
        items = [
            SharItem(cut, Path(cut.recording.sources[0].source), prepared / cut.custom[MEL_PATH])
            for cut in repeated(with_mels=True)
        ]
        write_shar(root / "shar", items, shard_size=shard_size, vocab_path=prepared / "vocab.txt", workers=workers)
        paths["shar"] = root / "shar"
    paths["prepare_s"] = time.perf_counter() - start
    return paths


# ------------------------------------------------------------------------------------------- one measurement


def measure(
    kind: str, path: Path, workers: int, *, batches: int, warmup: int, frames_per_gpu: int, max_samples: int
) -> dict[str, object]:
    """Build the training loader on `path`, iterate `warmup` then `batches` timed batches; time and memory.

    Run it in a fresh process for a clean main-process peak.

    Raises:
        RuntimeError: the epoch ended before `warmup + batches` batches.
    """
    from f5lite.config.schema import DataConfig
    from f5lite.data.loader import build_train_data

    load = os.getloadavg()[0]  # other work on the machine: the timings are only as good as it is idle
    start = time.perf_counter()
    cfg = DataConfig(dir=str(path), frames_per_gpu=frames_per_gpu, max_samples=max_samples, num_workers=workers)
    data = build_train_data(cfg, seed=0)
    built = time.perf_counter()
    frames = cuts = 0
    try:
        loader = iter(data.loader)
        for i in range(warmup + batches):
            if i == warmup:
                warm = time.perf_counter()
                cpu_start = {pid: cpu_seconds(pid) for pid in [os.getpid(), *forked_children()]}
            batch = next(loader, None)
            if i == 0:
                first = time.perf_counter()
            if batch is None:
                raise RuntimeError(f"{kind}: the epoch ended after {i} batches: give more --copies")
            if i >= warmup:
                frames += int(batch.mel_lengths.sum())
                cuts += len(batch.paths)
        end = time.perf_counter()
        cpu_end = {pid: cpu_seconds(pid) for pid in [os.getpid(), *forked_children()]}
        # High-water marks, read while the workers still live (closing the loader ends them).
        worker_peaks = [peak_rss(pid) for pid in forked_children()]
        main_peak = peak_rss()
    finally:
        data.close_workers()
    measured = end - warm
    # CPU time of the main process and the workers over the timed batches: unlike the rates, it hardly depends on
    # what else runs on the machine.
    cpu = sum(v - (cpu_start.get(pid) or 0.0) for pid, v in cpu_end.items() if v is not None)
    audio_s = frames * HOP_LENGTH / SAMPLE_RATE
    return {
        "kind": kind,
        "workers": workers,
        "frames_per_gpu": frames_per_gpu,
        "max_samples": max_samples,
        "warmup": warmup,
        "batches": batches,
        "build_s": built - start,
        "first_batch_s": first - start,
        "warmup_s": warm - built,
        "measured_s": measured,
        "cuts": cuts,
        "frames": frames,
        "audio_s": audio_s,
        "batches_per_s": batches / measured,
        "audio_s_per_s": audio_s / measured,
        "cpu_s": cpu,
        "audio_s_per_cpu_s": audio_s / cpu if cpu > 0 else None,
        "load_before": load,
        "main_peak_rss": main_peak,
        "worker_peak_rss": [p for p in worker_peaks if p is not None],
    }


def config(kind: str, path: Path, workers: int, settings: dict[str, int]) -> sbs.Config:
    """One configuration: this script's `--child` mode measuring `kind` with `workers` workers."""
    spec = {"kind": kind, "path": str(path), "workers": workers, **settings}
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    return sbs.Config(f"{kind}, {workers} workers", argv)


def median_record(runs: list[dict[str, object]]) -> dict[str, object]:
    """The round with the median batches/s, with every round's rate added as `batches_per_s_rounds`."""
    return sbs.median_record(runs, "batches_per_s")


# ------------------------------------------------------------------------------------------------- results


def reference_audio_s_per_s() -> float:
    """Seconds of audio per second one GPU consumes in dit_base training (reference figures, not measured)."""
    return REFERENCE_FRAMES * HOP_LENGTH / SAMPLE_RATE / REFERENCE_STEP_S


def write_results(result: dict[str, object], out_dir: Path) -> None:
    """`data_cpu.json` and the markdown table `data_cpu.md` under `out_dir`."""
    records: list[dict[str, object]] = result["records"]  # type: ignore[assignment]
    settings: dict[str, object] = result["settings"]  # type: ignore[assignment]
    need = reference_audio_s_per_s()
    ref_audio = REFERENCE_FRAMES * HOP_LENGTH / SAMPLE_RATE
    gb = 1e9
    ok = [r for r in records if "error" not in r]
    per_batch = statistics.mean(float(r["audio_s"]) / int(r["batches"]) for r in ok) if ok else 0.0  # type: ignore[arg-type, call-overload]
    lines = [
        "# Training data loader throughput and memory (CPU)",
        "",
        f"Machine: {sbs.describe(result['machine'])}.",  # type: ignore[arg-type]
        "",
        f"Budget `frames_per_gpu={settings['frames_per_gpu']}`, `max_samples={settings['max_samples']}`; "
        f"{settings['clips']} demo clips repeated {settings['copies']} times under new ids; {settings['batches']} "
        f"timed batches after {settings['warmup']} warm-up ones; median of {settings['rounds']} interleaved "
        f"round(s), each configuration in its own process. Audio input: Ogg Vorbis at {settings['audio_rate']} Hz. "
        "Files come from the page cache (the same clips again and again): this is the loader's CPU cost.",
        "",
        "| input | workers | first batch (s) | batches/s | audio s/s | share of one GPU's need | audio s per CPU s "
        "| load | main peak (GB) | worker peaks (GB) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        name = KIND_NAMES.get(str(r["kind"]), str(r["kind"]))
        if "error" in r:
            lines.append(f"| {name} | {r['workers']} | failed: {r['error']} |" + " |" * 7)
            continue
        workers = ", ".join(f"{int(p) / gb:.2f}" for p in r["worker_peak_rss"]) or "-"  # type: ignore[attr-defined]
        rate = float(r["audio_s_per_s"])  # type: ignore[arg-type]
        per_cpu = r.get("audio_s_per_cpu_s")
        cells = [
            name,
            str(r["workers"]),
            f"{float(r['first_batch_s']):.2f}",  # type: ignore[arg-type]
            f"{float(r['batches_per_s']):.2f}",  # type: ignore[arg-type]
            f"{rate:.0f}",
            f"{rate / need:.2f}",
            "-" if per_cpu is None else f"{float(per_cpu):.0f}",  # type: ignore[arg-type]
            f"{float(r['load_before']):.1f}",  # type: ignore[arg-type]
            f"{int(r['main_peak_rss']) / gb:.2f}",  # type: ignore[call-overload]
            workers,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Reference (not measured here): a dit_base step takes `frames_per_gpu=38400` frames per GPU, "
        f"{ref_audio:.0f} s of audio, and takes a few tenths of a second on an H100 in bf16; at "
        f"{REFERENCE_STEP_S} s per step one GPU consumes about {need:.0f} s of audio per second. \"Share of one GPU's "
        'need" is the measured audio s/s over that figure: below 1, the loader (with these workers on this '
        "machine) cannot keep one GPU busy. The demo clips are short (about 3 s), so `max_samples` caps a batch "
        f"well below {ref_audio:.0f} s of audio (about {per_batch:.0f} s here); compare audio s/s, not batches/s, "
        "with a GPU step.",
        "",
        '"Audio s per CPU s" divides the audio of the timed batches by the CPU time the main process and the '
        "workers used meanwhile: the loader's cost, which depends much less than the rates on other work on the "
        'machine (busy-waiting thread pools still count). "Load" is the 1-minute load average when the '
        "configuration started.",
        "",
        '"First batch" counts from calling `build_train_data` (worker start-up included). A worker\'s peak RSS '
        "includes the pages it shares with the main process since the fork (copy-on-write), so main + workers "
        "overstates the total.",
    ]
    if result.get("note"):
        lines += ["", str(result["note"])]
    sbs.write_results(out_dir / "data_cpu.json", result, "\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------------------ command line


def _kinds(text: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [v for v in values if v not in KINDS]
    if not values or unknown:
        raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(KINDS)}")
    return values


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; unset sizes come from the profile (`--quick` or the full dit_base one)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--kinds", type=_kinds, default=list(KINDS), help=f"inputs to measure (default {','.join(KINDS)})")
    add("--workers", type=int_list(0), default=[0, 1, 2], help="DataLoader worker counts (default 0,1,2)")
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
    add("--out-dir", type=Path, default=RESULTS, help="where the results go (default scripts/results)")
    add("--note", default="", help="free text for the results table")
    args = parser.parse_args(argv)
    for key, value in PROFILES["quick" if args.quick else "full"].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    sizes = (
        args.frames_per_gpu,
        args.max_samples,
        args.batches,
        args.rounds,
        args.clips,
        args.shard_size,
        args.audio_rate,
    )
    if min(sizes) < 1:
        parser.error(
            "--frames-per-gpu, --max-samples, --batches, --rounds, --clips, --shard-size and --audio-rate must be >= 1"
        )
    if args.warmup < 0 or args.clips > 200 or (args.copies is not None and args.copies < 1):
        parser.error("--warmup must be >= 0, --clips at most 200 (the demo's), --copies at least 1")
    if args.copies is None:
        args.copies = copies_needed(args.batches, args.warmup, args.max_samples, args.clips)
    return args


def run(args: argparse.Namespace) -> dict[str, object]:
    """Build the inputs, run every configuration in every round, and return the whole result."""
    settings = {
        "frames_per_gpu": args.frames_per_gpu,
        "max_samples": args.max_samples,
        "batches": args.batches,
        "warmup": args.warmup,
    }
    configs = [(kind, workers) for kind in args.kinds for workers in args.workers]
    with tempfile.TemporaryDirectory(prefix="f5lite_bench_data_") as tmp:
        inputs = build_inputs(
            Path(tmp),
            args.kinds,
            clips=args.clips,
            copies=args.copies,
            rate=args.audio_rate,
            shard_size=args.shard_size,
        )
        children, ids = [], {}  # ids: what names a failed configuration's row
        for kind, workers in configs:
            children.append(config(kind, inputs[kind], workers, settings))
            ids[children[-1].name] = {"kind": kind, "workers": workers}

        def show(run: sbs.Run) -> None:
            print(json.dumps(run.record(**ids[run.config])), file=sys.stderr, flush=True)

        runs = sbs.run_interleaved(children, args.rounds, check=False, on_run=show)
    records = [median_record([r.record(**ids[name]) for r in runs if r.config == name]) for name in ids]
    for record in records:
        print(json.dumps(record), flush=True)
    return {
        "machine": machine(),
        "settings": {
            **settings,
            "rounds": args.rounds,
            "clips": args.clips,
            "copies": args.copies,
            "audio_rate": args.audio_rate,
            "shard_size": args.shard_size,
            "prepare_s": inputs["prepare_s"],
        },
        "reference": {
            "frames_per_step": REFERENCE_FRAMES,
            "step_s": REFERENCE_STEP_S,
            "audio_s_per_s": reference_audio_s_per_s(),
            "measured": False,
        },
        "records": records,
        "note": args.note,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or, with `--child SPEC`, one configuration) and write the results."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:  # one configuration in this fresh process: `--child '{"kind": ..., ...}'`
        spec = json.loads(argv[1])
        kind, path, workers = spec.pop("kind"), Path(spec.pop("path")), spec.pop("workers")
        print(json.dumps(measure(kind, path, workers, **spec)))
        return 0
    args = parse_args(argv)
    result = run(args)
    write_results(result, args.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
