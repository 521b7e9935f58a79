"""``http_error``: the whole answer replaced by an HTTP error, before any stream starts."""

from __future__ import annotations

import http
import random
from dataclasses import dataclass, field

from ormock.faults.base import HTTP, Fault, Param, register
from ormock.protocol.errors import ERROR_STATUS, OpenResponsesError
from ormock.protocol.reply import RawReply, Reply

__all__ = ["HttpError", "error_type_for"]

# status -> Open Responses error type: the protocol's own table first, then the usual others
_TYPES: dict[int, str] = {}
for _type, _status in ERROR_STATUS.items():
    _TYPES.setdefault(_status, _type)
_TYPES.update({403: "permission_denied", 408: "request_timeout", 422: "invalid_request",
               502: "bad_gateway", 504: "gateway_timeout"})
_RATE_LIMITS = {"requests": 60, "tokens": 200_000}


def error_type_for(status: int) -> str:
    """The Open Responses error ``type`` that goes with an HTTP status."""
    if status in _TYPES:
        return _TYPES[status]
    return "server_error" if status >= 500 else "invalid_request"


def _header_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _duration(seconds: float) -> str:
    """A rate-limit reset time the way OpenAI writes it: ``20ms``, ``1s``, ``1.5s``."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    return f"{seconds:g}s"


@register
@dataclass(frozen=True, kw_only=True)
class HttpError(Fault):
    """An HTTP error instead of the reply, with the Open Responses error envelope.

    The body is ``{"error": {"message", "type", "param", "code"}}`` with all four strings
    (the Vercel AI SDK reads the message only then). Streamed and JSON requests alike.
    ``status``: any HTTP status (default 500). ``retry_after``: seconds, sent as
    ``Retry-After``. ``retry_after_ms``: milliseconds, sent as ``retry-after-ms``.
    ``should_retry``: sent as ``x-should-retry: true|false`` (overrides the status for the
    OpenAI SDKs). ``rate_limit_headers``: with status 429, send ``x-ratelimit-*`` headers
    (requests and tokens: limit, remaining, reset). ``message``, ``type``, ``code``, ``param``:
    the envelope's fields (defaults: a message naming the fault, the type that goes with the
    status, ``code`` = ``rate_limit_exceeded`` for 429 and the type otherwise, ``param`` "").
    ``headers``: more response headers.
    """

    name = "http_error"
    stage = HTTP
    main = "status"
    params = {
        "status": Param("integer", "the HTTP status", minimum=200, maximum=599),
        "retry_after": Param("number", "seconds, sent as Retry-After", minimum=0,
                             nullable=True),
        "retry_after_ms": Param("number", "milliseconds, sent as retry-after-ms", minimum=0,
                                nullable=True),
        "should_retry": Param("boolean", "sent as x-should-retry: true|false", nullable=True),
        "rate_limit_headers": Param("boolean", "with status 429, send x-ratelimit-* headers"),
        "message": Param("string", "the error message", nullable=True),
        "type": Param("string", "the error type (default: the one that goes with the status)",
                      nullable=True),
        "code": Param("string", "the error code (default: rate_limit_exceeded for 429, else "
                      "the type)", nullable=True),
        "param": Param("string", "the request parameter at fault"),
        "headers": Param("headers", "more response headers"),
    }

    status: int = 500
    retry_after: float | None = None
    retry_after_ms: float | None = None
    should_retry: bool | None = None
    rate_limit_headers: bool = True
    message: str | None = None
    type: str | None = None
    code: str | None = None
    param: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    def apply(self, reply: Reply, rng: random.Random) -> RawReply:
        error_type = self.type or error_type_for(self.status)
        code = self.code or ("rate_limit_exceeded" if self.status == 429 else error_type)
        error = OpenResponsesError(self.message or self._message(), type=error_type,
                                   param=self.param, code=code, status=self.status)
        return RawReply(self.status, error.body(), self._headers())

    def _reset(self) -> float:
        if self.retry_after_ms is not None:
            return self.retry_after_ms / 1000
        return self.retry_after if self.retry_after is not None else 1.0

    def _message(self) -> str:
        try:
            phrase = http.HTTPStatus(self.status).phrase
        except ValueError:
            phrase = f"HTTP {self.status}"
        if self.status == 429:
            return (f"Rate limit reached for requests: try again in {_duration(self._reset())} "
                    f"(ormock http_error fault, status {self.status}).")
        return f"{phrase} (ormock http_error fault, status {self.status})."

    def _headers(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.retry_after is not None:
            out["retry-after"] = _header_number(self.retry_after)
        if self.retry_after_ms is not None:
            out["retry-after-ms"] = _header_number(self.retry_after_ms)
        if self.should_retry is not None:
            out["x-should-retry"] = "true" if self.should_retry else "false"
        if self.status == 429 and self.rate_limit_headers:
            reset = _duration(self._reset())
            for kind, limit in _RATE_LIMITS.items():
                out[f"x-ratelimit-limit-{kind}"] = str(limit)
                out[f"x-ratelimit-remaining-{kind}"] = "0" if kind == "requests" else str(limit)
                out[f"x-ratelimit-reset-{kind}"] = reset if kind == "requests" else "0s"
        out.update({k.lower(): v for k, v in self.headers.items()})
        return out
