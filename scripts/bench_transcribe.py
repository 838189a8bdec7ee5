"""How fast `f5lite-transcribe` turns recordings into clips: hours of audio per hour, per recogniser and worker count.

    python scripts/bench_transcribe.py                                  # 10 minutes made of the demo clips
    python scripts/bench_transcribe.py --minutes 30 --workers 1,2,4
    python scripts/bench_transcribe.py --input ~/podcast --asr pocketsphinx --asr faster-whisper:~/models/large-v3

The recordings are `--input DIR` (any folder f5lite-transcribe takes) or, by default, made of the demo clips: one
file per demo speaker, 44.1 kHz stereo FLAC (as a podcast or phone export comes), its utterances separated by pauses
of 0.2 to 1.5 s with mild noise, `--minutes` in all. Each `--asr` spec (see `f5lite.metrics.asr`; default the
offline PocketSphinx) runs with each `--workers` count, as a whole `transcribe()` into a fresh OUT: models loaded,
recordings read, sliced, transcribed, filtered, written. The VAD alone is timed too (`speech_track` over every file,
in this process): the part every backend shares. Reported per row: seconds of wall clock, the speed as hours of
audio per hour (audio seconds / wall seconds), and the clips kept. The results, with machine, versions and date, are
printed and written to `--out-dir` (default `scripts/results/`) as `transcribe_cpu.json` and `.md` (`--name`).
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

from f5lite.bench import sidebyside as sbs
from f5lite.bench.args import int_list
from f5lite.paths import demo_dir
from f5lite.transcribe.run import TranscribeOptions, find_recordings, transcribe
from f5lite.transcribe.source import TranscribeSettings
from f5lite.transcribe.vad import load_vad_model, speech_track

RESULTS = Path(__file__).resolve().parent / "results"
DEMO_RATE = 24_000
OUT_RATE = 44_100


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
    out = Path(tempfile.mkdtemp(dir=scratch)) / "out"
    start = time.perf_counter()
    result = transcribe(recordings_dir, out, TranscribeOptions(TranscribeSettings(asr=asr), workers=workers))
    wall = time.perf_counter() - start
    totals = result.report["totals"]
    return {
        "stage": "transcribe",
        "asr": asr,
        "workers": workers,
        "wall_s": round(wall, 2),
        "clips_kept": totals["clips_kept"],
        "failed": totals["failed"],
    }


def markdown(document: dict[str, Any]) -> str:
    lines = [
        "# f5lite-transcribe speed",
        "",
        f"{sbs.describe(document)}. {document['audio_hours'] * 60:.1f} minutes of audio in "
        f"{document['files']} file(s) ({document['input']}). Speed: hours of audio per hour of wall clock.",
        "",
        "| stage | recogniser | workers | wall clock (s) | speed (h/h) | clips kept |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for row in document["rows"]:
        lines.append(
            f"| {row['stage']} | {row['asr'] or '-'} | {row['workers']} | {row['wall_s']:.1f} | "
            f"{row['speed']:.1f} | {row.get('clips_kept', '-')} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", type=Path, help="a folder of recordings (default: made of the demo clips)")
    parser.add_argument("--minutes", type=float, default=10.0, help="audio made of the demo clips (default: 10)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--asr", action="append", help="recogniser spec, repeatable (default: pocketsphinx)")
    parser.add_argument("--workers", type=int_list(1), default=[1, 2], help="worker counts (default: 1,2)")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    parser.add_argument("--name", default="transcribe_cpu")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        source = args.input
        if source is None:
            source = scratch / "recordings"
            source.mkdir()
            make_recordings(source, args.minutes, args.seed)
        recordings = find_recordings(source.resolve())
        audio_s = sum(sf.info(str(path)).duration for path in recordings)
        rows = [time_vad(recordings)]
        for asr in args.asr or ["pocketsphinx"]:
            for workers in args.workers:
                rows.append(time_run(source, asr, workers, scratch))
                print(rows[-1], flush=True)
    for row in rows:
        row["speed"] = round(audio_s / row["wall_s"], 1)
    document = {
        **sbs.run_header(["silero-vad", "pocketsphinx"]),
        "input": str(args.input) if args.input else f"made of the demo clips, seed {args.seed}",
        "files": len(recordings),
        "audio_hours": round(audio_s / 3600, 4),
        "rows": rows,
    }
    page = markdown(document)
    print(page)
    sbs.write_results(args.out_dir / f"{args.name}.json", document, page)


if __name__ == "__main__":
    main()
