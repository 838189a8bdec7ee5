"""Reading and writing audio files, with the file's limits checked before any work.

All file I/O goes through soundfile (libsndfile): torchaudio 2.9+ delegates file access to torchcodec/ffmpeg,
which f5lite does not require.

A file is not trusted to be what its header says, nor to be small when its bytes are few (silence compresses to
nothing; a header may declare 1 Hz or 44,101 Hz). Reading one therefore goes: the header first (`SoundFile` reads
only that), refused when its rate is outside `MIN_SAMPLE_RATE` to `MAX_SAMPLE_RATE`, its channels more than
`MAX_CHANNELS`, or its declared length over the caller's `max_seconds`; then the samples, `BLOCK_FRAMES` at a time,
mixed to mono as they come, stopped as soon as they pass `max_seconds` (a header may not know the length, or lie);
then one resampling (`f5lite.audio.resample`, whose cost does not grow with the rates' ratio).
"""

from __future__ import annotations

import io
import math
import os
from pathlib import Path

import soundfile as sf
import torch
from torch import Tensor

from f5lite.audio.constants import SAMPLE_RATE
from f5lite.audio.resample import resample

AUDIO_EXTENSIONS = frozenset({".wav", ".flac", ".ogg", ".opus", ".mp3", ".aif", ".aiff", ".au", ".caf", ".w64"})
"""Audio file suffixes (lower case) that the dataset tools pick up from a folder; libsndfile reads all of them."""
MIN_SAMPLE_RATE = 8_000
"""The lowest sample rate read (telephone speech); below it a header is wrong or the audio useless for speech."""
MAX_SAMPLE_RATE = 192_000
"""The highest sample rate read (studio recorders' highest)."""
MAX_CHANNELS = 8
"""The most channels read (7.1 surround); every channel is decoded before the mix to mono, so each costs."""
BLOCK_FRAMES = 1 << 16
"""Frames decoded at a time (about 1.4 s at 48 kHz: a few MB at `MAX_CHANNELS`)."""
_UNKNOWN_LENGTH = 1 << 62
"""libsndfile reports a length it cannot know (a streamed FLAC's) as the largest count: above this, not a length."""


class AudioError(ValueError):
    """An audio file is missing, unreadable, empty, or cannot be written."""


def load_audio(
    path: str | os.PathLike[str], sample_rate: int = SAMPLE_RATE, *, max_seconds: float | None = None
) -> Tensor:
    """Read an audio file as a mono float32 waveform at `sample_rate`, its limits checked first (module docstring).

    Any format libsndfile reads works (WAV, FLAC, OGG/Vorbis, MP3, AIFF, ...), with any sample type and up to
    `MAX_CHANNELS` channels. Channels are averaged to mono and the audio is resampled
    (`f5lite.audio.resample.resample`) when the file's rate differs from `sample_rate`. Integer samples are scaled to
    [-1, 1).

    Args:
        path: the audio file.
        sample_rate: rate of the returned waveform in Hz.
        max_seconds: the longest audio accepted, checked on the header and while decoding; None: no limit.

    Returns:
        Tensor `[samples]`, float32, on the CPU.

    Raises:
        AudioError: the file does not exist, cannot be decoded, holds no samples, or is outside the limits.
        ValueError: `sample_rate` is not positive.
    """
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    file = Path(path)
    if not file.is_file():
        problem = "is a directory, not an audio file" if file.is_dir() else "no such file"
        raise AudioError(f"cannot read audio file '{file}': {problem}")
    return _decode(str(file), f"audio file '{file}'", sample_rate, max_seconds)


def decode_audio(data: bytes, name: str, sample_rate: int = SAMPLE_RATE, *, max_seconds: float | None = None) -> Tensor:
    """Decode an audio file held in memory (an upload, a Shar shard member) exactly as `load_audio` reads one on disk.

    Args:
        data: the file's bytes (any format libsndfile reads).
        name: what to call it in messages.
        sample_rate: rate of the returned waveform in Hz.
        max_seconds: the longest audio accepted; None: no limit.

    Returns:
        Tensor `[samples]`, float32, mono, on the CPU.

    Raises:
        AudioError: the bytes cannot be decoded, hold no samples, or are outside the limits.
    """
    return _decode(io.BytesIO(data), name, sample_rate, max_seconds)


