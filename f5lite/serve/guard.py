"""What every request passes before a route sees it: the host it names, its web page, the key, uploads, the body.

One ASGI layer around the app, so that nothing of a refused request is read or parsed:

1. Every request (GETs and `/health` included) must name in its `Host` a name the server answers to: `localhost`,
   an IP address, or one of `allowed_hosts` (`--host`'s name, `--allow-host`); else 400. A web page that rebinds
   its own name's DNS to this machine's address (DNS rebinding) sends its own name, so it can neither read the
   voice list of a server without a key nor post to it; an IP address cannot be rebound, so it is always allowed.
2. A request that carries an `Origin` (browsers send one; SDKs and curl do not) from a page not in
   `allowed_origins` is refused 403: without this, any web page a user of the machine opens could post to a server
   on 127.0.0.1 that has no key (and, through DNS rebinding, read the answers).
3. `/v1/*` and `/openapi.json` need `Authorization: Bearer KEY` when the server has a key (compared in constant
   time): 401.
4. Adding or deleting voices while uploads are off: 403, before the upload is read.
5. The body: at most its route's limit (`body_limit`), refused 413 from `Content-Length` before a byte is read, or
   as soon as the bytes sent pass it; each piece of it must come within `send_timeout` seconds and the whole of it
   within `body_timeout` (408 otherwise, and the connection closed: a client that trickles its body, a byte at a
   time, does not hold the server). The route then reads the body from memory. (FastAPI's own `max_body_size`
   answers a too-large `Content-Length` in plain text rather than OpenAI's shape, reads bodies without a time
   limit, and runs after the route's other checks.) The request's head has its own deadline, before this layer
   sees it: `f5lite.serve.connections`.

It also counts every request by route and status, and times those that are not speech (a speech response's time
runs until its last byte, observed there). A response that ends early on purpose after it started (a client that
stopped reading, a request out of time: `StreamCutError`) is logged in one line and the connection dropped, so the
client sees a broken transfer, never a short answer that looks whole; any other failure is logged with its
traceback and answered 500 in OpenAI's shape if nothing was sent yet.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from f5lite.serve.errors import INTERNAL, ApiError
from f5lite.serve.metrics import ServerMetrics
from f5lite.serve.settings import ServeSettings

logger = logging.getLogger(__name__)
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SPEECH = "/v1/audio/speech"
VOICES = "/v1/voices"
SMALL_BODY = 16 * 1024
"""The most bytes of a body on any other route (none of them takes one)."""
FORM_ROOM = 64 * 1024
"""Bytes of a voice upload's body besides the clip: the multipart framing, the name and the transcript."""
LOCAL_NAME = "localhost"
"""The one name every server answers to besides IP addresses (browsers resolve it to this machine themselves)."""


class StreamCutError(Exception):
    """A started response ended early on purpose (the message says why); its connection is dropped."""


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    """Whether a request's `Host` header (`name`, `name:port`, `[v6]:port`) names this server.

    Args:
        host: the header's value.
        allowed: host names besides `localhost` and IP addresses.
    """
    name = host.lower()
    if name.startswith("["):  # an IPv6 literal: the brackets, then perhaps a port
        name = name[1:].partition("]")[0]
    elif name.count(":") == 1:  # `name:port` (a bare IPv6 address has more than one colon)
        name = name.partition(":")[0]
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return name == LOCAL_NAME or name in (a.lower() for a in allowed)


def body_limit(method: str, path: str, settings: ServeSettings) -> int:
    """The most bytes of a request body on a route.

    A speech request's JSON holds at most `max_input_chars` characters, each at most 12 bytes escaped (a character
    outside the basic plane is two six-byte `u` escapes), and a few short fields.
    """
    if method == "POST" and path == SPEECH:
        return 12 * settings.max_input_chars + 4096
    if method == "POST" and path == VOICES:
        return settings.max_upload_bytes + FORM_ROOM
    return SMALL_BODY


