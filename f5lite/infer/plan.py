"""What a text will be spoken as, decided before any sampling: its pieces, each with its length in frames.

`Synthesizer.plan` cuts a text (`f5lite.infer.chunking.split_text`) and sizes every piece: the reference's frames
plus the piece's speech at the reference speaking rate (the model's duration predictor, else F5-TTS's byte-ratio
rule; or a share of a length the caller gives), capped to a window when the caller asks (`f5lite-serve`: 22 s),
raised to the model's lower bound (a frame per text token). So the samples of the whole cross-faded speech are
known before the first piece is made (a streamed WAV or FLAC header carries the exact length).
"""

from __future__ import annotations

from dataclasses import dataclass

from f5lite.audio import HOP_LENGTH, SAMPLE_RATE
from f5lite.infer.crossfade import StreamJoin
from f5lite.infer.reference import Reference

FRAME_RATE = SAMPLE_RATE / HOP_LENGTH
"""Mel frames per second."""
DEFAULT_CROSS_FADE = 0.15
"""Seconds of cross-fade between pieces (F5-TTS's default)."""


@dataclass(frozen=True)
class Piece:
    """One piece of speech to make: one sampler input.

    Attributes:
        reference: the voice.
        text: the words of this piece.
        frames: mel frames to generate, the reference's included (the model's lower bound applied).
        samples: the 24 kHz samples the vocoder makes of the generated frames.
    """

    reference: Reference
    text: str
    frames: int
    samples: int


@dataclass(frozen=True)
class Plan:
    """A text as it will be spoken: its pieces, in order."""

    pieces: tuple[Piece, ...]

    def samples(self, cross_fade: float = DEFAULT_CROSS_FADE) -> int:
        """The 24 kHz samples of the pieces joined with `cross_fade` seconds of cross-fade."""
        return StreamJoin.length([piece.samples for piece in self.pieces], cross_fade_samples(cross_fade))


def cross_fade_samples(seconds: float) -> int:
    """Samples of a cross-fade of `seconds` at 24 kHz."""
    return round(seconds * SAMPLE_RATE)
