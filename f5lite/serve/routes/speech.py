"""`POST /v1/audio/speech`: OpenAI's speech endpoint, streamed as the audio is made.

OpenAI's request (`model`, `input`, `voice`, `response_format`, `speed`, `stream_format`; `instructions` is accepted
and ignored: the voice is the reference clip). The audio is streamed as it is made (`stream_format=audio`, chunked)
or as server-sent events (`sse`: `speech.audio.delta` with base64 audio, then `speech.audio.done` with the usage).

A request is checked, planned (`f5lite.serve.speech.plan_request`: every piece and its frames, so the length in
samples) and given a place (`f5lite.serve.admission`) before anything of it is queued; its first bytes are made
before the response starts, so a request that fails or runs out of time before its first audio gets a proper
error status (500, 504), not an empty 200. A failure after that ends a server-sent-events stream with an `error`
event and drops the connection of an audio stream (a truncated body that looks whole would be worse).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import threading
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field, replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel

from f5lite.infer.plan import Plan
from f5lite.sampling import SamplerOptions
from f5lite.serve.context import ServerContext, context_of
from f5lite.serve.encoding import CONTENT_TYPES, FORMATS, SAMPLE_RATE, StreamEncoder
from f5lite.serve.engine import OverBudgetError
from f5lite.serve.errors import ApiError
from f5lite.serve.guard import SPEECH, StreamCutError
from f5lite.serve.settings import ServeSettings
from f5lite.serve.speech import plan_request, stream_request
from f5lite.serve.stream import SpeechStream
from f5lite.serve.voices import Voice, VoiceStore

logger = logging.getLogger(__name__)
router = APIRouter()
SPEEDS = (0.25, 4.0)
"""OpenAI's range of `speed`."""
STREAM_FORMATS = ("audio", "sse")


class SpeechBody(BaseModel):
    """OpenAI's `POST /v1/audio/speech` body (values checked by the endpoint, for OpenAI's messages)."""

    model: str
    input: str
    voice: str
    response_format: str = "mp3"
    speed: float = 1.0
    stream_format: str = "audio"
    instructions: str | None = None


@router.post(SPEECH)
async def speech(body: SpeechBody, request: Request) -> Response:
    """Speak `body.input` in `body.voice` (see the module docstring)."""
    started = time.perf_counter()
    context = context_of(request)
    options, voice = _check_speech(body, context.voices, context.settings)
    try:
        planned = await asyncio.to_thread(plan_request, context.engine, voice, body.input, body.speed, True)
    except ValueError as err:
        raise ApiError(400, str(err), param="input") from None
    ticket = context.admission.admit(request.client.host if request.client else "?")
    deadline = asyncio.get_running_loop().time() + context.settings.request_timeout
    content = _Speaking(context, planned, options, body, started, deadline).stream()
    try:
        first = await _first_chunk(content, request)
    except BaseException as err:
        ticket.release()
        await content.aclose()
        if isinstance(err, OverBudgetError):
            raise ApiError(400, str(err), param="input") from None
        if isinstance(err, Exception) and not isinstance(err, ApiError):
            message = _failure_message(err, context.settings)
            raise ApiError(_failure_status(err), message, kind="server_error") from err
        raise
    media = "text/event-stream" if body.stream_format == "sse" else CONTENT_TYPES[body.response_format]
    rest = _after(first, content)
    return SpeechStream(rest, ticket=ticket, send_timeout=context.settings.send_timeout, media_type=media)


async def warm_up(context: ServerContext) -> None:
    """One short request through the engine (first-call costs: allocations, compile), then ready."""
    names = context.voices.names()
    voice = context.voices.get(names[0]) if names else None
    if voice is not None:
        try:
            planned = await asyncio.to_thread(plan_request, context.engine, voice, "Hello.", 1.0, False)
            async for _ in stream_request(
                context.engine, planned, context.settings.options, cancelled=threading.Event()
            ):
                pass
        except Exception:  # noqa: BLE001 - the server still answers; each request will report its own failure
            logger.exception("warm-up failed")
    context.ready = True
    logger.info("ready")


