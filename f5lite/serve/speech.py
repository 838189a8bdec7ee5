"""One speech request from text to a stream of waveform pieces, cross-faded, through the engine's batches.

`plan` decides everything before any sampling: the text is cut as `f5lite-infer` cuts it (sentences packed up to
what the reference speaker says in the model's window, `f5lite.infer.chunking`, which cuts a word too long between
characters). When the response is streamed the first piece is cut shorter, at a clause mark or between words, to
`first_bytes` (about two seconds of speech), so that the first audio comes after one short sampler call, not after
a whole sentence. Each piece's length comes from the model's duration predictor or the byte-ratio rule at the
request's `speed` (`Synthesizer.duration`), capped to the model's window (`WINDOW_FRAMES`), raised to the model's
lower bound (a frame per text token); so every piece's mel frames, and the samples of the whole stream, are known
before the first byte goes out (a WAV or FLAC header carries the exact length).

Pieces join with F5-TTS's 0.15 s cross-fade: every piece but the last is handed out without its last 0.15 s, which
is faded into the start of the next, so the joined stream is what `f5lite-infer` would write. A request abandoned
while it runs (a client that disconnects closes the generator) or out of time sets its `cancelled` event: its piece
still waiting in the queue is dropped, and no further piece is submitted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from f5lite.audio import SAMPLE_RATE, samples_for_frames
from f5lite.infer.chunking import chunk_text, max_chunk_bytes
from f5lite.infer.crossfade import crossfade
from f5lite.infer.synthesizer import DEFAULT_CROSS_FADE, Synthesizer
from f5lite.sampling import SamplerOptions, effective_durations
from f5lite.serve.engine import Engine, Piece
from f5lite.serve.settings import WINDOW_FRAMES
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


@dataclass(frozen=True)
class Plan:
    """A request's text as it will be spoken.

    Attributes:
        pieces: the texts of the pieces, in order.
        frames: each piece's mel frames, the reference's included (what the model generates, at most
            `WINDOW_FRAMES` unless the text's tokens need more).
        samples: the 24 kHz samples of the whole cross-faded stream.
    """

    pieces: tuple[str, ...]
    frames: tuple[int, ...]
    samples: int


def plan(synthesizer: Synthesizer, voice: Voice, text: str, speed: float, streaming: bool) -> Plan:
    """Cut a request's text into pieces and size each one (see the module docstring).

    Args:
        synthesizer: the model (its text encoder, duration estimator and mel type).
        voice: the reference.
        text: what to say (not blank).
        speed: the request's speed.
        streaming: cut a short first piece.

    Returns:
        The plan.

    Raises:
        ValueError: the voice cannot speak (see `max_chunk_bytes`).
    """
    budget = max_chunk_bytes(voice.text, voice.seconds, speed)
    pieces = split_text(text, budget, FIRST_BYTES if streaming else None)
    ref = voice.mel.shape[0]
    frames = []
    for words in pieces:
        wanted = min(synthesizer.duration.total_frames(ref, voice.text, words, speed), WINDOW_FRAMES)
        ids = synthesizer.encoder.encode([voice.text + words]).ids
        frames.append(int(effective_durations(torch.tensor([wanted]), ids, torch.tensor([ref]))[0]))
    lengths = [samples_for_frames(total - ref, synthesizer.mel_type) for total in frames]
    return Plan(tuple(pieces), tuple(frames), StreamJoin.length(lengths, round(DEFAULT_CROSS_FADE * SAMPLE_RATE)))


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


async def speak(
    engine: Engine,
    voice: Voice,
    planned: Plan,
    options: SamplerOptions,
    *,
    cancelled: threading.Event,
    deadline: float | None = None,
) -> AsyncIterator[Tensor]:
    """The request's audio, piece by piece (see the module docstring).

    Args:
        engine: the model's queue.
        voice: the reference.
        planned: the request's pieces and their frames (`plan`).
        options: the sampler settings (the speed is in the plan's frames).
        cancelled: set when the client goes away (also set here when the generator ends, however).
        deadline: the event loop's time (`loop.time()`) by which the last piece must be made; None: no deadline.

    Yields:
        24 kHz waveform pieces `[samples]`, to be played one after the other.

    Raises:
        TimeoutError: a piece was not made by the deadline (the request's pieces are then dropped).
    """
    # The speed is in each piece's length; pieces with other speeds but the same sampling batch together.
    sampling = dataclasses.replace(options, speed=1.0)
    loop = asyncio.get_running_loop()
    join = StreamJoin()
    try:
        for i, (words, frames) in enumerate(zip(planned.pieces, planned.frames, strict=True)):
            made = asyncio.wrap_future(engine.submit(Piece(voice, words, frames, sampling, cancelled)))
            wave = await asyncio.wait_for(made, None if deadline is None else max(0.0, deadline - loop.time()))
            yield join.piece(wave, last=i + 1 == len(planned.pieces))
    finally:
        cancelled.set()  # done, failed, out of time or abandoned: nothing of this request is left to run
