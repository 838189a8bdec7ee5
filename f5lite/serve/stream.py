"""A speech response that ends itself: its place freed however it ends, its client held to a pace.

Every write of the response must be taken by the client within `send_timeout` seconds: a client that stops reading
(its socket full, the server's write waiting) is cut (`StreamCutError`: the connection is dropped, see
`f5lite.serve.guard`), so no client keeps its place for ever and `queue_size` stalled sockets cannot lock every other
client out. (The request's deadline bounds the making of its audio: `f5lite.serve.speech.speak`.) When the response
ends (finished, failed, cut, or its client gone), the request's place is given back and its generator closed (which
cancels what of it is still queued).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from starlette.responses import StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from f5lite.serve.admission import Ticket
from f5lite.serve.guard import StreamCutError


class SpeechStream(StreamingResponse):
    """A streamed speech response (see the module docstring).

    Args:
        content: the response's bytes, piece by piece.
        ticket: the request's place, released when the response ends.
        send_timeout: seconds each write may wait for the client.
        media_type: its content type.
    """

    def __init__(
        self,
        content: AsyncGenerator[bytes, None],
        *,
        ticket: Ticket,
        send_timeout: float,
        media_type: str,
    ) -> None:
        super().__init__(content, media_type=media_type)
        self._content, self._ticket, self._send_timeout = content, ticket, send_timeout

    async def stream_response(self, send: Send) -> None:
        """Send the response, each write within `send_timeout`."""

        async def timed(message: Message) -> None:
            try:
                await asyncio.wait_for(send(message), self._send_timeout)
            except TimeoutError:
                raise StreamCutError(f"the client read nothing for {self._send_timeout:g} s (--send-timeout)") from None

        await super().stream_response(timed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream the response; whatever happens, give the place back and close the generator."""
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._ticket.release()
            await self._content.aclose()
