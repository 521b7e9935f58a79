"""Reasoning as OpenAI keeps it: an opaque ``encrypted_content`` that comes back.

A request with ``include: ["reasoning.encrypted_content"]`` gets each reasoning item's summary
and content sealed into its ``encrypted_content`` (``seal``): ``ormock:v1:`` then URL-safe base64
of the compact JSON ``{"summary": [...], "content": [...]}`` and of its HMAC-SHA256 tag under a
key the server's seed gives (``reasoning_key``). It is not secret, only authenticated: sent back
as input (``restore``), the item's summary and content are restored from it, for the context and
its tokens, and a changed or foreign ``ormock:`` value is refused (400
``invalid_encrypted_content``, as OpenAI refuses content it cannot verify). A value that is not
ormock's (a scenario's or a recording's own) is the provider's opaque content, kept as sent.

``store: false`` keeps nothing, so a reasoning item sent back with its id but without its
encrypted content can only be one the context holds (a ``previous_response_id`` chain, a
WebSocket connection's turns); any other is a 404, in OpenAI's words.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Collection, Sequence
from functools import cache

from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.items import reasoning_text_part, summary_text_part
from ormock.protocol.types import Json

__all__ = ["INCLUDE_ENCRYPTED", "PREFIX", "reasoning_key", "restore", "seal", "unseal"]

INCLUDE_ENCRYPTED = "reasoning.encrypted_content"
PREFIX = "ormock:v1:"
_TAG = 16  # bytes of the HMAC kept


@cache
def reasoning_key(seed: int) -> bytes:
    """The key a server with this seed seals reasoning with."""
    return hashlib.sha256(f"ormock reasoning key:{seed}".encode()).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)


def seal(key: bytes, summary: Sequence[str], content: Sequence[str]) -> str:
    """A reasoning item's ``encrypted_content``: its summary and content texts, authenticated."""
    payload = json.dumps({"summary": list(summary), "content": list(content)},
                         separators=(",", ":"), ensure_ascii=False).encode()
    tag = hmac.new(key, payload, hashlib.sha256).digest()[:_TAG]
    return f"{PREFIX}{_b64(payload)}:{_b64(tag)}"


def unseal(key: bytes, text: str) -> tuple[list[str], list[str]]:
    """The summary and content texts ``seal`` put in ``text``; ``ValueError`` saying why when
    it is not such a value, or was changed."""
    if not text.startswith(PREFIX):
        raise ValueError("it is not ormock's")
    body, _, tag = text[len(PREFIX):].partition(":")
    try:
        payload, wanted = _unb64(body), _unb64(tag)
    except (binascii.Error, ValueError):
        raise ValueError("it is not valid base64") from None
    if not hmac.compare_digest(hmac.new(key, payload, hashlib.sha256).digest()[:_TAG], wanted):
        raise ValueError("its tag does not match: it was changed, or sealed by another server")
    data = json.loads(payload)
    return [str(t) for t in data["summary"]], [str(t) for t in data["content"]]


def restore(items: Sequence[Json], key: bytes, *, stored: bool, known: Collection[object],
            param: str = "input") -> list[Json] | None:
    """``items`` (a request's ``input``) with each reasoning item that carries ormock's
    ``encrypted_content`` restored from it, or None when none does. ``stored``: the request's
    ``store``; unstored, a reasoning item with an id the context does not hold (``known``) and
    no encrypted content is a 404."""
    restored: list[Json] | None = None
    for index, item in enumerate(items):
        if item.get("type") != "reasoning":
            continue
        sealed = item.get("encrypted_content")
        if isinstance(sealed, str) and sealed.startswith(PREFIX):
            try:
                summary, content = unseal(key, sealed)
            except ValueError as error:
                ident = item.get("id")  # optional: an item without one is named by its place
                what = f"for item {ident!r}" if isinstance(ident, str) else \
                    f"of the reasoning item {param}[{index}]"
                raise OpenResponsesError(
                    f"The encrypted content {what} could not be verified: {error}. Pass back "
                    "the reasoning item this server returned, as it is.",
                    code="invalid_encrypted_content",
                    param=f"{param}[{index}].encrypted_content") from None
            if restored is None:
                restored = list(items)
            restored[index] = {**item, "summary": [summary_text_part(t) for t in summary],
                               **({"content": [reasoning_text_part(t) for t in content]}
                                  if content else {})}
        elif not stored and sealed is None and isinstance(item.get("id"), str) \
                and item["id"] not in known:
            raise OpenResponsesError(
                f"Item with id {item['id']!r} not found. Items are not persisted when `store` "
                "is set to false. Try again with `store` set to true, or remove this item from "
                "your input.", type="not_found", code="item_not_found",
                param=f"{param}[{index}].id")
    return restored
