"""The HTTP API of `f5lite-serve` (FastAPI): OpenAI's speech endpoint, voices, models, health and metrics.

`create_app` makes the server's shared parts (`f5lite.serve.context`), OpenAI-shaped error handlers and the app's
lifespan (a warm-up request when it starts; the engine's thread and the voices' recogniser stopped when it ends),
and mounts the routers of `f5lite.serve.routes`: speech, voices, operations. Requests pass `f5lite.serve.guard`
first (origin, key, uploads, body size). Every error is OpenAI's JSON shape (`f5lite.serve.errors`). `/health` and
`/metrics` need no key; `/openapi.json` does; there are no `/docs` pages.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from f5lite.serve.admission import Admission
from f5lite.serve.context import ServerContext
from f5lite.serve.engine import Engine
from f5lite.serve.errors import INTERNAL, ApiError
from f5lite.serve.guard import Guard
from f5lite.serve.metrics import ServerMetrics
from f5lite.serve.routes import operations, speech, voices
from f5lite.serve.settings import ServeSettings
from f5lite.serve.voices import VoiceStore


def create_app(engine: Engine, store: VoiceStore, settings: ServeSettings) -> Guard:
    """The application (see the module docstring).

    Args:
        engine: the model's batching queue (its thread already running).
        store: the voices.
        settings: limits, key and defaults.

    Returns:
        The ASGI app (the FastAPI app inside `f5lite.serve.guard.Guard`); it warms the model up in the background
        when it starts (`/health` says when it is ready), and stops the engine's thread and the voices' recogniser
        when it shuts down.
    """
    metrics = ServerMetrics()
    admission = Admission(settings.queue_size, settings.max_per_client, metrics.queue_depth.set)
    context = ServerContext(engine, store, settings, metrics, admission)
    engine.on_batch = metrics.batch_size.observe

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(speech.warm_up(context))
        yield
        task.cancel()
        # Here, not after uvicorn returns: stopped by a signal, uvicorn raises it again once it has shut down.
        engine.stop()
        store.close()

    app = FastAPI(title="f5lite-serve", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.context = context
    app.add_exception_handler(ApiError, _api_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _failure)
    for router in (speech.router, voices.router, operations.router):
        app.include_router(router)
    return Guard(app, settings, metrics)


async def _api_error(_: Request, err: ApiError) -> JSONResponse:
    return err.response()


async def _invalid(_: Request, err: RequestValidationError) -> JSONResponse:
    """A body FastAPI could not read into its model, as OpenAI's 400 naming the first bad field."""
    first = err.errors()[0]
    if first.get("type") == "json_invalid":  # its location is a byte offset, not a field
        reason = first.get("ctx", {}).get("error", first["msg"])
        return ApiError(400, f"the body is not valid JSON: {reason}").response()
    if tuple(first.get("loc", ())) == ("body",):  # not a JSON object, or not sent as JSON (a plain form post)
        return ApiError(400, "the body must be a JSON object sent as Content-Type: application/json").response()
    param = str(first["loc"][-1]) if first.get("loc") else None
    return ApiError(400, f"{param}: {first['msg']}", param=param).response()


async def _http_error(_: Request, err: HTTPException) -> JSONResponse:
    return ApiError(err.status_code, str(err.detail)).response()


async def _failure(_: Request, err: Exception) -> JSONResponse:
    return INTERNAL.response()  # in OpenAI's shape; Starlette raises the error on, and the guard logs it
