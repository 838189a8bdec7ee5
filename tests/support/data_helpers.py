"""Builders of small audio datasets for the data and prepare tests (written with soundfile, a few hundred kB each)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import soundfile as sf
from lhotse import CutSet
from lhotse.cut import Cut


def write_tone(
    path: Path, seconds: float, sample_rate: int = 24000, channels: int = 1, subtype: str | None = None
) -> Path:
    """A quiet two-tone signal (a pure sine would compress to nothing and be a poor test of decoding)."""
    t = np.arange(round(seconds * sample_rate)) / sample_rate
    mono = 0.2 * np.sin(2 * np.pi * 220 * t) + 0.05 * np.sin(2 * np.pi * 1330 * t)
    data = np.repeat(mono[:, None], channels, axis=1).astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, data, sample_rate, subtype=subtype)
    return path


def file_digests(folder: Path) -> dict[str, tuple[str, int]]:
    """Content hash and modification time of every file under `folder`."""
    return {
        str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def read_cuts(out: Path) -> list[Cut]:
    """The cuts `f5lite-prepare` wrote to `out/cuts.jsonl.gz`, in file order."""
    return list(CutSet.from_jsonl_lazy(out / "cuts.jsonl.gz"))


def audio_path(cut: Cut, out: Path) -> Path:
    """The cut's audio file, absolute (recorded relative to `out` when inside it)."""
    return out / cut.recording.sources[0].source


def build_messy_dataset(root: Path) -> tuple[Path, set[str], dict[str, str], Path]:
    """An F5-TTS metadata.csv over good and bad files: one of every problem `f5lite-prepare` must catch.

    Returns:
        `(metadata.csv, good file names, {bad file name: expected reason}, base vocab)`. The base vocab holds every
        character of the good texts, so with `--fixed-vocab` only the row with "unknown characters" is refused.
    """
    audio = root / "audio"
    good = {
        "mono_24k.wav": "A plain file.",
        "stereo_48k.flac": "Two channels at a high rate.",
        "narrow_8k.wav": "A telephone rate file.",
        "float_16k.wav": "Float samples, lower rate.",
    }
    write_tone(audio / "mono_24k.wav", 1.0)
    write_tone(audio / "stereo_48k.flac", 1.2, sample_rate=48000, channels=2)
    write_tone(audio / "narrow_8k.wav", 1.5, sample_rate=8000)
    write_tone(audio / "float_16k.wav", 1.1, sample_rate=16000, subtype="FLOAT")

    rng = np.random.default_rng(0)
    (audio / "corrupt.wav").write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunk" + rng.bytes(2000))
    (audio / "empty.wav").write_bytes(b"")
    sf.write(audio / "no_samples.wav", np.zeros((0, 1), dtype=np.float32), 24000)
    write_tone(audio / "short.wav", 0.1)
    write_tone(audio / "long.wav", 40.0, sample_rate=8000)
    nan = write_tone(audio / "nan.wav", 1.0, subtype="FLOAT")
    data, rate = sf.read(nan, dtype="float32")
    data[500] = np.nan
    sf.write(nan, data, rate, subtype="FLOAT")
    write_tone(audio / "empty_text.wav", 1.0)
    write_tone(audio / "unknown_chars.wav", 1.0)
    write_tone(audio / "wrong_transcript.wav", 1.0)
    bad = {
        "corrupt.wav": ("Corrupt data.", "unreadable"),
        "empty.wav": ("An empty file.", "empty_audio"),
        "no_samples.wav": ("A header and nothing else.", "empty_audio"),
        "short.wav": ("Too short.", "too_short"),
        "long.wav": ("Far too long.", "too_long"),
        "nan.wav": ("Not a number inside.", "non_finite"),
        "missing.wav": ("This file was never written.", "missing_audio"),
        "empty_text.wav": ("   ", "empty_text"),
        "unknown_chars.wav": ("Zażółć gęślą jaźń.", "unknown_chars"),
        "wrong_transcript.wav": ("This transcript is far too long for one second of audio. " * 2, "speaking_rate"),
    }
    lines = ["audio_file|text"]
    lines += [f"audio/{name}|{text}" for name, text in good.items()]
    lines += [f"audio/{name}|{text}" for name, (text, _) in bad.items()]
    lines.append("audio/mono_24k.wav|The same file listed twice.")
    metadata = root / "metadata.csv"
    metadata.write_text("\n".join(lines) + "\n", encoding="utf-8")

    vocab = root / "base_vocab.txt"
    characters = sorted(set("".join(good.values())) - {" "})
    vocab.write_text(" \n" + "\n".join(characters) + "\n", encoding="utf-8")
    expected = {name: reason for name, (_, reason) in bad.items()}
    return metadata, set(good), expected, vocab