def check_header(name: str, sample_rate: int, channels: int, frames: int, max_seconds: float | None) -> None:
    """Refuse a file by what its header declares (see the module docstring).

    Args:
        name: what to call the file in messages.
        sample_rate: its declared rate in Hz.
        channels: its declared channels.
        frames: its declared length in frames (above 2**62: unknown).
        max_seconds: the longest audio accepted; None: no limit.

    Raises:
        AudioError: one line naming the file and the limit.
    """
    if not MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE:
        raise AudioError(
            f"cannot read {name}: its sample rate is {sample_rate:,} Hz; audio must be {MIN_SAMPLE_RATE:,} to "
            f"{MAX_SAMPLE_RATE:,} Hz"
        )
    if not 1 <= channels <= MAX_CHANNELS:
        raise AudioError(f"cannot read {name}: it has {channels} channels; at most {MAX_CHANNELS} are read")
    if max_seconds is not None and frames < _UNKNOWN_LENGTH and frames / sample_rate > max_seconds:
        raise AudioError(f"{name} is {frames / sample_rate:.1f} s long; the most accepted is {max_seconds:g} s")


def _decode(source: str | io.BytesIO, name: str, sample_rate: int, max_seconds: float | None) -> Tensor:
    try:
        with sf.SoundFile(source) as audio:
            rate = int(audio.samplerate)
            check_header(name, rate, int(audio.channels), int(audio.frames), max_seconds)
            mono = _read_mono(audio, name, None if max_seconds is None else math.floor(max_seconds * rate))
    except (sf.SoundFileError, TypeError, RuntimeError) as err:
        # TypeError: headerless formats (.raw) that libsndfile cannot decode without being told the layout.
        raise AudioError(f"cannot read {name}: {_reason(err)}") from err
    if mono.shape[0] == 0:
        raise AudioError(f"cannot read {name}: it contains no samples")
    return resample(mono, rate, sample_rate).contiguous()


def _read_mono(audio: sf.SoundFile, name: str, limit: int | None) -> Tensor:
    """The open file's samples `[frames]` float32, mixed to mono block by block, refused past `limit` frames."""
    blocks, frames = [], 0
    while True:
        block = audio.read(BLOCK_FRAMES, dtype="float32", always_2d=True)
        frames += block.shape[0]
        if limit is not None and frames > limit:
            raise AudioError(f"{name} decodes to more than {limit / audio.samplerate:g} s, the most accepted")
        if block.shape[0]:
            blocks.append(torch.from_numpy(block).mean(dim=1))
        if block.shape[0] < BLOCK_FRAMES:
            return torch.cat(blocks) if blocks else torch.zeros(0)


def save_audio(path: str | os.PathLike[str], waveform: Tensor, sample_rate: int, subtype: str | None = None) -> None:
    """Write a waveform to an audio file; the format follows the file extension (.wav, .flac, .ogg, ...).

    Args:
        path: the file to write; its directory must exist.
        waveform: `[samples]` (mono) or `[channels, samples]`, any float dtype and device, nominally in [-1, 1].
        sample_rate: sample rate in Hz.
        subtype: a soundfile subtype such as "PCM_16" (the WAV and FLAC default), "PCM_24" or "FLOAT".
            Integer subtypes clip samples to [-1, 1].

    Raises:
        AudioError: the directory does not exist, or soundfile cannot write this format, subtype or rate.
        ValueError: `waveform` is not 1-D or 2-D, or `sample_rate` is not positive.
    """
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    if waveform.dim() not in (1, 2):
        raise ValueError(f"waveform must be [samples] or [channels, samples], got shape {tuple(waveform.shape)}")
    file = Path(path)
    if not file.parent.is_dir():
        raise AudioError(f"cannot write audio file '{file}': directory '{file.parent}' does not exist")
    # soundfile wants [samples, channels].
    data = waveform.detach().to(device="cpu", dtype=torch.float32).numpy().T
    try:
        sf.write(file, data, sample_rate, subtype=subtype)
    except (sf.SoundFileError, TypeError, ValueError) as err:
        raise AudioError(f"cannot write audio file '{file}': {_reason(err)}") from err


def _reason(err: Exception) -> str:
    """The useful part of a soundfile error (libsndfile's own text repeats the file name)."""
    return err.error_string if isinstance(err, sf.LibsndfileError) else str(err)