class Guard:
    """The ASGI layer of the module docstring.

    Args:
        app: the FastAPI app.
        settings: the limits, the key, the allowed origins.
        metrics: the server's counters.
    """

    def __init__(self, app: ASGIApp, settings: ServeSettings, metrics: ServerMetrics) -> None:
        self.app, self.settings, self.metrics = app, settings, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request, then pass it on (see the module docstring)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), [0]

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        limit = body_limit(scope["method"], scope["path"], self.settings)
        try:
            refusal = self._refusal(scope, limit)
            if refusal is None:
                receive = await self._read_body(receive, limit)
        except ApiError as err:
            refusal = err
        if refusal is not None:
            await refusal.response()(scope, receive, counted)
            self.metrics.requests.labels("refused", str(refusal.status)).inc()
            return
        try:
            await self.app(scope, receive, counted)
        except StreamCutError as cut:
            logger.warning("%s %s: %s; the connection is dropped", scope["method"], scope["path"], cut)
        except Exception as err:  # noqa: BLE001 - one line for the client; the log has the traceback
            logger.error("%s %s failed", scope["method"], scope["path"], exc_info=err)
            if not status[0]:
                await INTERNAL.response()(scope, receive, counted)
        # The route's template, not the raw path: label values must not grow with every URL a client tries.
        route = getattr(scope.get("route"), "path", "other")
        self.metrics.requests.labels(route, str(status[0])).inc()
        if route != SPEECH:
            self.metrics.latency.labels(route).observe(time.perf_counter() - started)

    def _refusal(self, scope: Scope, limit: int) -> ApiError | None:
        """The error that refuses the request from its headers alone (its body's `limit` among them), or None."""
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        path, method = scope["path"], scope["method"]
        host = headers.get("host")  # none: HTTP/1.0, which browsers do not speak
        if host is not None and not host_allowed(host, self.settings.allowed_hosts):
            return ApiError(400, f"this server does not answer to host {host!r}; if it is this server's name, start "
                            "it with --allow-host NAME", code="host_not_allowed")  # fmt: skip
        origin = headers.get("origin")
        if origin is not None and origin not in self.settings.allowed_origins:
            return ApiError(403, f"requests from web page {origin!r} are not allowed (--allow-origin)",
                            kind="permission_error", code="origin_not_allowed")  # fmt: skip
        key = self.settings.api_key
        if key is not None and (path.startswith("/v1/") or path == "/openapi.json"):
            given = headers.get("authorization", "").encode("utf-8", "surrogateescape")
            if not hmac.compare_digest(given, f"Bearer {key}".encode()):
                return ApiError(401, "missing or wrong API key", kind="authentication_error", code="invalid_api_key")
        if path.startswith(VOICES) and method in ("POST", "DELETE") and not self.settings.voice_upload:
            return ApiError(403, "adding and deleting voices is disabled; start the server with --voice-upload",
                            kind="permission_error")  # fmt: skip
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            return ApiError(413, f"the request body is larger than {limit} bytes", code="body_too_large")
        return None

    async def _read_body(self, receive: Receive, limit: int) -> Receive:
        """Read the whole body within `limit` bytes and in time; a `receive` that gives it again, then the rest."""
        pace, whole = self.settings.send_timeout, self.settings.body_timeout
        deadline = time.monotonic() + whole
        parts, size, more = [], 0, True
        while more:
            left = deadline - time.monotonic()
            timeout = min(pace, left)
            try:
                message = await asyncio.wait_for(receive(), timeout)
            except TimeoutError:
                said = f"{pace:g} s (--send-timeout)" if pace < left else f"{whole:g} s in all (--body-timeout)"
                # Closed after the answer: the rest of a trickled body would otherwise keep the connection.
                raise ApiError(408, f"the request body did not come within {said}", code="body_timeout",
                               headers={"Connection": "close"}) from None  # fmt: skip
            if message["type"] != "http.request":
                return receive  # the client left: the route finds out from its own receive
            parts.append(message.get("body", b""))
            size += len(parts[-1])
            if size > limit:
                raise ApiError(413, f"the request body is larger than {limit} bytes", code="body_too_large")
            more = message.get("more_body", False)
        replay: list[Message] = [{"type": "http.request", "body": b"".join(parts), "more_body": False}]

        async def replayed() -> Message:
            return replay.pop() if replay else await receive()

        return replayed
