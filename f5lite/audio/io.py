"""Reading and writing audio files.

All file I/O goes through soundfile (libsndfile): torchaudio 2.9+ delegates file access to torchcodec/ffmpeg,
which f5lite does not require. torchaudio is used only for resampling.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import soundfile as sf
import torch
import torchaudio
from torch import Tensor

from f5lite.audio.constants import SAMPLE_RATE

AUDIO_EXTENSIONS = frozenset({".wav", ".flac", ".ogg", ".opus", ".mp3", ".aif", ".aiff", ".au", ".caf", ".w64"})
"""Audio file suffixes (lower case) that the dataset tools pick up from a folder; libsndfile reads all of them."""


class AudioError(ValueError):
    """An audio file is missing, unreadable, empty, or cannot be written."""


def load_audio(path: str | os.PathLike[str], sample_rate: int = SAMPLE_RATE) -> Tensor:
    """Read an audio file as a mono float32 waveform at `sample_rate`.

    Any format libsndfile reads works (WAV, FLAC, OGG/Vorbis, MP3, AIFF, ...), with any sample type and channel
    count. Channels are averaged to mono and the audio is resampled with `torchaudio.functional.resample`
    (the same windowed-sinc defaults as the `torchaudio.transforms.Resample` F5-TTS uses) when the file's rate
    differs from `sample_rate`. Integer samples are scaled to [-1, 1).

    Args:
        path: the audio file.
        sample_rate: rate of the returned waveform in Hz.

    Returns:
        Tensor `[samples]`, float32, on the CPU.

    Raises:
        AudioError: the file does not exist, cannot be decoded, or holds no samples.
        ValueError: `sample_rate` is not positive.
    """
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    file = Path(path)
    if not file.is_file():
        problem = "is a directory, not an audio file" if file.is_dir() else "no such file"
        raise AudioError(f"cannot read audio file '{file}': {problem}")
    return _decode(file, f"audio file '{file}'", sample_rate)


def decode_audio(data: bytes, name: str, sample_rate: int = SAMPLE_RATE) -> Tensor:
    """Decode an audio file held in memory (a Shar shard member, say) exactly as `load_audio` reads one on disk.

    Args:
        data: the file's bytes (any format libsndfile reads).
        name: what to call it in messages.
        sample_rate: rate of the returned waveform in Hz.

    Returns:
        Tensor `[samples]`, float32, mono, on the CPU.

    Raises:
        AudioError: the bytes cannot be decoded or hold no samples.
    """
    return _decode(io.BytesIO(data), name, sample_rate)


def _decode(source: Path | io.BytesIO, name: str, sample_rate: int) -> Tensor:
    try:
        data, file_rate = sf.read(source, dtype="float32", always_2d=True)
    except (sf.SoundFileError, TypeError) as err:
        # TypeError: headerless formats (.raw) that libsndfile cannot decode without being told the layout.
        raise AudioError(f"cannot read {name}: {_reason(err)}") from err
    if data.shape[0] == 0:
        raise AudioError(f"cannot read {name}: it contains no samples")
    waveform = torch.from_numpy(data).mean(dim=1)
    if file_rate != sample_rate:
        waveform = torchaudio.functional.resample(waveform, orig_freq=file_rate, new_freq=sample_rate)
    return waveform.contiguous()


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
