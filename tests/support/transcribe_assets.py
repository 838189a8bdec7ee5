"""Long recordings made of the demo clips, for the `f5lite-transcribe` tests: where each utterance's speech is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
import torch
import torchaudio.functional as AF

from f5lite.paths import demo_dir

RATE = 24_000
PAUSES = (0.2, 0.45, 0.7, 1.0, 1.5)
"""Silence between two utterances' speech, in turn (seconds)."""


@dataclass(frozen=True)
class Recording:
    """A built recording and where its utterances' speech lies (seconds)."""

    path: Path
    speech: list[tuple[float, float]]

    @property
    def boundaries(self) -> list[float]:
        """The middle of each pause between two utterances."""
        return [(a[1] + b[0]) / 2 for a, b in zip(self.speech, self.speech[1:], strict=False)]


def speech_extent(wave: np.ndarray, rate: int) -> tuple[int, int]:
    """First and last sample of a clean clip's speech: 10 ms frames within 40 dB of its loudest frame."""
    hop = rate // 100
    frames = wave[: len(wave) // hop * hop].reshape(-1, hop)
    db = 10 * np.log10(np.maximum((frames**2).mean(axis=1), 1e-12))
    loud = np.flatnonzero(db > db.max() - 40)
    return int(loud[0]) * hop, int(loud[-1] + 1) * hop


def build_recording(
    path: Path,
    speaker: str,
    count: int,
    *,
    rate: int = RATE,
    stereo: bool = False,
    seed: int = 0,
    short_tail: bool = False,
) -> Recording:
    """`count` demo utterances of one speaker, trimmed to their speech, with the `PAUSES` between them in turn,
    half a second of lead-in and tail, and mild noise (about -54 dBFS); resampled to `rate`, stereo if asked.

    Utterances of less than 2.3 s of speech are passed over, so that each one is a clip of its own at the default
    `min_seconds` of 2 s. `short_tail` adds, 1.5 s after the last, the first 1.2 s of another utterance: speech too
    short for a clip, which the report must list as left out.
    """
    g = torch.Generator().manual_seed(seed)
    parts, speech, t = [np.zeros(RATE // 2, np.float32)], [], 0.5
    for name in sorted((demo_dir() / "audio" / speaker).iterdir()):
        wave, sr = sf.read(name, dtype="float32")
        first, last = speech_extent(wave, sr)
        if (last - first) / sr < 2.3:
            continue
        pause = PAUSES[len(speech) % len(PAUSES)] if len(speech) + 1 < count else 0.5
        parts += [wave[first:last], np.zeros(round(pause * RATE), np.float32)]
        speech.append((t, t + (last - first) / RATE))
        t += (last - first) / RATE + pause
        if len(speech) == count:
            break
    if short_tail:
        wave, sr = sf.read(
            demo_dir() / "audio" / speaker / sorted(p.name for p in (demo_dir() / "audio" / speaker).iterdir())[-1],
            dtype="float32",
        )
        first, _ = speech_extent(wave, sr)
        parts += [np.zeros(RATE, np.float32), wave[first : first + round(1.2 * RATE)], np.zeros(RATE // 2, np.float32)]
        speech.append((t + 1.0, t + 2.2))
    mono = torch.from_numpy(np.concatenate(parts))
    mono = mono + 0.002 * torch.randn(mono.shape, generator=g)
    out = AF.resample(mono, RATE, rate) if rate != RATE else mono
    data = out[:, None].repeat(1, 2) * torch.tensor([1.0, 0.8]) if stereo else out
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, data.numpy(), rate)
    return Recording(path, speech)
