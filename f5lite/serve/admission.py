"""Places for speech requests: `queue_size` in all, `max_per_client` per client address, each given back once.

A request takes its place (a `Ticket`) once it is checked and planned, before any work for it is queued, and gives
it back when its response ends, however it ends: finished, failed, out of time, its client gone or no longer
reading (`f5lite.serve.stream.SpeechStream` releases it). With no place free the request is answered 429 with
`Retry-After`, which OpenAI's SDKs follow by themselves.

Clients are told apart by their address. Behind a reverse proxy every request comes from the proxy unless uvicorn
is told to trust its `X-Forwarded-For` (it trusts 127.0.0.1 by default); a limit per user then belongs in the proxy.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

from f5lite.serve.errors import ApiError


class Ticket:
    """One request's place; `release` gives it back (once, whoever calls it first)."""

    def __init__(self, release: Callable[[], None]) -> None:
        self._release = release
        self._lock = threading.Lock()
        self._held = True

    def release(self) -> None:
        """Give the place back (later calls do nothing)."""
        with self._lock:
            if not self._held:
                return
            self._held = False
        self._release()


class Admission:
    """The places of a server.

    Args:
        queue_size: places in all.
        max_per_client: places one client address may hold; 0: no limit per client.
        on_change: called with the number of places taken after every change (the queue-depth gauge).
    """

    def __init__(self, queue_size: int, max_per_client: int, on_change: Callable[[int], None]) -> None:
        self._size, self._per_client, self._on_change = queue_size, max_per_client, on_change
        self._taken: Counter[str] = Counter()
        self._lock = threading.Lock()

    def admit(self, client: str) -> Ticket:
        """A place for a request from `client`.

        Raises:
            ApiError: 429 when every place, or every place of this client, is taken.
        """
        with self._lock:
            if sum(self._taken.values()) >= self._size:
                raise _busy(f"the server is busy: {self._size} requests are in progress", "queue_full")
            if self._per_client and self._taken[client] >= self._per_client:
                raise _busy(f"{self._per_client} requests of this client are in progress", "client_limit")
            self._taken[client] += 1
            taken = sum(self._taken.values())
        self._on_change(taken)
        return Ticket(lambda: self._give_back(client))

    def taken(self) -> int:
        """Places taken now."""
        with self._lock:
            return sum(self._taken.values())

    def _give_back(self, client: str) -> None:
        with self._lock:
            self._taken[client] -= 1
            if not self._taken[client]:
                del self._taken[client]
            taken = sum(self._taken.values())
        self._on_change(taken)


def _busy(message: str, code: str) -> ApiError:
    return ApiError(429, f"{message}; retry shortly", kind="rate_limit_error", code=code, headers={"Retry-After": "1"})
