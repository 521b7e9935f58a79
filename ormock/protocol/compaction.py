"""The content of a compaction item: what ``POST /v1/responses/compact`` packs into its
``encrypted_content``, and what a later request unpacks to count the item in its context.

The content is opaque to clients (they pass the item back as it is), as a provider's is; ormock's
is URL-safe base64 of a compact JSON object, ``{"format": "ormock.compaction/1", "items": [[kind,
text], ...]}``: one entry for each item the compaction stands for, its kind (``assistant``,
``function_call:NAME``, ...) and its text. A content ormock did not write (a real provider's,
replayed from a cassette) is counted as the string it is.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence

from ormock.protocol.tokens import count_tokens

__all__ = ["FORMAT", "content_tokens", "pack", "unpack"]

FORMAT = "ormock.compaction/1"


def pack(entries: Sequence[tuple[str, str]]) -> str:
    """The ``encrypted_content`` of a compaction standing for ``entries`` (kind, text)."""
    data = {"format": FORMAT, "items": [[kind, text] for kind, text in entries]}
    raw = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii")


def unpack(content: str) -> list[tuple[str, str]] | None:
    """The entries of a content ``pack`` wrote, or None for any other string."""
    try:
        raw = base64.b64decode(content.encode("ascii"), altchars=b"-_", validate=True)
        data = json.loads(raw)
    except (UnicodeError, binascii.Error, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    items = data.get("items")
    if not isinstance(items, list):
        return None
    entries: list[tuple[str, str]] = []
    for entry in items:
        if not (isinstance(entry, list) and len(entry) == 2
                and all(isinstance(part, str) for part in entry)):
            return None
        entries.append((entry[0], entry[1]))
    return entries


def content_tokens(content: str) -> int:
    """The tokens a compaction item of this content stands for: those of the texts it packs,
    each counted as the item it came from was; a foreign content, the tokens of the string."""
    entries = unpack(content)
    if entries is None:
        return count_tokens(content)
    return sum(count_tokens(text) for _, text in entries)
