"""Reading and writing audio files, with the file's limits checked before any work.

All file I/O goes through soundfile (libsndfile): torchaudio 2.9+ delegates file access to torchcodec/ffmpeg,
which f5lite does not require.

A file is not trusted to be what its header says, nor to be small when its bytes are few (silence compresses to
nothing; a header may declare 1 Hz or 44,101 Hz). Reading one therefore goes: the header first (`SoundFile` reads
only that), refused when its rate is outside `MIN_SAMPLE_RATE` to `MAX_SAMPLE_RATE`, its channels more than
`MAX_CHANNELS`, or its declared length over the caller's `max_seconds`; then the samples, `BLOCK_FRAMES` at a time,
mixed to mono as they come, stopped as soon as they pass `max_seconds` (a header may not know the length, or lie);
then one resampling (`f5lite.audio.resample`, whose cost does not grow with the rates' ratio).

Writing one (`save_audio`) goes `WRITE_BLOCK_FRAMES` at a time, never the whole waveform in one call: libvorbis,
inside libsndfile, copies the first write of an Ogg Vorbis stream onto the stack (4 bytes a frame, whatever the
channels), so one call of 2.1 million frames (87 s at 24 kHz) overflows Linux's 8 MiB main-thread stack and kills
the process with SIGSEGV, and a thread's smaller stack overflows sooner. FLAC, Ogg Opus, MP3 and WAV have no such
limit, but take the same blocks. The file is written under a temporary name and renamed into place
(`f5lite.atomic.atomic_path`), so a failure or a crash leaves the previous file or none, never a half-written one
that looks whole.
"""

from __future__ import annotations

import io
import math
import os
from pathlib import Path

import numpy as np
import soundfile as sf
import torch
from torch import Tensor

from f5lite.atomic import atomic_path
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
WRITE_BLOCK_FRAMES = 1 << 14
"""Frames handed to libsndfile per write (0.68 s at 24 kHz): the 64 KiB libvorbis puts on the stack for the first
one (module docstring) fits any thread's stack, where a whole waveform's overflows it from stack size / 4 frames."""
_WRITE_FORMATS = {".opus": ("OGG", "OPUS"), ".aif": ("AIFF", None)}
"""libsndfile's format (and default subtype) of the suffixes that are not a format's name (`.ogg` is OGG/Vorbis)."""
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
    """Write a waveform to an audio file, atomically and in blocks; the format follows the file extension.

    The suffix picks the format: .wav, .flac, .ogg (Vorbis), .opus (Opus in Ogg; 8, 12, 16, 24 or 48 kHz only),
    .mp3, .aif/.aiff, .au, .caf, .w64, or any other format libsndfile writes under its own name. The samples go to
    libsndfile `WRITE_BLOCK_FRAMES` at a time, so an output of any length is written (module docstring), into a
    temporary file that replaces `path` only once it is whole.

    Args:
        path: the file to write; its directory must exist. A file there is replaced.
        waveform: `[samples]` (mono) or `[channels, samples]`, any float dtype and device, nominally in [-1, 1].
        sample_rate: sample rate in Hz.
        subtype: a soundfile subtype such as "PCM_16" (the WAV and FLAC default), "PCM_24" or "FLOAT".
            Integer subtypes clip samples to [-1, 1].

    Raises:
        AudioError: the directory does not exist, `path` is a directory, the suffix names no format, or soundfile
            cannot write this format, subtype or rate (or the disk refuses the file); `path` is then left as it was.
        ValueError: `waveform` is not 1-D or 2-D, or `sample_rate` is not positive.
    """
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    if waveform.dim() not in (1, 2):
        raise ValueError(f"waveform must be [samples] or [channels, samples], got shape {tuple(waveform.shape)}")
    file = Path(path)
    if not file.parent.is_dir():
        raise AudioError(f"cannot write audio file '{file}': directory '{file.parent}' does not exist")
    if file.is_dir():
        raise AudioError(f"cannot write audio file '{file}': it is a directory")
    # The temporary file's name does not end in the suffix, so the format is named rather than guessed from it.
    file_format, default_subtype = _write_format(file)
    # soundfile wants [samples, channels], C-contiguous so that each block is one slice without a copy.
    data = np.ascontiguousarray(waveform.detach().to(device="cpu", dtype=torch.float32).numpy().T)
    channels = 1 if data.ndim == 1 else data.shape[1]
    try:
        with (
            atomic_path(file) as temporary,
            sf.SoundFile(
                temporary, "w", sample_rate, channels, subtype or default_subtype, format=file_format
            ) as audio,
        ):
            for start in range(0, data.shape[0], WRITE_BLOCK_FRAMES):
                audio.write(data[start : start + WRITE_BLOCK_FRAMES])
    except (sf.SoundFileError, TypeError, ValueError) as err:
        raise AudioError(f"cannot write audio file '{file}': {_reason(err)}") from err
    except OSError as err:  # the temporary file's flush or rename: a full disk, a read-only directory
        raise AudioError(f"cannot write audio file '{file}': {err.strerror or err}") from err


def _write_format(file: Path) -> tuple[str, str | None]:
    """The libsndfile format of a file's suffix, and the subtype it takes unless one is asked for."""
    suffix = file.suffix.lower()
    if suffix in _WRITE_FORMATS:
        return _WRITE_FORMATS[suffix]
    name = suffix[1:].upper()
    if not name or name not in sf.available_formats():
        raise AudioError(
            f"cannot write audio file '{file}': the suffix '{file.suffix}' names no audio format; use .wav, .flac, "
            ".ogg, .opus or .mp3"
        )
    return name, None


def _reason(err: Exception) -> str:
    """The useful part of a soundfile error (libsndfile's own text repeats the file name)."""
    return err.error_string if isinstance(err, sf.LibsndfileError) else str(err)
