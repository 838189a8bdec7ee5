"""OpenAI's error shape, `{"error": {"message", "type", "param", "code"}}` with its HTTP status, for every refusal.

Statuses: 400 a bad value (or a `Host` the server does not answer to), 401 a missing or wrong key, 403 a forbidden
action (uploads off, a foreign web page, a voice that is not an upload), 404 an unknown voice or model, 408 a body
not sent in time (its connection is closed after the answer), 409 a voice that exists, 413 a body or upload too
large, 422 an input too long, 429 (with `Retry-After`) no place free, 500 an unexpected failure, 504 a request that
ran out of time before its first byte.
"""

from __future__ import annotations

from fastapi.responses import JSONResponse


class ApiError(Exception):
    """An error answered in OpenAI's shape.

    Args:
        status: the HTTP status.
        message: one line for the client.
        kind: OpenAI's `type` (`invalid_request_error`, `authentication_error`, `permission_error`,
            `rate_limit_error`, `server_error`).
        param: the request field at fault, if one is.
        code: a machine-readable code, if any.
        headers: extra response headers (`Retry-After`).
    """

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

    def body(self) -> dict[str, dict[str, str | None]]:
        """The JSON body."""
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        """The JSON response."""
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


INTERNAL = ApiError(500, "internal error: the server's log has the details", kind="server_error")
"""An unexpected failure, as the client sees it."""
