"""Joining the waveforms of consecutive chunks with a linear cross-fade: all at once, or as they are made.

`crossfade` joins a list; `StreamJoin` hands each piece out as soon as it is made, less its last `overlap` samples,
which it fades into the start of the next, so the pieces played one after the other are `crossfade` of them all.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def crossfade(waves: Sequence[Tensor], overlap: int) -> Tensor:
    """Concatenate waveforms, overlapping each junction by `overlap` samples with linear fades.

    Over the overlap the earlier wave fades out from 1 to 0 while the next fades in from 0 to 1 (F5-TTS's
    cross-fade); a junction where either side is shorter than `overlap` overlaps by that shorter length. The
    result has `sum(len) - overlap * (len(waves) - 1)` samples when every wave is long enough.

    Args:
        waves: 1-D waveforms `[samples]` on one device, at least one.
        overlap: samples of each cross-fade; 0 plainly concatenates.

    Returns:
        The joined waveform `[samples]`.

    Raises:
        ValueError: no waves, a wave that is not 1-D, or a negative overlap.
    """
    if not waves:
        raise ValueError("nothing to join: no waveforms")
    if overlap < 0:
        raise ValueError(f"overlap={overlap} is not valid; it must be >= 0")
    if any(wave.dim() != 1 for wave in waves):
        raise ValueError(f"waveforms must be 1-D, got shapes {[tuple(w.shape) for w in waves]}")
    joined = waves[0]
    for wave in waves[1:]:
        k = min(overlap, joined.shape[0], wave.shape[0])
        if k == 0:
            joined = torch.cat((joined, wave))
            continue
        fade_in = torch.linspace(0, 1, k, dtype=wave.dtype, device=wave.device)
        mixed = joined[-k:] * (1 - fade_in) + wave[:k] * fade_in
        joined = torch.cat((joined[:-k], mixed, wave[k:]))
    return joined


class StreamJoin:
    """Joins waveform pieces into one stream with a cross-fade, handing each piece out as soon as it is made.

    Args:
        overlap: samples of each cross-fade (F5-TTS: 0.15 s); 0 plainly concatenates.
    """

    def __init__(self, overlap: int) -> None:
        if overlap < 0:
            raise ValueError(f"overlap={overlap} is not valid; it must be >= 0")
        self.overlap = overlap
        self._tail: Tensor | None = None

    def piece(self, wave: Tensor, last: bool) -> Tensor:
        """What to play of `wave` `[samples]` now (`last`: nothing follows, so its tail is played too)."""
        if self._tail is not None:
            wave = crossfade([self._tail, wave], self.overlap)
        if last:
            return wave
        keep = max(0, wave.shape[0] - self.overlap)
        self._tail = wave[keep:]
        return wave[:keep]

    @staticmethod
    def length(lengths: Sequence[int], overlap: int) -> int:
        """The samples `piece` hands out in all for pieces of `lengths` samples: its arithmetic, without the audio."""
        total, tail = 0, 0
        for i, n in enumerate(lengths):
            if i:
                n = tail + n - min(overlap, tail, n)  # what `crossfade` makes of the tail and the piece
            keep = n if i + 1 == len(lengths) else max(0, n - overlap)
            total, tail = total + keep, n - keep
        return total
