"""What a text will be spoken as, decided before any sampling: its pieces, each with its length in frames.

`Synthesizer.plan` cuts a text (`f5lite.infer.chunking.split_text`) and sizes every piece: the reference's frames
plus the piece's speech at the reference speaking rate (the model's duration predictor, else F5-TTS's byte-ratio
rule; or a share of a length the caller gives), raised to the model's lower bound (a frame per text id of the
reference transcript and the piece, and one more than the reference), then capped to the window (`WINDOW_FRAMES`, or
the caller's `max_frames`). The bounds hold in that order because no piece's lower bound is over the window: a
piece whose ids would need more frames than the window (phonemes outnumber letters, `speed` packs more text into a
piece) is cut again first (`fit_to_window`). So no piece is planned over the window, and the samples of the whole
cross-faded speech are known before the first piece is made (a streamed WAV or FLAC header carries the exact length).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from f5lite.audio import HOP_LENGTH, SAMPLE_RATE
from f5lite.infer.chunking import MAX_SECONDS, chunk_text
from f5lite.infer.crossfade import StreamJoin
from f5lite.infer.reference import Reference

FRAME_RATE = SAMPLE_RATE / HOP_LENGTH
"""Mel frames per second."""
DEFAULT_CROSS_FADE = 0.15
"""Seconds of cross-fade between pieces (F5-TTS's default)."""
WINDOW_FRAMES = int(MAX_SECONDS * FRAME_RATE)
"""The most mel frames of one piece of speech, reference included: F5-TTS's 22 s window."""


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


def fit_to_window(texts: list[str], reference: Reference, window: int, length: Callable[[str], int]) -> list[Fitted]:
    """Each piece of text with its lower bound on frames, a piece cut again where that bound is over the window.

    Args:
        texts: the pieces (`split_text`), in order.
        reference: the voice (its prepared transcript is read before each piece).
        window: the most frames of a piece, the reference's included.
        length: a text's ids as the model counts them (`TextEncoder.length`).

    Returns:
        The pieces in order, each at most `window` frames at its lower bound.

    Raises:
        ValueError: the reference alone leaves no room in the window (its frames or its transcript's ids).
    """
    ref_frames, ref_ids = reference.mel.shape[0], length(reference.text)
    if max(ref_frames, ref_ids) + 2 > window:
        raise ValueError(
            f"the reference is {ref_frames} frames with a transcript of {ref_ids} tokens, which leaves no room to "
            f"speak in a piece of at most {window} frames: give a shorter clip or transcript"
        )
    fitted: list[Fitted] = []
    todo = list(reversed(texts))
    while todo:
        words = todo.pop()
        ids = length(reference.text + words)
        lower = max(ids, ref_frames) + 1  # the model's own bound (`f5lite.sampling.effective_durations`)
        if lower <= window:
            fitted.append(Fitted(words, lower))
            continue
        if len(words) == 1:  # nothing left to cut
            raise ValueError(
                f"{words!r} is {ids - ref_ids} tokens, more than the {window - 1 - ref_ids} the reference's transcript "
                f"leaves in a piece of at most {window} frames: give a shorter transcript"
            )
        # Cut to the share of its bytes that fits, and always shorter, so that single characters end the loop.
        size = len(words.encode("utf-8"))
        budget = min(size - 1, size * (window - 1 - ref_ids) // max(1, ids - ref_ids))
        todo.extend(reversed(chunk_text(words, max(1, budget))))
    return fitted


@dataclass(frozen=True)
class Fitted:
    """A piece's text and the fewest frames the model gives it (its reference's included)."""

    text: str
    lower: int
