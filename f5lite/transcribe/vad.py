"""Speech probabilities of a recording of any length from Silero VAD, read in blocks, never whole into memory.

Shapes: w windows of `WINDOW` samples at 16 kHz (32 ms each).

The recording's header is checked first (`f5lite.audio.io.check_header`: its rate and channels), then it is read
with soundfile `BLOCK_SECONDS` at a time, mixed down to mono, resampled to 16 kHz by one resampler that runs across
the blocks (`f5lite.audio.resample.ResampleStream`) and fed to the model window by window; the model keeps its
recurrent state across windows and blocks, so a file is one continuous stream however it is cut into blocks. Beside each window's speech probability the window's loudness
(RMS in dB) is kept: where speech runs on without a pause, the slicer cuts at the quietest window.

Silero VAD (the `silero-vad` package, MIT) ships its TorchScript model inside its wheel: nothing is downloaded.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
import torch

from f5lite.audio.io import check_header
from f5lite.audio.resample import ResampleStream

VAD_RATE = 16_000
"""The model's sample rate."""
WINDOW = 512
"""Samples per window at 16 kHz (the model's frame)."""
WINDOW_SECONDS = WINDOW / VAD_RATE
BLOCK_SECONDS = 60.0
"""Seconds of audio read and resampled at a time."""
SILENCE_DB = -100.0
"""The loudness of a window of digital silence (floor of the RMS in dB)."""


@dataclass(frozen=True)
class SpeechTrack:
    """What the VAD saw in one recording.

    Attributes:
        probs: `[w]` float32, the speech probability of each 32 ms window.
        rms_db: `[w]` float32, each window's RMS in dB (full scale 0 dB, floor `SILENCE_DB`).
        duration: the recording's length in seconds.
        sample_rate: the recording's own sample rate.
        channels: the recording's channel count.
    """

    probs: np.ndarray
    rms_db: np.ndarray
    duration: float
    sample_rate: int
    channels: int


def load_vad_model() -> torch.jit.ScriptModule:
    """Silero VAD's TorchScript model from its wheel, with torch's thread count left as it was.

    Raises:
        ImportError: the `transcribe` extra is not installed (the message says how to install it).
    """
    threads = torch.get_num_threads()
    try:
        # Importing silero_vad.model sets torch's threads to 1 for the whole process; the caller's choice stands.
        from silero_vad import load_silero_vad
    except ImportError as err:
        raise ImportError(f"f5lite-transcribe needs Silero VAD: pip install 'f5lite[transcribe]' ({err})") from None
    finally:
        torch.set_num_threads(threads)
    with warnings.catch_warnings():
        # Silero's loader uses torch.jit.load and importlib.resources.path, both deprecated: warnings about its code.
        warnings.filterwarnings("ignore", message=".*torch.jit.load.*", category=FutureWarning)
        warnings.filterwarnings("ignore", message="path is deprecated", category=DeprecationWarning)
        model: torch.jit.ScriptModule = load_silero_vad()
    return model


def speech_track(path: str | Path, model: torch.jit.ScriptModule, block_seconds: float = BLOCK_SECONDS) -> SpeechTrack:
    """Run the VAD over a recording, `block_seconds` at a time.

    Args:
        path: any file libsndfile reads (wav, flac, ogg, mp3 with libsndfile 1.1+), any rate and channel count.
        model: from `load_vad_model` (its state is reset here).
        block_seconds: how much audio is in memory at once.

    Returns:
        The track; the last partial window is padded with silence.

    Raises:
        ValueError: the file cannot be read as audio (one line naming it).
    """
    try:
        info = sf.info(str(path))
    except sf.SoundFileError as err:
        raise ValueError(f"{path}: not readable as audio ({err})") from None
    rate, channels = int(info.samplerate), int(info.channels)
    check_header(str(path), rate, channels, int(info.frames), None)  # an AudioError is a ValueError
    frames = max(1, round(block_seconds * rate))
    resampler = ResampleStream(rate, VAD_RATE)
    model.reset_states()
    probs: list[float] = []
    rms: list[float] = []
    carry = torch.zeros(0)
    try:
        with sf.SoundFile(str(path)) as f, torch.inference_mode():
            while True:
                block = f.read(frames, dtype="float32", always_2d=True)
                last = len(block) < frames
                carry = torch.cat((carry, resampler.feed(torch.from_numpy(block.mean(axis=1)), last)))
                if last:  # the stream's end: pad the final partial window
                    carry = torch.nn.functional.pad(carry, (0, (-len(carry)) % WINDOW))
                whole = len(carry) - len(carry) % WINDOW
                for window in carry[:whole].split(WINDOW):
                    probs.append(float(model(window, VAD_RATE)))
                    rms.append(_rms_db(window))
                carry = carry[whole:]
                if last:
                    break
    except sf.SoundFileError as err:  # a file that breaks off, or is corrupt, past its header
        raise ValueError(f"{path}: unreadable audio ({err})") from None
    return SpeechTrack(
        probs=np.asarray(probs, dtype=np.float32),
        rms_db=np.asarray(rms, dtype=np.float32),
        duration=info.frames / rate,
        sample_rate=rate,
        channels=channels,
    )


def _rms_db(window: torch.Tensor) -> float:
    power = float(window.square().mean())
    return max(SILENCE_DB, 10.0 * math.log10(power)) if power > 0 else SILENCE_DB
