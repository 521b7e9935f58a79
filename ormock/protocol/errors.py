"""Open Responses errors: the envelope, the status each type goes with, and the exception."""

from __future__ import annotations

from typing import Any

from ormock.protocol.sse import encode_json

__all__ = ["ERROR_STATUS", "OpenResponsesError"]

# error type -> HTTP status (protocol.md, section 1)
ERROR_STATUS: dict[str, int] = {
    "invalid_request": 400,
    "authentication_error": 401,
    "not_found": 404,
    "method_not_allowed": 405,
    "conflict": 409,
    "request_too_large": 413,
    "unsupported_media_type": 415,
    "too_many_requests": 429,
    "server_error": 500,
    "model_error": 500,
    "service_unavailable": 503,
}


class OpenResponsesError(Exception):
    """An error answered before any stream starts: status plus the error envelope.

    ``param`` names the request field at fault (``input[2].content``) and ``code`` says what
    kind of fault it is; both are strings whenever any value makes sense, since some clients
    only read the message when ``type``, ``param`` and ``code`` are all strings.
    """

    def __init__(
        self,
        message: str,
        *,
        type: str = "invalid_request",
        code: str | None = None,
        param: str | None = None,
        status: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.type = type
        self.code = code if code is not None else type
        self.param = param
        self.status = status if status is not None else ERROR_STATUS.get(type, 400)
        self.headers = headers or {}

    def envelope(self) -> dict[str, Any]:
        """``{"error": {"message", "type", "param", "code"}}``: the one place it is built."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def body(self) -> bytes:
        """The envelope as the bytes of an HTTP answer."""
        return encode_json(self.envelope()).encode()


def invalid(message: str, param: str | None, code: str = "invalid_value") -> OpenResponsesError:
    return OpenResponsesError(message, type="invalid_request", code=code, param=param)
