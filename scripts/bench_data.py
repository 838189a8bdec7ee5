"""The training data path: loader throughput, start-up on millions of cuts, and how much of a batch is real speech.

    python scripts/bench_data.py                          # loader: every input, 0/1/2 workers, 3 rounds (minutes)
    python scripts/bench_data.py --quick --out-dir /tmp/x # the same in seconds: a small budget, few batches, one round
    python scripts/bench_data.py --scale [2000]           # start-up and memory on 2,000,000 (2,000) cuts against 1,000
    python scripts/bench_data.py --batching [--f5tts .f5tts] [--data DIR]   # padding of the samplers, F5-TTS's too

`data_cpu`: `build_train_data` at dit_base's budget over the demo clips repeated under new ids, from the page cache
(the loader's CPU cost), as `audio` (decode, resample from `--audio-rate`, log-mel), `mels` or `shar` (with mels), per
`--workers` count: batches/s, audio s/s, CPU time, peak RSS (`VmHWM`) of the main process and each worker.
`scale_cpu`: `f5lite.train +recipe=debug_tiny` on N cuts and on `--baseline` cuts (kept in `--cache-dir`); goals: the
first update within 60 s of launch, no process peaking more than 1 GB higher than with the baseline.
`batching`: one epoch of the same lengths (`--lognormal` clipped to `--clip`, or `--data`'s) by f5lite's sampler (with
and without topping up), Lhotse's dynamic bucketing and F5-TTS's `DynamicBatchSampler` (`--f5tts PATH`, a checkout
or installation): batches, utterances and real frames per batch, padding efficiency, left out, seconds.
Timed configurations run each in its own process, rounds interleaved; `NAME.json` and `.md` go to `--out-dir`.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
import warnings
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks import results, runner

HOP_LENGTH, SAMPLE_RATE = 256, 24000  # f5lite.audio's: one mel frame is 256 samples at 24 kHz
KINDS = {"audio": "audio files (decode, resample, log-mel)", "mels": "mel cache", "shar": "Shar shards with mels"}
# One dit_base step on one GPU: 38400 frames, ~410 s of audio, in a few tenths of a second on an H100 (not measured).
REFERENCE_FRAMES, REFERENCE_STEP_S = 38400, 0.4
# The last, partly filled buckets of an epoch give smaller batches: repeat the cuts this much more, plus one per bucket.
_MARGIN, _BUCKETS = 1.25, 20
# The loader's sizes: dit_base's budget, 60 timed batches after 6 in which the workers start and fill their queues;
# quick: seconds, a small budget over few clips kept at 24 kHz (converting them would take longer than the rest).
PROFILES = {
    "full": {"frames_per_gpu": 38400, "max_samples": 64, "batches": 60, "warmup": 6, "clips": 200, "rounds": 3,
             "audio_rate": 22050},
    "quick": {"frames_per_gpu": 4000, "max_samples": 8, "batches": 3, "warmup": 1, "clips": 24, "rounds": 1,
              "audio_rate": 24000},
}  # fmt: skip
START_GOAL_S, MEMORY_GOAL_BYTES = 60.0, 1_000_000_000  # the scale goals: first update, peak RSS growth per process


def cut_fields(cut: Any, root: Path = Path(), mels: bool = False) -> dict[str, Any]:
    """`make_cut`'s arguments for a copy of a prepared cut: its audio under `root`, its cached mel if `mels`."""
    from f5lite.data.cuts import FRAMES, MEL_PATH, MEL_TYPE, TOKEN_IDS, text_of

    rec, custom = cut.recording, cut.custom
    return {"source": str(root / rec.sources[0].source), "sample_rate": rec.sampling_rate,
            "num_samples": rec.num_samples, "channels": len(rec.channel_ids), "text": text_of(cut),
            "speaker": cut.supervisions[0].speaker, "token_ids": custom[TOKEN_IDS], "frames": custom[FRAMES],
            "mel_path": custom[MEL_PATH] if mels else None, "mel_type": custom[MEL_TYPE] if mels else None}  # fmt: skip


