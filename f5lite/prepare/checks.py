"""Per-utterance checks of `f5lite-prepare`: each returns a `Skip` naming the problem, or the facts it measured.

The audio checks read the file's header first, so a file far too long is rejected without being decoded, then
decode it the way training will (as `f5lite.audio.load_audio` does: its rate and channels within `load_audio`'s
limits, the channels mixed to mono, the rate resampled to 24 kHz), so a file that passes here also loads at training
time. The decoded file also gives the
exact sample and channel counts that the cut records (a header's count can be an estimate, MP3's for one, and
Lhotse checks the count when it loads the audio).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
import torch
from torch import Tensor

from f5lite.audio import SAMPLE_RATE, AudioError, frames_for_samples, min_samples
from f5lite.audio.io import check_header
from f5lite.audio.resample import resample
from f5lite.prepare.skips import Skip


@dataclass(frozen=True)
class Limits:
    """What `f5lite-prepare` accepts; the defaults are F5-TTS's training range (0.3 to 30 s).

    Attributes:
        min_seconds: Shortest audio kept.
        max_seconds: Longest audio kept.
        min_chars_per_second: Fewest transcript characters (white space not counted) per second of audio; below
            it the transcript probably covers only part of the audio.
        max_chars_per_second: Most characters per second; above it the transcript is probably longer than what
            is said (fast English is about 20; Chinese about 6 characters per second).

    Raises:
        ValueError: A negative bound, or a lower bound above its upper bound.
    """

    min_seconds: float = 0.3
    max_seconds: float = 30.0
    min_chars_per_second: float = 1.0
    max_chars_per_second: float = 35.0

    def __post_init__(self) -> None:
        for name in ("min_seconds", "max_seconds", "min_chars_per_second", "max_chars_per_second"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name}={value!r} is not valid; it must be a number >= 0")
        if self.min_seconds >= self.max_seconds:
            raise ValueError(f"min_seconds={self.min_seconds} must be below max_seconds={self.max_seconds}")
        if self.min_chars_per_second >= self.max_chars_per_second:
            raise ValueError(
                f"min_chars_per_second={self.min_chars_per_second} must be below "
                f"max_chars_per_second={self.max_chars_per_second}"
            )


@dataclass(frozen=True)
class CheckedAudio:
    """An audio file that passed the checks.

    Attributes:
        waveform: `[samples]` float32 mono at 24 kHz.
        duration: Length of the source file in seconds (`num_samples / sample_rate`).
        sample_rate: Sample rate of the source file in Hz.
        frames: Mel frames of the waveform for the mel convention checked against.
        num_samples: Samples per channel in the source file, as decoded (exact).
        channels: Channel count of the source file.
    """

    waveform: Tensor
    duration: float
    sample_rate: int
    frames: int
    num_samples: int
    channels: int


def check_text(path: Path, text: str) -> Skip | None:
    """Reject an empty transcript.

    Args:
        path: The audio file the transcript belongs to (named in the skip).
        text: The transcript.

    Returns:
        A `Skip` ("empty_text"), or None when the text is usable.
    """
    if not text.strip():
        return Skip(path, "empty_text", "the transcript is empty")
    return None


def check_audio(path: Path, limits: Limits, mel_type: str = "vocos") -> CheckedAudio | Skip:
    """Check that an audio file exists, decodes, has samples, fits the limits and holds only finite samples.

    Args:
        path: The audio file.
        limits: The accepted duration range.
        mel_type: The mel convention whose frame count is returned.

    Returns:
        The decoded audio, or a `Skip` with reason "missing_audio", "unreadable", "empty_audio", "too_short",
        "too_long" or "non_finite".
    """
    if not path.is_file():
        return Skip(path, "missing_audio", "no such file" if not path.exists() else "not a regular file")
    if path.stat().st_size == 0:
        return Skip(path, "empty_audio", "the file is 0 bytes")
    try:
        info = sf.info(str(path))
    except (sf.SoundFileError, TypeError, RuntimeError) as err:
        return Skip(path, "unreadable", str(err))
    if info.frames <= 0:
        return Skip(path, "empty_audio", "the file holds no samples")
    try:
        check_header(path.name, int(info.samplerate), int(info.channels), int(info.frames), None)
    except AudioError as err:
        return Skip(path, "unreadable", str(err))
    duration = info.frames / info.samplerate
    if duration < limits.min_seconds:
        return Skip(path, "too_short", f"{duration:.3f} s is below the minimum {limits.min_seconds} s")
    if duration > limits.max_seconds:
        return Skip(path, "too_long", f"{duration:.3f} s is above the maximum {limits.max_seconds} s")
    try:
        data, sample_rate = sf.read(str(path), dtype="float32", always_2d=True)
    except (sf.SoundFileError, TypeError, RuntimeError) as err:
        return Skip(path, "unreadable", str(err))
    if data.shape[0] == 0:
        return Skip(path, "empty_audio", "the file decodes to no samples")
    waveform = _mono_at_training_rate(data, int(sample_rate))
    if not bool(torch.isfinite(waveform).all()):
        bad = int((~torch.isfinite(waveform)).sum())
        return Skip(path, "non_finite", f"{bad} NaN or infinite sample(s) after decoding at {SAMPLE_RATE} Hz")
    if waveform.numel() < min_samples(mel_type):
        return Skip(path, "too_short", f"{waveform.numel()} samples at {SAMPLE_RATE} Hz is less than one mel frame")
    num_samples, channels = data.shape
    return CheckedAudio(
        waveform=waveform,
        duration=num_samples / sample_rate,
        sample_rate=int(sample_rate),
        frames=frames_for_samples(waveform.numel(), mel_type),
        num_samples=int(num_samples),
        channels=int(channels),
    )


def _mono_at_training_rate(data: np.ndarray, sample_rate: int) -> Tensor:
    # The same steps as f5lite.audio.load_audio, applied to the samples already decoded here (decoding twice, once
    # for the exact counts and once for the waveform, would double the cost); a test keeps the two bit-identical.
    return resample(torch.from_numpy(data).mean(dim=1), sample_rate, SAMPLE_RATE).contiguous()


def check_speaking_rate(path: Path, text: str, duration: float, limits: Limits) -> Skip | None:
    """Reject a transcript whose length does not fit the audio's duration (probably the wrong transcript).

    Args:
        path: The audio file (named in the skip).
        text: The transcript.
        duration: The audio's duration in seconds.
        limits: The accepted characters-per-second range.

    Returns:
        A `Skip` ("speaking_rate"), or None when the rate is plausible.
    """
    characters = sum(not c.isspace() for c in text)
    rate = characters / duration
    if rate < limits.min_chars_per_second or rate > limits.max_chars_per_second:
        return Skip(
            path,
            "speaking_rate",
            f"{characters} characters in {duration:.2f} s is {rate:.1f} per second, outside "
            f"[{limits.min_chars_per_second}, {limits.max_chars_per_second}]: is it the right transcript?",
        )
    return None
