"""The HTTP API of `f5lite-serve` (FastAPI): OpenAI's speech endpoint, voices, models, health and metrics.

- `POST /v1/audio/speech`: OpenAI's request (`model`, `input`, `voice`, `response_format`, `speed`,
  `stream_format`; `instructions` is accepted and ignored: the voice is the reference clip). The audio is streamed as
  it is made (`stream_format=audio`, chunked) or as server-sent events (`sse`: `speech.audio.delta` with base64
  audio, then `speech.audio.done` with the usage).
- `GET /v1/voices`; with `--voice-upload`, `POST /v1/voices` (multipart: `name`, `file`, optional `text`) and
  `DELETE /v1/voices/{name}`.
- `GET /v1/models`; `GET /health` (200 once the model is loaded and warm, 503 before); `GET /metrics`.

Every error is OpenAI's JSON shape `{"error": {"message", "type", "param", "code"}}` with its status: 400 a bad
value, 401 a missing or wrong key, 403 uploads disabled, 404 an unknown voice or model, 409 a voice that exists,
413 an upload too large, 422 an input too long, 429 with `Retry-After` when `queue_size` requests are already in,
500 an unexpected failure (one line; the server log has the rest). `/health` and `/metrics` need no key.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Annotated, Any

from fastapi import FastAPI, Form, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from f5lite.sampling import SamplerOptions
from f5lite.serve.encoding import CONTENT_TYPES, FORMATS, SAMPLE_RATE, StreamEncoder
from f5lite.serve.engine import Engine
from f5lite.serve.metrics import ServerMetrics
from f5lite.serve.settings import MODEL_ALIASES, ServeSettings
from f5lite.serve.speech import speak
from f5lite.serve.voices import Voice, VoiceStore, check_name

logger = logging.getLogger(__name__)
SPEEDS = (0.25, 4.0)
"""OpenAI's range of `speed`."""
STREAM_FORMATS = ("audio", "sse")
_SPEECH = "/v1/audio/speech"


