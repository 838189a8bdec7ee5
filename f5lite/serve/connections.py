"""Connections with deadlines, and no more of them than the open-file limit allows: what uvicorn alone leaves open.

uvicorn (0.54, its h11 protocol) arms no timer on a connection until its first response is sent, so a client that
connects and sends half a request head holds its socket for ever; `limit_concurrency` answers 503 only once a head
is complete, which a half-sent one never is; and asyncio's accept loop, out of files, logs a traceback and schedules
a retry for each of up to `backlog` accepts in a row, each retry doing the same (CPython 3.11's
`selector_events._accept_connection`). Measured with `ulimit -n 128` and 200 half-sent heads: all 200 still open
after 40 s, a normal request timing out after 30 s, 2.17 million tracebacks (0.9 GB of log) in three minutes.

`serve` runs uvicorn's server with:

- `HeadDeadline`, uvicorn's h11 protocol with a timer: a request's head (its request line and headers) must be
  complete within `header_timeout` seconds of the connection's opening, or of the end of the previous response on
  it; else the connection is closed. (A body's deadlines are `f5lite.serve.guard`'s, which reads it first.)
- `Listener`, an accept loop of its own on the listening socket (asyncio's `add_reader` and
  `connect_accepted_socket`), which accepts while fewer than `max_connections` are open, so the process does not run
  out of files. At the cap, when another client waits, the connection that has waited longest for a request head
  (an idle or a slowloris one) is closed to make room: a client that sends its request at once is served, not locked
  out until deadlines pass. When every connection has a request under way, accepting stops (the kernel's backlog
  holds the newcomers) until one closes. Out of files all the same (something else took them), it logs one line and
  tries again a second later.

`connection_cap` lowers `max_connections` to what the open-file limit (`ulimit -n`) leaves room for.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import resource
import socket
from collections.abc import Callable
from functools import partial
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from f5lite.serve.settings import ServeSettings

logger = logging.getLogger(__name__)

FILE_RESERVE = 32
"""Files kept free besides the connections: voices being written, the recogniser's pipes, libraries loaded late."""
BACKLOG = 2048
"""Connections the kernel queues for the listener while it is not accepting (uvicorn's default)."""
WARN_EVERY = 60.0
"""Seconds between two log lines of one kind about the cap or the open-file limit: a line, never a flood."""
RETRY_AFTER = 1.0
"""Seconds the listener waits to accept again after the process ran out of files."""
_OUT_OF_FILES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def connection_cap(asked: int) -> int:
    """`asked` connections, lowered to what the open-file limit leaves room for (saying so in one log line).

    Args:
        asked: `--max-connections`.

    Returns:
        The most connections to keep open at once.

    Raises:
        ValueError: the open-file limit leaves no room for a connection.
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return asked
    room = soft - _open_files() - FILE_RESERVE
    if room < 1:
        raise ValueError(f"the open-file limit (ulimit -n {soft}) leaves no room for connections; raise it")
    if room < asked:
        logger.warning("at most %d connections at once (not --max-connections %d): the open-file limit "
                       "(ulimit -n %d) leaves room for no more", room, asked, soft)  # fmt: skip
    return min(asked, room)


def _open_files() -> int:
    """Files this process has open (`/dev/fd`, on Linux and macOS; 0 where it cannot be listed)."""
    try:
        return len(os.listdir("/dev/fd"))
    except OSError:
        return 0


def serve(app: Any, listening: socket.socket, settings: ServeSettings, cap: int, grace: int) -> None:
    """Serve `app` on a bound socket until SIGTERM or Ctrl-C (see the module docstring).

    Args:
        app: the ASGI app.
        listening: the bound socket (not yet listening; it is closed at the end).
        settings: `header_timeout` is read.
        cap: the most connections open at once (`connection_cap`).
        grace: seconds the responses under way get to finish after SIGTERM or Ctrl-C.
    """
    # uvloop and WebSocket upgrades are kept out: the listener adds a reader of its own to asyncio's selector loop,
    # and an upgraded connection would leave its `HeadDeadline` without telling the listener.
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=grace, loop="asyncio", ws="none")
    _Server(config, Listener(listening, cap), settings.header_timeout).run()


class Listener:
    """Accepts connections on a socket while fewer than `cap` are open; at the cap, makes room (module docstring).

    Args:
        sock: the bound socket (not yet listening).
        cap: the most connections open at once.
    """

    def __init__(self, sock: socket.socket, cap: int) -> None:
        self.sock, self.cap = sock, cap
        self.connections: set[HeadDeadline] = set()
        """The open connections whose protocol has started."""
        self._pending = 0  # accepted, their protocol not started yet (a socket each all the same)
        self._leaving: set[HeadDeadline] = set()  # closed to make room, not gone yet
        self._tasks: set[asyncio.Task[Any]] = set()  # the loop keeps only weak references to tasks
        self._factory: Callable[[], HeadDeadline] | None = None
        self._reading = self._closed = False
        self._warned: dict[str, float] = {}

    @property
    def open(self) -> int:
        """Sockets accepted and not yet closed."""
        return self._pending + len(self.connections)

    def start(self, factory: Callable[[], HeadDeadline]) -> None:
        """Listen, and accept in the running loop; `factory` makes each connection's protocol."""
        self._factory = factory
        self.sock.setblocking(False)
        self.sock.listen(BACKLOG)
        self._resume()

    def close(self) -> None:
        """Accept no more, and close the socket."""
        self._pause()
        self._closed = True
        self.sock.close()

    def opened(self, connection: HeadDeadline) -> None:
        """A connection's protocol started."""
        self._pending -= 1
        self.connections.add(connection)

    def closed(self, connection: HeadDeadline) -> None:
        """A connection closed: its room is free."""
        self.connections.discard(connection)
        self._leaving.discard(connection)
        self._resume()

    def waiting(self) -> None:
        """A connection began to wait for a request head: if accepting stopped for want of room, room can be made."""
        self._resume()

    def _resume(self) -> None:
        if not self._reading and not self._closed:
            asyncio.get_running_loop().add_reader(self.sock.fileno(), self._accept)
            self._reading = True

    def _pause(self) -> None:
        if self._reading:
            asyncio.get_running_loop().remove_reader(self.sock.fileno())
            self._reading = False

    def _accept(self) -> None:
        """Clients wait in the backlog: accept them while there is room, or make room for the next."""
        if self.open >= self.cap:
            self._make_room()
            return
        loop = asyncio.get_running_loop()
        while self.open < self.cap:
            try:
                client, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return  # none left
            except ConnectionAbortedError:
                continue
            except OSError as err:
                if err.errno not in _OUT_OF_FILES:
                    raise
                self._out_of_files(err)
                return
            client.setblocking(False)
            self._pending += 1
            made: list[HeadDeadline] = []
            task = loop.create_task(loop.connect_accepted_socket(partial(self._make, made), client))
            self._tasks.add(task)
            task.add_done_callback(partial(self._connected, client, made))

    def _make(self, made: list[HeadDeadline]) -> HeadDeadline:
        assert self._factory is not None, "start() first"
        made.append(self._factory())
        return made[0]

    def _connected(self, client: socket.socket, made: list[HeadDeadline], task: asyncio.Task[Any]) -> None:
        """A connection's set-up ended; if it failed before its protocol started, its room is freed here."""
        self._tasks.discard(task)
        if task.cancelled() or task.exception() is None:
            return
        logger.warning("a connection could not be set up: %s", task.exception())
        if not made or made[0].transport is None:
            self._pending -= 1
            client.close()
            self._resume()

    def _make_room(self) -> None:
        """Close the connection that has waited longest for a request head; none waits: stop accepting a while."""
        if self._leaving:
            return  # room is being made; the socket stays readable, so this runs again after
        waiting = [c for c in self.connections if c.waiting_since is not None]
        if not waiting:
            self._pause()  # every connection has a request under way: the next to close resumes accepting
            return
        oldest = min(waiting, key=lambda c: c.waiting_since or 0.0)
        self._leaving.add(oldest)
        oldest.transport.abort()
        self._warn("cap", "%d connections open (--max-connections): the one waiting longest for a request is "
                   "closed for each newcomer (said once a minute at most)", self.cap)  # fmt: skip

    def _out_of_files(self, err: OSError) -> None:
        """The process has no file left to accept with: say so in one line, and try again in a while."""
        self._pause()
        self._warn("files", "cannot accept a connection (%s) with %d open: trying again every %g s (said once a "
                   "minute at most)", err.strerror, self.open, RETRY_AFTER)  # fmt: skip
        asyncio.get_running_loop().call_later(RETRY_AFTER, self._resume)

    def _warn(self, kind: str, message: str, *args: object) -> None:
        now = asyncio.get_running_loop().time()
        if now - self._warned.get(kind, -WARN_EVERY) >= WARN_EVERY:
            self._warned[kind] = now
            logger.warning(message, *args)


