"""What every route of one server shares: the engine, the voices, the settings, the metrics and the queue's places.

`create_app` makes one `ServerContext` and keeps it as the app's state; a route reaches it through its request
(`context_of`), so that the routes are plain module-level functions and two apps in one process do not mix.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from f5lite.serve.admission import Admission
from f5lite.serve.engine import Engine
from f5lite.serve.metrics import ServerMetrics
from f5lite.serve.settings import ServeSettings
from f5lite.serve.voices import VoiceStore


@dataclass
class ServerContext:
    """One server's shared parts.

    Attributes:
        engine: the model's batching queue.
        voices: the voices.
        settings: limits, key and defaults.
        metrics: the server's collectors.
        admission: the places of speech requests.
        ready: whether the warm-up is done (`/health`).
    """

    engine: Engine
    voices: VoiceStore
    settings: ServeSettings
    metrics: ServerMetrics
    admission: Admission
    ready: bool = False


def context_of(request: Request) -> ServerContext:
    """The context of the server that received `request`."""
    context: ServerContext = request.app.state.context
    return context
