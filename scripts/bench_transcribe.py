"""How fast `f5lite-transcribe` turns recordings into clips: hours of audio per hour, per recogniser and worker count.

    python scripts/bench_transcribe.py                                  # 10 minutes made of the demo clips
    python scripts/bench_transcribe.py --input ~/podcast --asr pocketsphinx --asr faster-whisper:~/models/large-v3

The recordings are `--input DIR` or one 44.1 kHz stereo FLAC per demo speaker (its utterances, pauses of 0.2 to 1.5 s,
mild noise, `--minutes` in all). Each `--asr` spec runs with each `--workers` count as a whole `transcribe()`, and
the VAD alone: wall clock, hours of audio per hour, clips kept (`--out-dir/transcribe_cpu.{json,md}`).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
import torch
import torchaudio.functional as AF

from benchmarks import results
from benchmarks.runner import int_list
from f5lite.paths import demo_dir
from f5lite.transcribe.run import TranscribeOptions, find_recordings, transcribe
from f5lite.transcribe.source import TranscribeSettings
from f5lite.transcribe.vad import load_vad_model, speech_track

DEMO_RATE, OUT_RATE = 24_000, 44_100


def make_recordings(folder: Path, minutes: float, seed: int) -> None:
    """One 44.1 kHz stereo FLAC per demo speaker, `minutes` in all, utterances cycled with pauses of 0.2 to 1.5 s."""
    rng = np.random.default_rng(seed)
    speakers = sorted(p for p in (demo_dir() / "audio").iterdir() if p.is_dir())
    per_file = minutes * 60 / len(speakers)
    for speaker in speakers:
        clips = [sf.read(path, dtype="float32")[0] for path in sorted(speaker.iterdir())]
        parts, seconds, i = [], 0.0, 0
        while seconds < per_file:
            pause = np.zeros(round(rng.uniform(0.2, 1.5) * DEMO_RATE), np.float32)
            parts += [clips[i % len(clips)], pause]
            seconds += (len(parts[-2]) + len(pause)) / DEMO_RATE
            i += 1
        mono = torch.from_numpy(np.concatenate(parts))
        mono = mono + 0.002 * torch.from_numpy(rng.standard_normal(len(mono)).astype(np.float32))
        wave = AF.resample(mono, DEMO_RATE, OUT_RATE)
        sf.write(folder / f"{speaker.name}.flac", torch.stack([wave, 0.8 * wave], dim=1).numpy(), OUT_RATE)


def time_vad(recordings: list[Path]) -> dict[str, Any]:
    """The VAD alone over every recording (model loaded before the clock starts)."""
    model = load_vad_model()
    start = time.perf_counter()
    for path in recordings:
        speech_track(path, model)
    return {"stage": "vad only", "asr": None, "workers": 1, "wall_s": round(time.perf_counter() - start, 2)}


def time_run(recordings_dir: Path, asr: str, workers: int, scratch: Path) -> dict[str, Any]:
    """One whole `transcribe()` into a fresh OUT."""
    options, out = TranscribeOptions(TranscribeSettings(asr=asr), workers=workers), Path(tempfile.mkdtemp(dir=scratch))
    start = time.perf_counter()
    totals = transcribe(recordings_dir, out / "out", options).report["totals"]
    return {"stage": "transcribe", "asr": asr, "workers": workers, "wall_s": round(time.perf_counter() - start, 2),
            "clips_kept": totals["clips_kept"], "failed": totals["failed"]}  # fmt: skip


def markdown(document: dict[str, Any]) -> str:
    """The rows as a Markdown page."""
    rows = [[r["stage"], r["asr"] or "-", r["workers"], f"{r['wall_s']:.1f}", f"{r['speed']:.1f}", r.get("clips_kept", "-")]
            for r in document["rows"]]  # fmt: skip
    head = ["stage", "recogniser", "workers", "wall clock (s)", "speed (h/h)", "clips kept"]
    lines = ["# f5lite-transcribe speed", "",
             f"{results.describe(document)}. {document['audio_hours'] * 60:.1f} minutes of audio in {document['files']} "
             f"file(s) ({document['input']}). Speed: hours of audio per hour of wall clock.", "",
             *results.table(head, rows, "  rrrr")]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    """Time the VAD and every recogniser and worker count; write `NAME.json` and `.md`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--input", type=Path, help="a folder of recordings (default: made of the demo clips)")
    add("--minutes", type=float, default=10.0, help="audio made of the demo clips (default: 10)")
    add("--seed", type=int, default=0)
    add("--asr", action="append", help="recogniser spec, repeatable (default: pocketsphinx)")
    add("--workers", type=int_list(1), default=[1, 2], help="worker counts (default: 1,2)")
    add("--out-dir", type=Path, default=Path(__file__).resolve().parent / "results")
    add("--name", default="transcribe_cpu")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch_dir:
        if (source := args.input) is None:
            (source := Path(scratch_dir) / "recordings").mkdir()
            make_recordings(source, args.minutes, args.seed)
        recordings = find_recordings(source.resolve())
        audio_s = sum(sf.info(str(path)).duration for path in recordings)
        rows = [time_vad(recordings)]
        for asr in args.asr or ["pocketsphinx"]:
            for workers in args.workers:
                rows.append(time_run(source, asr, workers, Path(scratch_dir)))
                print(rows[-1], flush=True)
    document = {**results.run_header(["silero-vad", "pocketsphinx"]),
                "input": str(args.input) if args.input else f"made of the demo clips, seed {args.seed}",
                "files": len(recordings), "audio_hours": round(audio_s / 3600, 4),
                "rows": [{**row, "speed": round(audio_s / row["wall_s"], 1)} for row in rows]}  # fmt: skip
    page = markdown(document)
    print(page)
    results.write_results(args.out_dir / f"{args.name}.json", document, page)


if __name__ == "__main__":
    main()
