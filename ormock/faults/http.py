"""``http_error``: the whole answer replaced by an HTTP error, before any stream starts."""

from __future__ import annotations

import http
import random
from dataclasses import dataclass, field

from ormock.faults.base import HTTP, Fault, Param, register
from ormock.protocol.profile import OPENRESPONSES
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.sse import encode_json

__all__ = ["HttpError", "error_type_for"]

_RATE_LIMITS = {"requests": 60, "tokens": 200_000}


def error_type_for(status: int) -> str:
    """The Open Responses error ``type`` that goes with an HTTP status."""
    return OPENRESPONSES.status_error(status)[0]


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

    The body is ``{"error": {"message", "type", "param", "code"}}``, spelled as the provider
    the reply plays sends it (``Profile.status_error``): under the Open Responses profile all
    four are strings (the Vercel AI SDK reads the message only then), the type that goes with
    the status; under ``openai`` OpenAI's own (a 429 is ``type: requests``, ``code:
    rate_limit_exceeded``, ``param: null``). Streamed and JSON requests alike.
    ``status``: any HTTP status (default 500). ``retry_after``: seconds, sent as
    ``Retry-After``. ``retry_after_ms``: milliseconds, sent as ``retry-after-ms``.
    ``should_retry``: sent as ``x-should-retry: true|false`` (overrides the status for the
    OpenAI SDKs). ``rate_limit_headers``: with status 429, send ``x-ratelimit-*`` headers
    (requests and tokens: limit, remaining, reset). ``message``, ``type``, ``code``, ``param``:
    the envelope's fields (defaults: a message naming the fault, and the profile's type, code
    and param for the status).
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
        "type": Param("string", "the error type (default: the one the profile sends with the "
                      "status)", nullable=True),
        "code": Param("string", "the error code (default: the one the profile sends with the "
                      "status)", nullable=True),
        "param": Param("string", "the request parameter at fault (default: none, as the "
                       "profile spells it)", nullable=True),
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
    param: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def apply(self, reply: Reply, rng: random.Random) -> RawReply:
        profile = reply.provider
        error_type, code = profile.status_error(self.status)
        error = {"message": self.message or self._message(), "type": self.type or error_type,
                 "param": self.param if self.param is not None else profile.error_param,
                 "code": self.code if self.code is not None else code}
        return RawReply(self.status, encode_json({"error": error}).encode(), self._headers())

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