@dataclass(frozen=True)
class _Speaking:
    """One admitted speech request, spoken: its response's bytes as they are made (see the module docstring)."""

    context: ServerContext
    planned: Plan
    options: SamplerOptions
    body: SpeechBody
    started: float
    deadline: float
    cancelled: threading.Event = field(default_factory=threading.Event)

    async def stream(self) -> AsyncGenerator[bytes, None]:
        """The encoded audio (or its server-sent events); a failure before the first bytes is raised as it is."""
        sse, sent = self.body.stream_format == "sse", False
        engine, metrics = self.context.engine, self.context.metrics
        encoder = StreamEncoder(self.body.response_format, self.planned.samples())
        try:
            async for wave in stream_request(
                engine, self.planned, self.options, cancelled=self.cancelled, deadline=self.deadline
            ):
                metrics.queue_pieces.set(engine.pending())
                data = encoder.feed(wave)
                if data:
                    if not sent:
                        metrics.first_audio.observe(time.perf_counter() - self.started)
                    sent = True
                    yield _delta(data) if sse else data
            tail = encoder.finish()
            if tail:
                yield _delta(tail) if sse else tail
            if sse:
                yield _done(len(self.body.input))
        except Exception as err:  # noqa: BLE001 - before the first byte it is the request's error status
            if not sent:
                raise
            message = _failure_message(err, self.context.settings)
            if not sse:
                raise StreamCutError(message) from err
            yield _event({"type": "error", "error": ApiError(500, message, kind="server_error").body()["error"]})
            return
        elapsed = time.perf_counter() - self.started
        metrics.latency.labels(SPEECH).observe(elapsed)
        metrics.real_time_factor.observe(elapsed / max(self.planned.samples() / SAMPLE_RATE, 1e-6))


async def _after(first: bytes, rest: AsyncGenerator[bytes, None]) -> AsyncGenerator[bytes, None]:
    """`first`, then `rest`; closing this closes `rest` (a response cut short queues nothing more)."""
    try:
        yield first
        async for data in rest:
            yield data
    finally:
        await rest.aclose()


def _check_speech(body: SpeechBody, voices: VoiceStore, settings: ServeSettings) -> tuple[SamplerOptions, Voice]:
    """The request's sampler options and voice, or the OpenAI-shaped error of the first bad value."""
    if not settings.knows_model(body.model):
        raise ApiError(404, f"unknown model {body.model!r}; this server serves {settings.model_id!r}", param="model",
                       code="model_not_found")  # fmt: skip
    if not body.input.strip():
        raise ApiError(400, "input is empty: there is nothing to say", param="input")
    if len(body.input) > settings.max_input_chars:
        raise ApiError(422, f"input has {len(body.input)} characters; the most is {settings.max_input_chars}",
                       param="input", code="input_too_long")  # fmt: skip
    if any("\ud800" <= char <= "\udfff" for char in body.input):  # JSON's "\ud800" escape: half a character
        raise ApiError(400, "input holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is no character: send "
                       "valid Unicode text", param="input")  # fmt: skip
    if body.response_format not in FORMATS:
        raise ApiError(400, f"response_format {body.response_format!r} is not one of {', '.join(FORMATS)}",
                       param="response_format")  # fmt: skip
    if body.stream_format not in STREAM_FORMATS:
        raise ApiError(400, f"stream_format {body.stream_format!r} is not one of audio, sse", param="stream_format")
    if not SPEEDS[0] <= body.speed <= SPEEDS[1]:
        raise ApiError(400, f"speed {body.speed} is not in [{SPEEDS[0]}, {SPEEDS[1]}]", param="speed")
    voice = voices.get(body.voice)
    if voice is None:
        known = ", ".join(voices.names()) or "none: start the server with --voices DIR"
        raise ApiError(404, f"unknown voice {body.voice!r}; voices: {known}", param="voice", code="voice_not_found")
    return replace(settings.options, speed=body.speed), voice


async def _first_chunk(content: AsyncGenerator[bytes, None], request: Request) -> bytes:
    """The response's first bytes, or the error that came instead; a client that leaves meanwhile ends the wait.

    Raises:
        ApiError: the client went away (no one reads the answer, but the place is freed at once).
        Exception: what making the first piece raised (`TimeoutError` when the deadline passed).
    """
    made = asyncio.ensure_future(anext(content))
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({made, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if not made.done():
        made.cancel()  # into the generator: its piece is dropped; then it has ended, and can be closed
        with contextlib.suppress(asyncio.CancelledError):
            await made
        raise ApiError(400, "the client went away")
    return made.result()


async def _disconnected(request: Request) -> None:
    """Return when the client closes the connection (the body has been read: only a disconnect can come)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _failure_status(err: Exception) -> int:
    return 504 if isinstance(err, TimeoutError) else 500


def _failure_message(err: Exception, settings: ServeSettings) -> str:
    """One line for the client about a request that failed while speaking."""
    if isinstance(err, TimeoutError):
        return f"the request ran past its {settings.request_timeout:g} s (--request-timeout)"
    logger.error("speech failed", exc_info=err)
    return "speech failed: the server's log has the details"


def _event(event: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(event)}\n\n".encode()


def _delta(data: bytes) -> bytes:
    return _event({"type": "speech.audio.delta", "audio": base64.b64encode(data).decode("ascii")})


def _done(characters: int) -> bytes:
    usage = {"input_tokens": characters, "output_tokens": 0, "total_tokens": characters}
    return _event({"type": "speech.audio.done", "usage": usage})
