"""One speech request from text to a stream of waveform pieces, cross-faded, through the engine's batches.

The text is cut as `f5lite-infer` cuts it (sentences packed up to what the reference speaker says in the model's
window, `f5lite.infer.chunking`). When the response is streamed the first piece is cut shorter, at a clause mark or
between words, to `first_bytes` (about two seconds of speech), so that the first audio comes after one short
sampler call, not after a whole sentence. Each piece's length comes from the model's duration predictor or the
byte-ratio rule at the request's `speed` (`Synthesizer.duration`).

Pieces join with F5-TTS's 0.15 s cross-fade: every piece but the last is handed out without its last 0.15 s, which
is faded into the start of the next, so the joined stream is what `f5lite-infer` would write. A request abandoned
while it runs (a client that disconnects closes the generator) sets its `cancelled` event: its piece still waiting
in the queue is dropped, and no further piece is submitted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import AsyncIterator

from torch import Tensor

from f5lite.audio import SAMPLE_RATE
from f5lite.infer.chunking import chunk_text, max_chunk_bytes
from f5lite.infer.crossfade import crossfade
from f5lite.infer.synthesizer import DEFAULT_CROSS_FADE
from f5lite.sampling import SamplerOptions
from f5lite.serve.engine import Engine, Piece
from f5lite.serve.voices import Voice

FIRST_BYTES = 40
"""UTF-8 bytes of the first piece of a streamed response (a few words: about two seconds of English speech)."""


def split_text(text: str, max_bytes: int, first_bytes: int | None) -> list[str]:
    """The pieces a text is spoken in.

    Args:
        text: the input.
        max_bytes: the most bytes of a piece (`max_chunk_bytes` of the voice).
        first_bytes: for a streamed response, the most bytes of the first piece; None: no shorter first piece.

    Returns:
        The pieces in order.
    """
    chunks = chunk_text(text, max_bytes)
    if first_bytes is None or not chunks or len(chunks[0].encode("utf-8")) <= first_bytes:
        return chunks
    head = chunk_text(chunks[0], first_bytes)
    # chunk_text cuts after a mark or at a space and never changes the text: the first piece is a prefix.
    rest = chunks[0][len(head[0]) :].strip()
    return [head[0], *([rest] if rest else []), *chunks[1:]]


class StreamJoin:
    """Joins waveform pieces into one stream with F5-TTS's cross-fade, handing each piece out as soon as it is made.

    Every piece but the last is handed out without its last `DEFAULT_CROSS_FADE` seconds, which are faded into the
    start of the next, so the pieces played one after the other are the cross-faded whole.
    """

    def __init__(self) -> None:
        self.overlap = round(DEFAULT_CROSS_FADE * SAMPLE_RATE)
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


async def speak(
    engine: Engine,
    voice: Voice,
    text: str,
    options: SamplerOptions,
    *,
    streaming: bool,
    cancelled: threading.Event,
) -> AsyncIterator[Tensor]:
    """The request's audio, piece by piece (see the module docstring).

    Args:
        engine: the model's queue.
        voice: the reference.
        text: what to say (not blank).
        options: the sampler settings; `options.speed` sets the pieces' lengths.
        streaming: cut a short first piece.
        cancelled: set when the client goes away (also set here when the generator is closed early).

    Yields:
        24 kHz waveform pieces `[samples]`, to be played one after the other.
    """
    synthesizer = engine.synthesizer
    budget = max_chunk_bytes(voice.text, voice.seconds, options.speed)
    pieces = split_text(text, budget, FIRST_BYTES if streaming else None)
    # The speed is in each piece's length; pieces with other speeds but the same sampling batch together.
    sampling = dataclasses.replace(options, speed=1.0)
    join = StreamJoin()
    try:
        for i, words in enumerate(pieces):
            frames = synthesizer.duration.total_frames(voice.mel.shape[0], voice.text, words, options.speed)
            wave = await asyncio.wrap_future(engine.submit(Piece(voice, words, frames, sampling, cancelled)))
            yield join.piece(wave, last=i + 1 == len(pieces))
    finally:
        cancelled.set()  # done, failed or abandoned: nothing of this request is left to run
