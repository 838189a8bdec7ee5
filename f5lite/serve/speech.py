"""One speech request from text to a stream of waveform pieces, through the engine's batches.

The request is planned as `f5lite-infer` plans a text (`Synthesizer.plan`): cut into pieces, the first one short
(`FIRST_BYTES`, about two seconds of speech) when the response is streamed, so that the first audio comes after one
short sampler call; each piece sized in frames at the request's `speed` and capped to the model's window
(`WINDOW_FRAMES`), so every piece's frames, and the samples of the whole stream, are known before the first byte
goes out (a WAV or FLAC header carries the exact length).

The pieces are made by the engine, batched with other requests' (`f5lite.serve.engine`), and joined as
`Synthesizer.stream` joins them (`f5lite.infer.crossfade.StreamJoin`), so the joined stream is what `f5lite-infer`
would write. A request abandoned while it runs (a client that disconnects closes the generator) or out of time sets
its `cancelled` event: its piece still waiting in the queue is dropped, and no further piece is submitted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import AsyncIterator

from torch import Tensor

from f5lite.infer.chunking import FIRST_BYTES
from f5lite.infer.crossfade import StreamJoin
from f5lite.infer.plan import DEFAULT_CROSS_FADE, Plan, cross_fade_samples
from f5lite.sampling import SamplerOptions
from f5lite.serve.engine import Engine, Task
from f5lite.serve.settings import WINDOW_FRAMES
from f5lite.serve.voices import Voice


def plan_request(engine: Engine, voice: Voice, text: str, speed: float, streaming: bool) -> Plan:
    """Cut a request's text into pieces and size each one (see the module docstring).

    Args:
        engine: the model's queue (its synthesizer plans; every piece must fit its batch budget).
        voice: the reference.
        text: what to say (not blank).
        speed: the request's speed.
        streaming: cut a short first piece.

    Raises:
        ValueError: the voice cannot speak (see `Synthesizer.plan`), or a piece no batch holds (`Engine.check`).
    """
    first = FIRST_BYTES if streaming else None
    planned = engine.synthesizer.plan(voice, text, speed, first_bytes=first, max_frames=WINDOW_FRAMES)
    for piece in planned.pieces:
        engine.check(piece)
    return planned


async def stream_request(
    engine: Engine,
    planned: Plan,
    options: SamplerOptions,
    *,
    cancelled: threading.Event,
    deadline: float | None = None,
) -> AsyncIterator[Tensor]:
    """The request's audio, piece by piece (see the module docstring).

    Args:
        engine: the model's queue.
        planned: the request's pieces (`plan_request`).
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
    join = StreamJoin(cross_fade_samples(DEFAULT_CROSS_FADE))
    try:
        for i, piece in enumerate(planned.pieces):
            made = asyncio.wrap_future(engine.submit(Task(piece, sampling, cancelled)))
            wave = await asyncio.wait_for(made, None if deadline is None else max(0.0, deadline - loop.time()))
            yield join.piece(wave, last=i + 1 == len(planned.pieces))
    finally:
        cancelled.set()  # done, failed, out of time or abandoned: nothing of this request is left to run
