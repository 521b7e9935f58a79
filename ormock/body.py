"""Reading a request body with a size limit: ``POST /v1/responses`` and the admin API share it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .protocol.errors import OpenResponsesError

__all__ = ["DEFAULT_MAX_BODY", "read_body", "too_large"]

DEFAULT_MAX_BODY = 16 * 1024 * 1024

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]


async def read_body(receive: Receive, declared: str, limit: int) -> bytes:
    """The whole body, or 413 ``request_too_large`` once it (or its ``declared``
    Content-Length) passes ``limit`` bytes; nothing past the limit is kept."""
    if declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def too_large(limit: int) -> OpenResponsesError:
    return OpenResponsesError(
        f"The request body is larger than this server's limit of {limit} bytes; "
        "send less input, or start the server with a larger --max-body.",
        type="request_too_large",
        code="request_too_large",
        param="body",
        status=413,
    )
