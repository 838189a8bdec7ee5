"""Resampling, the one way f5lite changes a waveform's rate: soxr's polyphase resampler.

A windowed-sinc resampler built for the exact ratio of two rates (torchaudio's, F5-TTS's) makes a kernel of about
`new / g` x `old / g` taps, g their greatest common divisor: a file that declares 44,101 Hz (g = 1 with 24,000)
costs a kernel of gigabytes before one sample is made. soxr (libsoxr, the resampler of SoX and of librosa) keeps
its cost linear in the samples whatever the two rates are, at its "HQ" preset (20-bit precision). Its output
differs from torchaudio's near the top of the band, where the two filters' cut-offs differ (on a demo clip: RMS
3e-4 of full scale from 24 to 48 kHz, 3e-3 from 24 to 16 kHz); the length is torchaudio's,
`ceil(samples * new / old)` (soxr rounds to the nearest; a missing last sample is a zero).

`resample` takes a whole waveform; `ResampleStream` takes one in blocks (a recording of hours, read a minute at a
time) and gives the same samples as one call on the whole.
"""

from __future__ import annotations

import numpy as np
import soxr
import torch
from torch import Tensor

QUALITY = "HQ"
"""soxr's quality preset (see the module docstring)."""


def resample(wave: Tensor, orig_rate: int, new_rate: int) -> Tensor:
    """`wave` at `new_rate`.

    Args:
        wave: `[samples]` float32 or float64, on the CPU.
        orig_rate: its rate in Hz.
        new_rate: the rate wanted in Hz.

    Returns:
        `[ceil(samples * new_rate / orig_rate)]`, same dtype (the input itself when the rates are equal).

    Raises:
        ValueError: a rate that is not positive, or a waveform that is not 1-D.
    """
    _check(orig_rate, new_rate)
    if wave.dim() != 1:
        raise ValueError(f"resample takes a waveform [samples], got shape {tuple(wave.shape)}")
    if orig_rate == new_rate:
        return wave
    out = soxr.resample(wave.detach().cpu().numpy(), orig_rate, new_rate, quality=QUALITY)
    return _padded(torch.from_numpy(np.ascontiguousarray(out)), _length(wave.shape[0], orig_rate, new_rate))


class ResampleStream:
    """A waveform resampled block by block: `feed` each block in order, `last=True` with the final one.

    Args:
        orig_rate: the blocks' rate in Hz.
        new_rate: the rate wanted in Hz.

    Raises:
        ValueError: a rate that is not positive.
    """

    def __init__(self, orig_rate: int, new_rate: int) -> None:
        _check(orig_rate, new_rate)
        self._rates = (orig_rate, new_rate)
        self._stream = (
            None if orig_rate == new_rate else soxr.ResampleStream(orig_rate, new_rate, 1, "float32", QUALITY)
        )
        self._taken = self._given = 0

    def feed(self, block: Tensor, last: bool = False) -> Tensor:
        """The resampled samples ready after `block` `[samples]` float32 (the filter holds its delay until `last`)."""
        if self._stream is None:
            return block
        out = torch.from_numpy(np.ascontiguousarray(
            self._stream.resample_chunk(block.detach().cpu().float().numpy(), last=last)
        ))  # fmt: skip
        self._taken += block.shape[0]
        if last:
            out = _padded(out, _length(self._taken, *self._rates) - self._given)
        self._given += out.shape[0]
        return out


def _length(samples: int, orig_rate: int, new_rate: int) -> int:
    """`ceil(samples * new_rate / orig_rate)`, in integers."""
    return -(-samples * new_rate // orig_rate)


def _padded(wave: Tensor, length: int) -> Tensor:
    """`wave` with zeros up to `length` samples (soxr's rounding can leave the last one out)."""
    return torch.nn.functional.pad(wave, (0, max(0, length - wave.shape[0])))


def _check(orig_rate: int, new_rate: int) -> None:
    if orig_rate <= 0 or new_rate <= 0:
        raise ValueError(f"sample rates must be positive, got {orig_rate} -> {new_rate}")
