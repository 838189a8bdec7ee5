"""The HTTP API of `f5lite-serve` (FastAPI): OpenAI's speech endpoint, voices, models, health and metrics.

- `POST /v1/audio/speech`: OpenAI's request (`model`, `input`, `voice`, `response_format`, `speed`,
  `stream_format`; `instructions` is accepted and ignored: the voice is the reference clip). The audio is streamed as
  it is made (`stream_format=audio`, chunked) or as server-sent events (`sse`: `speech.audio.delta` with base64
  audio, then `speech.audio.done` with the usage).
- `GET /v1/voices`; with `--voice-upload`, `POST /v1/voices` (multipart: `name`, `file`, optional `text`) and
  `DELETE /v1/voices/{name}` (only voices added over HTTP).
- `GET /v1/models`; `GET /health` (200 once the model is loaded and warm, 503 before); `GET /metrics`.

A speech request is checked, planned (`f5lite.serve.speech.plan`: every piece and its frames, so the length in
samples) and given a place (`f5lite.serve.admission`) before anything of it is queued; its first bytes are made
before the response starts, so a request that fails or runs out of time before its first audio gets a proper
error status (500, 504), not an empty 200. A failure after that ends a server-sent-events stream with an `error`
event and drops the connection of an audio stream (a truncated body that looks whole would be worse).

Requests pass `f5lite.serve.guard` first (origin, key, uploads, body size). Every error is OpenAI's JSON shape
(`f5lite.serve.errors`). `/health` and `/metrics` need no key; `/openapi.json` does; there are no `/docs` pages.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException

from f5lite.sampling import SamplerOptions
from f5lite.serve.admission import Admission
from f5lite.serve.encoding import CONTENT_TYPES, FORMATS, SAMPLE_RATE, StreamEncoder
from f5lite.serve.engine import Engine
from f5lite.serve.errors import INTERNAL, ApiError
from f5lite.serve.guard import SPEECH, VOICES, Guard, StreamCutError
from f5lite.serve.metrics import ServerMetrics
from f5lite.serve.settings import MODEL_ALIASES, ServeSettings
from f5lite.serve.speech import Plan, plan, speak
from f5lite.serve.stream import SpeechStream
from f5lite.serve.voices import NotDeletableError, Voice, VoiceExistsError, VoiceStore

logger = logging.getLogger(__name__)
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


def create_app(engine: Engine, voices: VoiceStore, settings: ServeSettings) -> Guard:
    """The application (see the module docstring).

    Args:
        engine: the model's batching queue (its thread already running).
        voices: the voices.
        settings: limits, key and defaults.

    Returns:
        The ASGI app (the FastAPI app inside `f5lite.serve.guard.Guard`); it warms the model up in the background
        when it starts (`/health` says when it is ready), and stops the engine's thread and the voices' recogniser
        when it shuts down.
    """
    metrics = ServerMetrics()
    state = {"ready": False}
    admission = Admission(settings.queue_size, settings.max_per_client, metrics.queue_depth.set)
    engine.on_batch = metrics.batch_size.observe

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(_warm_up(engine, voices, settings, state))
        yield
        task.cancel()
        # Here, not after uvicorn returns: stopped by a signal, uvicorn raises it again once it has shut down.
        engine.stop()
        voices.close()

    app = FastAPI(title="f5lite-serve", lifespan=lifespan, docs_url=None, redoc_url=None)

    @app.exception_handler(ApiError)
    async def api_error(_: Request, err: ApiError) -> JSONResponse:
        return err.response()

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0]
        if first.get("type") == "json_invalid":  # its location is a byte offset, not a field
            reason = first.get("ctx", {}).get("error", first["msg"])
            return ApiError(400, f"the body is not valid JSON: {reason}").response()
        if tuple(first.get("loc", ())) == ("body",):  # not a JSON object, or not sent as JSON (a plain form post)
            return ApiError(400, "the body must be a JSON object sent as Content-Type: application/json").response()
        param = str(first["loc"][-1]) if first.get("loc") else None
        return ApiError(400, f"{param}: {first['msg']}", param=param).response()

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, err: HTTPException) -> JSONResponse:
        return ApiError(err.status_code, str(err.detail)).response()

    @app.exception_handler(Exception)
    async def failure(_: Request, err: Exception) -> JSONResponse:
        return INTERNAL.response()  # in OpenAI's shape; Starlette raises the error on, and the guard logs it

    @app.post(SPEECH)
    async def speech(body: SpeechBody, request: Request) -> Response:
        started = time.perf_counter()
        options, voice = _check_speech(body, voices, settings)
        try:
            planned = await asyncio.to_thread(plan, engine.synthesizer, voice, body.input, body.speed, True)
        except ValueError as err:
            raise ApiError(400, str(err), param="input") from None
        ticket = admission.admit(request.client.host if request.client else "?")
        deadline = asyncio.get_running_loop().time() + settings.request_timeout
        content = _Speaking(engine, voice, planned, options, body, settings, metrics, started, deadline).stream()
        try:
            first = await _first_chunk(content, request)
        except BaseException as err:
            ticket.release()
            await content.aclose()
            if isinstance(err, Exception) and not isinstance(err, ApiError):
                raise ApiError(_failure_status(err), _failure_message(err, settings), kind="server_error") from err
            raise
        media = "text/event-stream" if body.stream_format == "sse" else CONTENT_TYPES[body.response_format]
        rest = _after(first, content)
        return SpeechStream(rest, ticket=ticket, send_timeout=settings.send_timeout, media_type=media)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        names = [settings.model_id, *MODEL_ALIASES]
        return {
            "object": "list",
            "data": [{"id": n, "object": "model", "created": 0, "owned_by": "f5lite"} for n in names],
        }

    @app.get(VOICES)
    async def list_voices() -> dict[str, Any]:
        found = [voices.get(name) for name in voices.names()]
        return {
            "voices": [{"name": v.name, "text": v.text.strip(), "seconds": round(v.seconds, 2)} for v in found if v]
        }

    @app.post(VOICES)
    async def add_voice(request: Request) -> dict[str, Any]:
        name, data, text = await _voice_form(request, settings.max_upload_bytes)
        try:
            voice = await asyncio.to_thread(voices.add, name, data, text)
        except VoiceExistsError as err:
            raise ApiError(409, str(err), param="name") from None
        except ValueError as err:
            message = str(err)
            param = "name" if "name" in message else "text" if "transcript" in message else "file"
            raise ApiError(400, message, param=param) from None
        return {"name": voice.name, "text": voice.text.strip(), "seconds": round(voice.seconds, 2)}

    @app.delete(VOICES + "/{name}")
    async def delete_voice(name: str) -> dict[str, Any]:
        try:
            voices.remove(name)
        except KeyError:
            raise ApiError(404, f"unknown voice {name!r}", param="voice", code="voice_not_found") from None
        except NotDeletableError as err:
            raise ApiError(403, str(err), kind="permission_error", param="voice") from None
        return {"deleted": name}

    @app.get("/health")
    async def health() -> JSONResponse:
        if not state["ready"]:
            return JSONResponse({"status": "loading"}, status_code=503, headers={"Retry-After": "1"})
        return JSONResponse({"status": "ready", "model": settings.model_id, "voices": len(voices.names())})

    @app.get("/metrics")
    async def prometheus() -> Response:
        metrics.queue_pieces.set(engine.pending())
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    return Guard(app, settings, metrics)


@dataclass(frozen=True)
class _Speaking:
    """One admitted speech request, spoken: its response's bytes as they are made (see the module docstring)."""

    engine: Engine
    voice: Voice
    planned: Plan
    options: SamplerOptions
    body: SpeechBody
    settings: ServeSettings
    metrics: ServerMetrics
    started: float
    deadline: float
    cancelled: threading.Event = field(default_factory=threading.Event)

    async def stream(self) -> AsyncGenerator[bytes, None]:
        """The encoded audio (or its server-sent events); a failure before the first bytes is raised as it is."""
        sse, sent = self.body.stream_format == "sse", False
        encoder = StreamEncoder(self.body.response_format, self.planned.samples)
        try:
            async for wave in speak(
                self.engine, self.voice, self.planned, self.options, cancelled=self.cancelled, deadline=self.deadline
            ):
                self.metrics.queue_pieces.set(self.engine.pending())
                data = encoder.feed(wave)
                if data:
                    if not sent:
                        self.metrics.first_audio.observe(time.perf_counter() - self.started)
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
            message = _failure_message(err, self.settings)
            if not sse:
                raise StreamCutError(message) from err
            yield _event({"type": "error", "error": ApiError(500, message, kind="server_error").body()["error"]})
            return
        elapsed = time.perf_counter() - self.started
        self.metrics.latency.labels(SPEECH).observe(elapsed)
        self.metrics.real_time_factor.observe(elapsed / max(self.planned.samples / SAMPLE_RATE, 1e-6))


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


