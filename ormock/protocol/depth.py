"""How deeply a JSON body may nest: ``MAX_DEPTH`` levels, whatever reads it (the create route,
the admin API, WebSocket messages, cassette replay). Past any real request, and far inside
what the code that later walks, encodes or decodes a kept body (the journal on a shared store,
the verdict) can take under Python's recursion limit, which the decoder alone only just
respects."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_DEPTH", "loads", "nests_deeper"]

MAX_DEPTH = 256  # levels of nested objects and arrays


def nests_deeper(raw: bytes | str, value: Any) -> bool:
    """Whether ``value`` (``raw`` decoded) nests deeper than ``MAX_DEPTH``: walked (without
    recursion) only when ``raw`` has that many brackets at all."""
    brackets = (raw.count(b"[") + raw.count(b"{") if isinstance(raw, bytes)
                else raw.count("[") + raw.count("{"))
    if brackets <= MAX_DEPTH:
        return False
    level: list[Any] = [value]
    for _ in range(MAX_DEPTH):
        level = [child for node in level
                 for child in (node.values() if isinstance(node, dict) else node)
                 if isinstance(child, (dict, list))]
        if not level:
            return False
    return True


def loads(raw: bytes | str) -> Any:
    """``json.loads``, for what is kept as JSON when it is JSON and as text when not (a
    cassette's request or WebSocket frame, a recorded body, the recorder's journal): JSON that
    nests deeper than ``MAX_DEPTH`` (or too deeply for the decoder) is a ``ValueError`` too,
    as invalid JSON is, so every such reader takes it for text alike."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise ValueError(f"JSON nested too deeply to read (past {MAX_DEPTH} levels)") from None
    if isinstance(value, (dict, list)) and nests_deeper(raw, value):
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    return value
