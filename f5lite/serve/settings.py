"""What a server allows and how it batches (`f5lite-serve`'s options besides the model's).

Every limit is checked before the work it bounds: a body's size before it is parsed (`f5lite.serve.guard`), a
clip's header before it is decoded (`f5lite.audio.io`), a text's pieces before one is spoken
(`f5lite.serve.speech.plan_request`), a place in the queue before a request runs (`f5lite.serve.admission`), a
connection's request head and body within their deadlines, and the connections open at once below the open-file limit
(`f5lite.serve.connections`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from f5lite.infer.plan import WINDOW_FRAMES
from f5lite.sampling import SamplerOptions

MODEL_ALIASES = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts")
"""OpenAI's model names, accepted for the served model: clients and front ends send them by default."""


@dataclass(frozen=True)
class ServeSettings:
    """The server's limits and defaults."""

    model_id: str
    """The served model's name (`GET /v1/models`; requests may also name it by one of `MODEL_ALIASES`)."""
    options: SamplerOptions = field(default_factory=SamplerOptions)
    """Sampler settings of every request (a request's `speed` replaces `options.speed`)."""
    seed: int | None = None
    """Noise seed of every request (`sample.seed`): the same text in the same voice then sounds the same each time;
    None: each request draws its own."""
    vocoder: str = "vocos"
    """The vocoder the model is loaded with (`sample.vocoder`)."""
    vocoder_source: str | None = None
    """Vocos weights (`sample.vocoder_source`); None: the default."""
    api_key: str | None = None
    """Bearer key every `/v1` request must carry; None: no key."""
    voice_upload: bool = False
    """Allow adding and deleting voices over HTTP."""
    max_upload_bytes: int = 10 * 1024 * 1024
    """Largest voice upload."""
    max_voice_seconds: float = 15.0
    """Longest reference clip (the model's window must leave room to speak)."""
    max_input_chars: int = 4096
    """Longest `input` (OpenAI's limit)."""
    queue_size: int = 32
    """Speech requests admitted at once; more are answered 429 with Retry-After."""
    max_batch: int = 8
    """Most pieces per sampler call."""
    max_batch_frames: int = 8192
    """Most mel frames (summed, references included) per sampler call; at least `WINDOW_FRAMES` (one piece)."""
    batch_wait: float = 0.05
    """Seconds the first piece of a batch waits for others."""
    request_timeout: float = 300.0
    """Seconds a speech request may take from admission to its last byte; then it is ended (its place freed)."""
    send_timeout: float = 30.0
    """Seconds a client may take to read the next piece of a response, or to send the next piece of a request body:
    one that stops reading (or sending) for longer loses its place."""
    max_per_client: int = 0
    """Speech requests at once from one client address (`Retry-After` 429 above it); 0: no per-client limit."""
    allowed_origins: tuple[str, ...] = ()
    """Web page origins (`https://app.example`) whose browsers may call the API; a request from any other page
    (a browser sends its `Origin`) is refused 403. SDKs and curl send no `Origin`."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names (`tts.example`) a request's `Host` may name besides `localhost` and IP addresses, which every
    server answers to; any other `Host` is refused 400. A page that rebinds its own name to this machine's address
    sends its own name, so it reads nothing."""
    header_timeout: float = 10.0
    """Seconds a client may take to send a request's head (its request line and headers), counted from the
    connection's opening or from the end of the previous response; then the connection is closed."""
    body_timeout: float = 60.0
    """Seconds a client may take to send a whole request body (each piece within `send_timeout` besides); then
    408."""
    max_connections: int = 512
    """Connections open at once (lowered to what the open-file limit leaves room for); at the cap, the connection
    that has waited longest for a request head is closed to make room for a new one."""

    def __post_init__(self) -> None:
        for name in (
            "max_upload_bytes",
            "max_input_chars",
            "queue_size",
            "max_batch",
            "max_batch_frames",
            "max_connections",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} is not valid; it must be >= 1")
        for name in ("max_voice_seconds", "batch_wait", "max_per_client"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name}={getattr(self, name)} is not valid; it must be >= 0")
        for name in ("request_timeout", "send_timeout", "header_timeout", "body_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}={getattr(self, name)} is not valid; it must be > 0")
        if self.max_batch_frames < WINDOW_FRAMES:
            raise ValueError(
                f"max_batch_frames={self.max_batch_frames} is not valid; it must hold one piece of the model's "
                f"window: >= {WINDOW_FRAMES}"
            )
        for host in self.allowed_hosts:
            if not host or any(c in host for c in "/:@ \t"):  # a URL or `name:port` would never match
                raise ValueError(f"allowed host {host!r} is not valid; give a bare name such as tts.example (no "
                                 "scheme, port or path)")  # fmt: skip
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError("api_key is empty; give a key, or none to serve without one")

    def knows_model(self, name: str) -> bool:
        """Whether a request's `model` names the served model."""
        return name == self.model_id or name in MODEL_ALIASES