async def _voice_form(request: Request, max_bytes: int) -> tuple[str, bytes, str | None]:
    """`name`, the clip's bytes and `text` of a voice upload (one file, two fields at most, the clip checked).

    Raises:
        ApiError: 400 a form that is not one, or lacks a part; 413 a clip over `max_bytes`.
    """
    try:
        form = await request.form(max_files=1, max_fields=2)
    except HTTPException as err:
        raise ApiError(400, f"the upload is not a valid form: {err.detail}", param="file") from None
    try:
        name, file, text = form.get("name"), form.get("file"), form.get("text")
        if not isinstance(name, str):
            raise ApiError(400, "name: give the voice's name as a form field", param="name")
        if not isinstance(file, UploadFile):
            raise ApiError(400, "file: give the clip as a file part", param="file")
        if text is not None and not isinstance(text, str):
            raise ApiError(400, "text: give the transcript as a form field", param="text")
        data = await file.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ApiError(413, f"the clip is larger than {max_bytes} bytes", param="file")
        return name, data, text
    finally:
        await form.close()


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


async def _warm_up(engine: Engine, voices: VoiceStore, settings: ServeSettings, state: dict[str, Any]) -> None:
    """One short request through the engine (first-call costs: allocations, compile), then ready."""
    names = voices.names()
    voice = voices.get(names[0]) if names else None
    if voice is not None:
        try:
            planned = await asyncio.to_thread(plan, engine.synthesizer, voice, "Hello.", 1.0, False)
            async for _ in speak(engine, voice, planned, settings.options, cancelled=threading.Event()):
                pass
        except Exception:  # noqa: BLE001 - the server still answers; each request will report its own failure
            logger.exception("warm-up failed")
    state["ready"] = True
    logger.info("ready")
