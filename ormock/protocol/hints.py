"""The near-miss hint every "unknown name" error ends with, written once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["suggest"]


def suggest(word: str, options: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when ``word`` is close to one of ``options``, else ``""``."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
