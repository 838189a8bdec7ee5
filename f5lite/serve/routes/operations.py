"""`GET /v1/models` (the served model and OpenAI's names for it), `GET /health` and `GET /metrics`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from f5lite.serve.context import context_of
from f5lite.serve.settings import MODEL_ALIASES

router = APIRouter()


@router.get("/v1/models")
async def models(request: Request) -> dict[str, Any]:
    """The served model, and the OpenAI model names accepted for it."""
    names = [context_of(request).settings.model_id, *MODEL_ALIASES]
    return {"object": "list", "data": [{"id": n, "object": "model", "created": 0, "owned_by": "f5lite"} for n in names]}


@router.get("/health")
async def health(request: Request) -> JSONResponse:
    """200 once the model is loaded and warm; 503 (with Retry-After) before."""
    context = context_of(request)
    if not context.ready:
        return JSONResponse({"status": "loading"}, status_code=503, headers={"Retry-After": "1"})
    return JSONResponse({"status": "ready", "model": context.settings.model_id, "voices": len(context.voices.names())})


@router.get("/metrics")
async def prometheus(request: Request) -> Response:
    """The server's metrics in Prometheus's text format (`f5lite.serve.metrics`)."""
    context = context_of(request)
    context.metrics.queue_pieces.set(context.engine.pending())
    return Response(context.metrics.render(), media_type="text/plain; version=0.0.4")