def in_children(specs: dict[str, dict], ids: dict[str, dict], rounds: int, key: str, **child: Any) -> list[dict]:
    """Each `specs[name]` in its own process, rounds interleaved; median records of `ids[name]`, result, load."""
    done: dict[str, list[dict[str, Any]]] = {name: [] for name in specs}

    def note(run: runner.Run) -> None:
        done[run.config].append(record := {**ids[run.config], **run.record(), "load_before": run.load_before})
        print(json.dumps(record), file=sys.stderr, flush=True)

    configs = [runner.child_config(name, __file__, spec) for name, spec in specs.items()]
    runner.run_interleaved(configs, rounds, check=False, on_run=note, **child)
    records = [runner.median_record(done[name], key) for name in specs]
    print(*map(json.dumps, records), sep="\n", flush=True)
    return records


def build_inputs(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Prepare the demo clips once; `{kind: data.dir}` of each kind's repeated CutSet or shards, and `prepare_s`."""
    import soundfile as sf

    from f5lite.audio import load_audio
    from f5lite.data.cuts import MEL_PATH, make_cut, write_cuts
    from f5lite.paths import demo_dir
    from f5lite.prepare import PrepareOptions, prepare
    from f5lite.prepare.shar_writer import SharItem, write_shar

    start, prepared, rate = time.perf_counter(), root / "prepared", args.audio_rate
    with open(demo_dir() / "metadata.csv", newline="", encoding="utf-8") as file:
        header, *rows = list(csv.reader(file, delimiter="|"))[: args.clips + 1]
    for i, row in enumerate(rows):  # the first `--clips` demo utterances, converted to `--audio-rate` unless 24 kHz
        source = row[0] = str(demo_dir() / row[0])
        if rate != SAMPLE_RATE:
            row[0] = str(root / f"{i:04d}.ogg")
            sf.write(row[0], load_audio(source, rate).numpy(), rate, format="OGG", subtype="VORBIS")
    with open(root / "metadata.csv", "w", newline="", encoding="utf-8") as file:
        csv.writer(file, delimiter="|", lineterminator="\n").writerows([header, *rows])
    workers = 1 if args.clips * args.copies <= 1000 else os.cpu_count() or 1  # a pool costs seconds to start
    cuts = prepare(root / "metadata.csv", prepared, PrepareOptions(mels=True, workers=workers)).cuts

    def repeated(mels: bool) -> list[Any]:
        fields = [(cut.id, cut_fields(cut, mels=mels)) for cut in cuts]
        return [make_cut(f"{id_}-{copy:03d}", **f) for copy in range(args.copies) for id_, f in fields]

    # CutSet files beside the prepared cuts: relative mel paths resolve against their folder, vocab.txt is found.
    paths: dict[str, Any] = {}
    for kind in {"audio", "mels"} & set(args.kinds):
        paths[kind] = prepared / f"{kind}.jsonl.gz"
        write_cuts(paths[kind], repeated(mels=kind == "mels"))
    if "shar" in args.kinds:
        mels = repeated(True)
        items = [SharItem(c, Path(c.recording.sources[0].source), prepared / c.custom[MEL_PATH]) for c in mels]
        write_shar(root / "shar", items, shard_size=args.shard_size, vocab_path=prepared / "vocab.txt", workers=workers)
        paths["shar"] = root / "shar"
    return {**paths, "prepare_s": time.perf_counter() - start}


def measure(kind: str, path: str, workers: int, **sizes: int) -> dict[str, Any]:
    """Build the training loader on `path`, iterate `warmup` then `batches` timed batches; time and memory."""
    from f5lite.config.data import DataConfig
    from f5lite.data.loader import build_train_data

    def cpu() -> dict[int, float | None]:
        return {pid: runner.cpu_seconds(pid) for pid in [os.getpid(), *runner.forked_children()]}

    start, warmup, batches = time.perf_counter(), sizes["warmup"], sizes["batches"]
    budget = {key: sizes[key] for key in ("frames_per_gpu", "max_samples")}
    data = build_train_data(DataConfig(dir=path, num_workers=workers, **budget), seed=0)
    built, frames, cuts = time.perf_counter(), 0, 0
    try:
        loader = iter(data.loader)
        for i in range(warmup + batches):
            if i == warmup:
                warm, cpu_start = time.perf_counter(), cpu()
            if (batch := next(loader, None)) is None:
                raise RuntimeError(f"{kind}: the epoch ended after {i} batches: give more --copies")
            if i == 0:
                first = time.perf_counter()
            if i >= warmup:
                frames, cuts = frames + int(batch.mel_lengths.sum()), cuts + len(batch.paths)
        end, cpu_end = time.perf_counter(), cpu()
        # High-water marks, read while the workers still live (closing the loader ends them).
        main_peak, worker_peaks = runner.peak_rss(), [runner.peak_rss(pid) for pid in runner.forked_children()]
    finally:
        data.close_workers()
    # CPU time of the main process and the workers: unlike the rates, it hardly depends on other work on the machine.
    cpu_s = sum(v - (cpu_start.get(pid) or 0.0) for pid, v in cpu_end.items() if v is not None)
    measured, audio_s = end - warm, frames * HOP_LENGTH / SAMPLE_RATE
    return {
        "kind": kind, "workers": workers, **sizes, "build_s": built - start, "first_batch_s": first - start,
        "warmup_s": warm - built, "measured_s": measured, "cuts": cuts, "frames": frames, "audio_s": audio_s,
        "batches_per_s": batches / measured, "audio_s_per_s": audio_s / measured, "cpu_s": cpu_s,
        "audio_s_per_cpu_s": audio_s / cpu_s if cpu_s > 0 else None, "main_peak_rss": main_peak,
        "worker_peak_rss": [p for p in worker_peaks if p is not None],
    }  # fmt: skip


def loader(args: argparse.Namespace) -> tuple[dict[str, Any], str, list[str]]:
    """Build the inputs, run every configuration in every round; the result's fields, the page's title and lines."""
    sizes = ("frames_per_gpu", "max_samples", "batches", "warmup")  # what a child needs
    s = {key: getattr(args, key) for key in (*sizes, "rounds", "clips", "copies", "audio_rate", "shard_size")}
    with tempfile.TemporaryDirectory(prefix="f5lite_bench_data_") as tmp:
        inputs = build_inputs(Path(tmp), args)
        ids = {f"{k}, {w} workers": {"kind": k, "workers": w} for k in args.kinds for w in args.workers}
        specs = {name: {**i, "path": str(inputs[i["kind"]]), **{k: s[k] for k in sizes}} for name, i in ids.items()}
        records = in_children(specs, ids, args.rounds, "batches_per_s")
    s["prepare_s"], ref_audio = inputs["prepare_s"], REFERENCE_FRAMES * HOP_LENGTH / SAMPLE_RATE
    need = ref_audio / REFERENCE_STEP_S
    per_batch = statistics.mean([r["audio_s"] / r["batches"] for r in records if "error" not in r] or [0.0])
    rows = []
    for r in records:
        if "error" in r:
            rows.append([KINDS[r["kind"]], r["workers"], f"failed: {r['error']}", *[""] * 7])
            continue
        per_cpu = "-" if r.get("audio_s_per_cpu_s") is None else f"{r['audio_s_per_cpu_s']:.0f}"
        rows.append([KINDS[r["kind"]], r["workers"], f"{r['first_batch_s']:.2f}", f"{r['batches_per_s']:.2f}",
                     f"{r['audio_s_per_s']:.0f}", f"{r['audio_s_per_s'] / need:.2f}", per_cpu, f"{r['load_before']:.1f}",
                     f"{r['main_peak_rss'] / 1e9:.2f}", ", ".join(f"{p / 1e9:.2f}" for p in r["worker_peak_rss"]) or "-"])  # fmt: skip
    head = ["input", "workers", "first batch (s)", "batches/s", "audio s/s", "share of one GPU's need",
            "audio s per CPU s", "load", "main peak (GB)", "worker peaks (GB)"]  # fmt: skip
    fields = {"settings": s, "records": records, "reference": {"frames_per_step": REFERENCE_FRAMES,
              "step_s": REFERENCE_STEP_S, "audio_s_per_s": need, "measured": False}}  # fmt: skip
    return fields, "Training data loader throughput and memory (CPU)", [
        f"Budget `frames_per_gpu={s['frames_per_gpu']}`, `max_samples={s['max_samples']}`; {s['clips']} demo clips "
        f"repeated {s['copies']} times; {s['batches']} timed batches after {s['warmup']}; median of {s['rounds']} "
        f"interleaved round(s), each in its own process. Audio: Ogg Vorbis at {s['audio_rate']} Hz, from the page cache "
        "(the loader's CPU cost).", "", *results.table(head, rows), "",
        f"Reference (not measured here): a dit_base step takes {ref_audio:.0f} s of audio (38400 frames) per GPU in about "
        f"{REFERENCE_STEP_S} s on an H100 in bf16, {need:.0f} s of audio per second. The demo clips are short: a batch "
        f"holds about {per_batch:.0f} s here, so compare audio s/s with it, not batches/s. \"Audio s per CPU s\" (over "
        "the main process and the workers) depends much less than the rates on other work on the machine; \"load\" is "
        "the load average at launch; \"first batch\" includes the workers' start. A worker's peak RSS includes pages it "
        "shares with the main process (copy-on-write).",
    ]  # fmt: skip


def cuts_file(n: int, cache: Path) -> tuple[Path, float]:
    """A CutSet of `n` cuts cycling over 8 demo utterances in `cache` (written once), and the seconds spent now."""
    from lhotse import CutSet

    from f5lite.data.cuts import make_cut, write_cuts
    from f5lite.paths import demo_dir

    # The cuts name the demo audio by absolute path: another checkout gets its own file.
    path = cache / f"scale_{n}_{hashlib.sha1(str(demo_dir()).encode()).hexdigest()[:8]}.jsonl.gz"
    if path.is_file():
        return path, 0.0
    cache.mkdir(parents=True, exist_ok=True)
    start, demo = time.perf_counter(), list(CutSet.from_jsonl_lazy(demo_dir() / "cuts.jsonl.gz"))[:8]
    fields = [cut_fields(cut, demo_dir()) for cut in demo]  # as f5lite-prepare writes them: token ids, frames
    cuts = (make_cut(f"scale/{i:0{len(str(n - 1))}d}", **fields[i % len(fields)]) for i in range(n))
    write_cuts(path, cuts)  # atomic: an interrupted run leaves no half file to reuse
    return path, time.perf_counter() - start


def train_child(record: str, overrides: list[str]) -> int:
    """Run `python -m f5lite.train OVERRIDES` with `Trainer` instrumented; write the measurements to `record`."""
    launched = float(os.environ.get(runner.LAUNCHED_AT_ENV, time.time()))  # the parent's wall clock at launch
    marks: dict[str, Any] = {}  # seconds from launch, and the main process's VmHWM once `Trainer()` is ready
    peaks: dict[int, int] = {}  # worker pid -> VmHWM

    def mark(name: str) -> None:
        marks.setdefault(name, time.time() - launched)

    from f5lite.train import cli
    from f5lite.train.trainer import Trainer

    mark("imported_s")
    init, update = Trainer.__init__, Trainer.train_update

    def timed_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        mark("trainer_ready_s")
        marks.setdefault("main_peak_rss_after_init", runner.peak_rss())  # before any worker starts

    def timed_update(self: Any, batches: Any) -> Any:
        mark("first_batch_s")
        float(loss := update(self, batches))  # wait for the update itself (a no-op on a CPU, a sync on a GPU)
        mark("first_update_s")
        # VmHWM only grows: the last reading of a process is its peak so far. Workers live until `fit` ends.
        peaks.update({pid: runner.peak_rss(pid) or peaks.get(pid, 0) for pid in runner.forked_children()})
        return loss

    Trainer.__init__, Trainer.train_update = timed_init, timed_update  # type: ignore[method-assign]
    code = cli.main(overrides)
    # The main process's peak is the whole run's (the final checkpoint and export do not depend on the cuts).
    workers = [peaks[pid] for pid in sorted(peaks)]
    measured = {"exit_code": code, **marks, "main_peak_rss": runner.peak_rss(), "worker_peak_rss": workers}
    Path(record).write_text(json.dumps(measured))
    return code


def scale(args: argparse.Namespace) -> tuple[dict[str, Any], str, list[str]]:
    """Write (or reuse) the two CutSets, train on each in its own process; the result's fields, title and lines."""
    ids = {}
    for name, n in (("baseline", args.baseline), ("large", args.scale)):
        path, wrote_s = cuts_file(n, args.cache_dir)
        ids[name] = {"cuts": n, "file": str(path), "file_bytes": path.stat().st_size, "write_s": wrote_s}
    with tempfile.TemporaryDirectory(prefix="f5lite_scale_") as tmp:
        specs = {name: {"record": runner.RESULT, "overrides": [
            "+recipe=debug_tiny", f"data.dir={i['file']}", "data.vocab=${f5lite.demo_dir:}/vocab.txt",
            f"data.num_workers={args.workers[0]}", f"optim.max_updates={args.updates}", "ckpt.every=100",
            "logger.every=1", f"run_dir={Path(tmp) / name}"]} for name, i in ids.items()}  # fmt: skip
        small, large = in_children(specs, ids, 1, "first_update_s", timeout=args.timeout)
    verdict: dict[str, Any] = {"start_goal_met": False, "memory_goal_met": False}
    if "error" not in small and "error" not in large:
        workers = enumerate(zip(small["worker_peak_rss"], large["worker_peak_rss"], strict=False))
        growth = {"main": large["main_peak_rss"] - small["main_peak_rss"]}
        growth |= {f"worker {i}": b - a for i, (a, b) in workers}
        verdict = {"peak_rss_growth": growth, "start_goal_met": large["first_update_s"] <= START_GOAL_S,
                   "memory_goal_met": max(growth.values()) <= MEMORY_GOAL_BYTES}  # fmt: skip
    print(json.dumps(verdict), flush=True)
    rows: list[list[Any]] = []
    for r in (runs := [small, large]):
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
    fields = {"workers": args.workers[0], "updates": args.updates, "start_goal_s": START_GOAL_S,
              "memory_goal_bytes": MEMORY_GOAL_BYTES, "runs": runs, "verdict": verdict}  # fmt: skip
    return fields, "Training start-up and memory on a large CutSet (CPU)", [
        f"`debug_tiny` recipe, {args.workers[0]} loader workers, {args.updates} updates; times in seconds from "
        'launch, peaks `VmHWM`; "written in": 0 when the CutSet was reused; "load": the load average at launch.', "",
        *results.table(head, rows), "", f"Goals with {runs[-1]['cuts']:,} cuts against {runs[0]['cuts']:,}: first "
        f"update within {START_GOAL_S:.0f} s of launch: {met['start_goal_met']}; at most {MEMORY_GOAL_BYTES / 1e9:.0f} "
        f"GB more peak RSS per process: {met['memory_goal_met']} ({grown or 'no data'}).",
    ]  # fmt: skip


def batching(args: argparse.Namespace) -> tuple[dict[str, Any], str, list[str]]:
    """Measure every sampler on the same lengths; the result's fields, the page's title and lines."""
    from lhotse import CutSet
    from lhotse.dataset import DynamicBucketingSampler
    from torch.utils.data import SequentialSampler

    from f5lite.config import DataConfig
    from f5lite.data import CutBatchSampler, make_cut, open_source
    from f5lite.data.cuts import frames_of

    # Lhotse's warning about an eager CutSet: its lengths are all this measures.
    warnings.filterwarnings("ignore", message=".*eagerly read CutSet", category=UserWarning)
    window = args.window if args.window is not None else DataConfig().window
    fill = args.fill_efficiency if args.fill_efficiency is not None else DataConfig().fill_efficiency
    if args.f5tts is not None:  # a checkout (`src/f5_tts`) or an installation (`f5_tts`)
        path = args.f5tts.expanduser().resolve()
        roots = [r for r in (path / "src", path, path.parent) if (r / "f5_tts" / "model" / "dataset.py").is_file()]
        if not roots:
            raise SystemExit(f"bench_data.py: no f5_tts/model/dataset.py under {path} (nor {path}/src)")
        sys.path.insert(0, str(roots[0]))
        from f5_tts.model.dataset import DynamicBatchSampler  # type: ignore[import-not-found]
    if args.data is not None:
        lengths = [frames_of(cut) for cut in open_source(args.data).cuts()]
        source: dict[str, Any] = {"data": str(args.data)}
        what = f"the {len(lengths)} utterances of `{args.data}`"
    else:
        import numpy as np

        (median, sigma), (low, high) = args.lognormal, args.clip
        seconds = np.clip(np.random.default_rng(args.seed).lognormal(np.log(median), sigma, args.count), low, high)
        lengths = [1 + int(s * SAMPLE_RATE) // HOP_LENGTH for s in seconds]
        source = {"lognormal_median_s": median, "lognormal_sigma": sigma, "clip_s": [low, high], "seed": args.seed}
        what = f"{len(lengths)} lengths log-normal around {median:g} s (sigma {sigma:g}), clipped to {low:g}-{high:g} s"
        what += f", seed {args.seed}"
    if not lengths:
        raise SystemExit("bench_data.py: no utterances")
    cuts = [make_cut(f"u{i:08d}", f"/nowhere/{i}.wav", sample_rate=SAMPLE_RATE, num_samples=(n - 1) * HOP_LENGTH,
                     channels=1, text="x", frames=n) for i, n in enumerate(lengths)]  # fmt: skip
    budget, most, seed, versus = args.frames_per_gpu, args.max_samples, args.seed, args.f5tts is not None
    f5lite = partial(CutBatchSampler, lambda epoch: CutSet.from_cuts(cuts), frames_per_gpu=budget, max_samples=most,
                     window=window, seed=seed)  # fmt: skip
    makers = {f"f5lite (window {window}, fill_efficiency {fill:g})": partial(f5lite, fill_efficiency=fill)}
    if fill < 1:
        makers[f"f5lite (window {window}, no top-up)"] = partial(f5lite, fill_efficiency=1.0)
    fitting = CutSet.from_cuts([c for c in cuts if frames_of(c) <= budget])
    for n in args.lhotse_buckets:  # set up as f5lite's former batching was
        makers[f"Lhotse dynamic bucketing ({n} buckets)"] = partial(
            DynamicBucketingSampler, fitting, max_duration=budget * HOP_LENGTH / SAMPLE_RATE, max_cuts=most,
            num_buckets=n, shuffle=True, drop_last=False, seed=seed)  # fmt: skip
    if versus:  # its dataset: the size and `get_frame_len`
        dataset = type("Lengths", (list,), {"get_frame_len": list.__getitem__})(lengths)
        makers["F5-TTS DynamicBatchSampler"] = partial(
            DynamicBatchSampler, SequentialSampler(dataset), budget, max_samples=most, random_seed=seed
        )
    rows = []
    for name, make in makers.items():  # one epoch of each, as the batches' lengths (F5-TTS's sampler gives indices)
        start, sampler = time.perf_counter(), make()
        sampler.set_epoch(0)
        batches = [[lengths[x] if isinstance(x, int) else frames_of(x) for x in batch] for batch in sampler]
        seconds, used = time.perf_counter() - start, sum(len(b) for b in batches)
        real, padded = sum(sum(b) for b in batches), sum(len(b) * max(b) for b in batches)
        rows.append({"sampler": name, "batches": len(batches), "utterances": used, "left_out": len(lengths) - used,
                     "utterances_per_batch": round(used / len(batches), 2),
                     "real_frames_per_batch": round(real / len(batches), 1), "padding_efficiency": round(real / padded, 4),
                     "largest_batch_frames": max(sum(b) for b in batches), "seconds": round(seconds, 2)})  # fmt: skip
    for row in rows[:-1] if versus else []:
        row["real_frames_vs_f5tts"] = round(row["real_frames_per_batch"] / rows[-1]["real_frames_per_batch"], 4)
    print(*map(json.dumps, rows), sep="\n", flush=True)
    stats = {"count": len(lengths), "mean_frames": round(sum(lengths) / len(lengths), 1), "min_frames": min(lengths),
             "max_frames": max(lengths)}  # fmt: skip
    lines = [f"One epoch of batches of {what} (mean {stats['mean_frames']} frames), at most {most} utterances and "
             f"{budget} frames per batch (`python scripts/bench_data.py --batching`).", ""]  # fmt: skip
    if not versus:
        lines += ["F5-TTS was not given (`--f5tts PATH`): f5lite's figures alone.", ""]
    head = ["sampler", "batches", "utterances / batch", "real frames / batch", "padding efficiency", "left out"]
    table = [[r["sampler"], r["batches"], f"{r['utterances_per_batch']:.2f}", f"{r['real_frames_per_batch']:,.1f}",
              f"{r['padding_efficiency']:.4f}", r["left_out"], *([f"{r.get('real_frames_vs_f5tts', 1.0):.4f}x"] * versus)]
             for r in rows]  # fmt: skip
    fields = {"lengths": {**source, **stats}, "frames_per_gpu": budget, "max_samples": most,
              "f5tts": str(args.f5tts) if versus else None, "samplers": rows}  # fmt: skip
    lines += results.table(head + ["real frames vs F5-TTS"] * versus, table, " rrrrrr")
    return fields, "Batching: real frames per batch and padding", lines


def _pair(text: str) -> tuple[float, float]:
    a, b = (float(x) for x in text.split(","))
    return a, b


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; the loader's unset sizes come from the profile (`--quick` or the full dit_base one)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add, count = parser.add_argument, runner.at_least(1)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--scale", type=count, nargs="?", const=2_000_000, metavar="N", help="start-up on N cuts")
    mode.add_argument("--batching", action="store_true", help="real frames per batch and padding of the samplers")
    add("--workers", type=runner.int_list(0), help="loader workers (default 0,1,2; --scale: 2)")
    add("--frames-per-gpu", type=count, help="frame budget of a batch (default 38400, dit_base's; quick 4000)")
    add("--max-samples", type=count, help="utterances per batch at most (default 64; quick 8)")
    add("--out-dir", type=Path, default=Path(__file__).resolve().parent / "results", help="where the results go")
    add("--name", help="the results' file name (default data_cpu, scale_cpu or batching)")
    add("--note", default="", help="free text for the results table")
    add("--kinds", type=lambda t: t.split(","), default=list(KINDS), help=f"loader inputs (default {','.join(KINDS)})")
    add("--quick", action="store_true", help="loader: a small budget, few batches, one round: seconds")
    add("--batches", type=count, help="loader: timed batches (default 60; quick 3)")
    add("--warmup", type=runner.at_least(0), help="loader: untimed batches first (default 6; quick 1)")
    add("--rounds", type=count, help="loader: runs of every configuration, interleaved (default 3; quick 1)")
    add("--clips", type=count, help="loader: demo clips used, at most 200 (default 200; quick 24)")
    add("--copies", type=count, help="loader: times the clips are repeated (default: enough for the batches)")
    add("--audio-rate", type=count, help="loader: Hz of the audio files (default 22050; quick 24000, the demo's)")
    add("--shard-size", type=count, default=1000, help="loader: cuts per Shar shard (default 1000)")
    add("--baseline", type=count, default=1000, help="scale: cuts of the small CutSet (default 1,000)")
    add("--updates", type=count, default=3, help="scale: optim.max_updates (default 3)")
    add("--timeout", type=float, default=900, help="scale: seconds one training run may take")
    add("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "f5lite_scale_data", help="scale: CutSets kept")
    lengths = parser.add_mutually_exclusive_group()
    lengths.add_argument("--lognormal", type=_pair, default=(8.0, 0.5), help="batching: MEDIAN_S,SIGMA (default 8,0.5)")
    lengths.add_argument("--data", help="batching: the lengths of a prepared dataset (anything data.dir takes)")
    add("--clip", type=_pair, default=(3.0, 30.0), metavar="LOW,HIGH", help="batching: seconds (default 3,30)")
    add("--count", type=count, default=20000, help="batching: log-normal lengths drawn (default 20000)")
    add("--seed", type=int, default=0, help="batching: seed of the lengths and of the samplers (default 0)")
    add("--window", type=int, help="batching: f5lite's data.window (default: the schema's)")
    add("--fill-efficiency", type=float, help="batching: f5lite's data.fill_efficiency (default: the schema's)")
    add("--lhotse-buckets", type=lambda t: runner.int_list(1)(t) if t else [], default=[20], metavar="N[,N...]",
        help="batching: Lhotse dynamic bucketing with these bucket counts (default 20; empty: none)")  # fmt: skip
    add("--f5tts", type=Path, metavar="PATH", help="batching: an F5-TTS checkout or installation holding f5_tts/")
    args = parser.parse_args(argv)
    args.mode = "scale" if args.scale else "batching" if args.batching else "loader"
    args.name = args.name or {"loader": "data_cpu", "scale": "scale_cpu", "batching": "batching"}[args.mode]
    args.workers = args.workers or ([2] if args.scale else [0, 1, 2])
    for key, value in PROFILES["quick" if args.quick else "full"].items():
        setattr(args, key, value if getattr(args, key) is None else getattr(args, key))
    if set(args.kinds) - set(KINDS) or args.clips > 200 or args.scale and len(args.workers) > 1:
        parser.error(f"--kinds from {','.join(KINDS)}, --clips at most 200 (the demo's), --scale with one --workers")
    if not 0 < args.clip[0] <= args.clip[1] or args.lognormal[0] <= 0 or args.lognormal[1] < 0:
        parser.error("--clip needs 0 < LOW <= HIGH; --lognormal needs MEDIAN_S > 0 and SIGMA >= 0")
    need = ((args.warmup + args.batches) * _MARGIN + _BUCKETS) * args.max_samples  # cuts that surely make the batches
    args.copies = args.copies or math.ceil(need / args.clips)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or, with `--child SPEC`, one configuration) and write the results."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if (spec := runner.child_spec(argv)) is not None:
        if "overrides" in spec:
            return train_child(**spec)
        print(json.dumps(measure(**spec)))
        return 0
    args = parse_args(argv)
    # Measured first: `--f5tts PATH` puts F5-TTS on the path, where the header finds its version.
    fields, title, body = {"loader": loader, "scale": scale, "batching": batching}[args.mode](args)
    result = {**results.run_header(["f5-tts", "lhotse"]), **fields, "note": args.note}
    lines = [f"# {title}", "", f"Machine: {results.describe(result)}.", "", *body, "", args.note]
    page = "\n".join(lines[: None if args.note else -2]) + "\n"
    results.write_results(args.out_dir / f"{args.name}.json", result, page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