class ApiError(Exception):
    """An error answered in OpenAI's shape."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.param, self.code = status, message, kind, param, code
        self.headers = headers

    def response(self) -> JSONResponse:
        """The JSON response."""
        body = {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}
        return JSONResponse(body, status_code=self.status, headers=self.headers)


class SpeechBody(BaseModel):
    """OpenAI's `POST /v1/audio/speech` body (values checked by the endpoint, for OpenAI's messages)."""

    model: str
    input: str
    voice: str
    response_format: str = "mp3"
    speed: float = 1.0
    stream_format: str = "audio"
    instructions: str | None = None


def create_app(engine: Engine, voices: VoiceStore, settings: ServeSettings) -> FastAPI:
    """The application (see the module docstring).

    Args:
        engine: the model's batching queue (its thread already running).
        voices: the voices.
        settings: limits, key and defaults.

    Returns:
        The FastAPI app; it warms the model up in the background when it starts (`/health` says when it is ready).
    """
    metrics = ServerMetrics()
    state = {"ready": False, "admitted": 0}
    engine.on_batch = metrics.batch_size.observe

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(_warm_up(engine, voices, settings, state))
        yield
        task.cancel()

    app = FastAPI(title="f5lite-serve", lifespan=lifespan)

    @app.exception_handler(ApiError)
    async def api_error(_: Request, err: ApiError) -> JSONResponse:
        return err.response()

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0]
        param = str(first["loc"][-1]) if first.get("loc") else None
        return ApiError(400, f"{param}: {first['msg']}", param=param).response()

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, err: HTTPException) -> JSONResponse:
        return ApiError(err.status_code, str(err.detail)).response()

    @app.middleware("http")
    async def count_and_authorise(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        started = time.perf_counter()
        path = request.url.path
        key = settings.api_key
        if path.startswith("/v1/") and key is not None and request.headers.get("authorization") != f"Bearer {key}":
            response: Response = ApiError(401, "missing or wrong API key", code="invalid_api_key").response()
            metrics.requests.labels("unauthorised", "401").inc()
            return response
        try:
            response = await call_next(request)
        except Exception:  # noqa: BLE001 - one line for the client; the log has the traceback
            logger.exception("request %s failed", path)
            response = ApiError(500, "internal error: the server's log has the details", kind="server_error").response()
        # The route's template, not the raw path: label values must not grow with every URL a client tries.
        route = getattr(request.scope.get("route"), "path", "other")
        metrics.requests.labels(route, str(response.status_code)).inc()
        if route != _SPEECH:  # a speech response's time runs until its last byte (observed there)
            metrics.latency.labels(route).observe(time.perf_counter() - started)
        return response

    @app.post(_SPEECH)
    async def speech(body: SpeechBody) -> Response:
        started = time.perf_counter()
        options, voice = _check_speech(body, voices, settings)
        if state["admitted"] >= settings.queue_size:
            raise ApiError(
                429,
                f"the server is busy: {settings.queue_size} requests are in progress; retry shortly",
                kind="rate_limit_error",
                code="queue_full",
                headers={"Retry-After": "1"},
            )
        encoder = StreamEncoder(body.response_format, streaming=True)
        state["admitted"] += 1
        metrics.queue_depth.set(state["admitted"])
        cancelled, released = threading.Event(), threading.Event()
        sse = body.stream_format == "sse"

        def release() -> None:
            """Give the request's place back, once: when its stream ends, fails or is dropped unread."""
            cancelled.set()
            if not released.is_set():
                released.set()
                state["admitted"] -= 1
                metrics.queue_depth.set(state["admitted"])

        async def audio() -> AsyncIterator[bytes]:
            first, seconds = True, 0.0
            try:
                async for wave in speak(engine, voice, body.input, options, streaming=True, cancelled=cancelled):
                    seconds += wave.shape[0] / SAMPLE_RATE
                    metrics.queue_pieces.set(engine.pending())
                    data = encoder.feed(wave)
                    if data:
                        if first:
                            metrics.first_audio.observe(time.perf_counter() - started)
                            first = False
                        yield _delta(data) if sse else data
                tail = encoder.finish()
                if tail:
                    yield _delta(tail) if sse else tail
                if sse:
                    yield _done(len(body.input))
                elapsed = time.perf_counter() - started
                metrics.latency.labels(_SPEECH).observe(elapsed)
                metrics.real_time_factor.observe(elapsed / max(seconds, 1e-6))
            finally:
                release()

        stream = audio()
        # A client that leaves before the stream starts never runs its `finally`: the place is given back when the
        # generator is dropped instead.
        weakref.finalize(stream, release)
        media = "text/event-stream" if sse else CONTENT_TYPES[body.response_format]
        return StreamingResponse(stream, media_type=media)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        names = [settings.model_id, *MODEL_ALIASES]
        return {
            "object": "list",
            "data": [{"id": n, "object": "model", "created": 0, "owned_by": "f5lite"} for n in names],
        }

    @app.get("/v1/voices")
    async def list_voices() -> dict[str, Any]:
        found = [voices.get(name) for name in voices.names()]
        return {
            "voices": [{"name": v.name, "text": v.text.strip(), "seconds": round(v.seconds, 2)} for v in found if v]
        }

    @app.post("/v1/voices")
    async def add_voice(
        name: Annotated[str, Form()], file: UploadFile, text: Annotated[str | None, Form()] = None
    ) -> dict[str, Any]:
        _check_upload_allowed(settings)
        data = await file.read(settings.max_upload_bytes + 1)
        if len(data) > settings.max_upload_bytes:
            raise ApiError(413, f"the clip is larger than {settings.max_upload_bytes} bytes", param="file")
        try:
            check_name(name)
            if voices.get(name) is not None:
                raise ApiError(409, f"voice {name!r} exists; delete it first to replace it", param="name")
            voice = await asyncio.to_thread(voices.add, name, data, text)
        except ValueError as err:
            raise ApiError(400, str(err), param="name" if "name" in str(err) else "file") from None
        return {"name": voice.name, "text": voice.text.strip(), "seconds": round(voice.seconds, 2)}

    @app.delete("/v1/voices/{name}")
    async def delete_voice(name: str) -> dict[str, Any]:
        _check_upload_allowed(settings)
        try:
            voices.remove(name)
        except KeyError:
            raise ApiError(404, f"unknown voice {name!r}", param="voice", code="voice_not_found") from None
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

    return app


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


def _check_upload_allowed(settings: ServeSettings) -> None:
    if not settings.voice_upload:
        raise ApiError(403, "adding and deleting voices is disabled; start the server with --voice-upload",
                       kind="permission_error")  # fmt: skip


def _delta(data: bytes) -> bytes:
    event = {"type": "speech.audio.delta", "audio": base64.b64encode(data).decode("ascii")}
    return f"data: {json.dumps(event)}\n\n".encode()


def _done(characters: int) -> bytes:
    usage = {"input_tokens": characters, "output_tokens": 0, "total_tokens": characters}
    return f"data: {json.dumps({'type': 'speech.audio.done', 'usage': usage})}\n\n".encode()


async def _warm_up(engine: Engine, voices: VoiceStore, settings: ServeSettings, state: dict[str, Any]) -> None:
    """One short request through the engine (first-call costs: allocations, compile), then ready."""
    names = voices.names()
    voice = voices.get(names[0]) if names else None
    if voice is not None:
        try:
            async for _ in speak(
                engine, voice, "Hello.", settings.options, streaming=False, cancelled=threading.Event()
            ):
                pass
        except Exception:  # noqa: BLE001 - the server still answers; each request will report its own failure
            logger.exception("warm-up failed")
    state["ready"] = True
    logger.info("ready")