class HeadDeadline(H11Protocol):
    """uvicorn's h11 protocol, with a deadline on each request's head and a place in a `Listener`.

    Args:
        listener: the listener that accepted the connection.
        header_timeout: seconds a request's head may take.
        **kwargs: `H11Protocol`'s (`config`, `server_state`, `app_state`).
    """

    def __init__(self, listener: Listener, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.listener, self.header_timeout = listener, header_timeout
        self.waiting_since: float | None = None
        """The loop's time since when the connection waits for a request head; None while a request is under way."""
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """uvicorn's, then the head's deadline runs."""
        super().connection_made(transport)
        self.listener.opened(self)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        """uvicorn's, and the room is freed."""
        self._stop_waiting()
        super().connection_lost(exc)
        self.listener.closed(self)

    def data_received(self, data: bytes) -> None:
        """uvicorn's; a head complete stops the deadline."""
        super().data_received(data)
        if not self._between_requests():
            self._stop_waiting()

    def on_response_complete(self) -> None:
        """uvicorn's; the next request's head has its deadline (the rest of a body left unread counts in it)."""
        super().on_response_complete()
        if self._between_requests() and not self.transport.is_closing():
            self._await_head()

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _await_head(self) -> None:
        self._stop_waiting()
        self.waiting_since = self.loop.time()
        self._deadline = self.loop.call_later(self.header_timeout, self._too_slow)
        self.listener.waiting()

    def _stop_waiting(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.waiting_since = None

    def _too_slow(self) -> None:
        # Aborted, not closed: a close waits for the client to read what is still buffered, which a client that
        # stopped reading never does.
        self._deadline = None
        self.transport.abort()


class _Server(uvicorn.Server):
    """uvicorn's server (the app's lifespan, signals, graceful shutdown) listening through a `Listener`."""

    def __init__(self, config: uvicorn.Config, listener: Listener, header_timeout: float) -> None:
        super().__init__(config)
        self.listener, self.header_timeout = listener, header_timeout

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """The app's lifespan starts (no socket of uvicorn's own), then the listener accepts."""
        await super().startup(sockets=[])
        self.listener.start(self._connection)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """The listener accepts no more; then uvicorn's shutdown (the responses under way finish)."""
        self.listener.close()
        await super().shutdown(sockets=[])

    def _connection(self) -> HeadDeadline:
        return HeadDeadline(self.listener, self.header_timeout, config=self.config, server_state=self.server_state,
                            app_state=self.lifespan.state)  # fmt: skip
