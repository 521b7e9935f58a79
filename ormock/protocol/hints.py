"""Pieces of error messages written once: the near-miss hint every "unknown name" error ends
with, and a value quoted short."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from typing import Any

__all__ = ["short", "suggest"]


def suggest(word: str, options: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when ``word`` is close to one of ``options``, else ``""``."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def short(value: Any, size: int = 60) -> str:
    """``value`` quoted on one line (a string as ``repr`` quotes it, anything else as JSON), cut
    to about ``size`` characters with ``...``."""
    if isinstance(value, str):
        return repr(value if len(value) <= size else value[: size - 3] + "...")
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= size else text[: size - 3] + "..."
