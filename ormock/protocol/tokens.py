"""Token counting and delta chunking.

One tokenizer serves both, so usage counts always add up with what was streamed: a token is a
word with its leading space, a run of punctuation, or a run of white space.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["Chunker", "chunker", "count_tokens", "split_tokens"]

_TOKEN = re.compile(r" ?[^\W_]+| ?[^\w\s]+|_+|\s+", re.UNICODE)
# The same tokens for ASCII text, with the classes spelled out (``\s`` of an ASCII text is these
# ten characters, ``[^\W_]`` its letters and digits), so that most texts are matched by a set
# test per character instead of a Unicode lookup; tests/test_tokens.py holds the two equal.
_SPACE = "\t\n\x0b\x0c\r\x1c-\x1f "
_ASCII_TOKEN = re.compile(
    rf" ?[A-Za-z0-9]+| ?[^A-Za-z0-9_{_SPACE}]+|_+|[{_SPACE}]+")

Chunker = Callable[[str], list[str]]


def split_tokens(text: str) -> list[str]:
    """Split text into tokens whose concatenation is exactly the text."""
    return (_ASCII_TOKEN if text.isascii() else _TOKEN).findall(text)


def count_tokens(text: str) -> int:
    return len((_ASCII_TOKEN if text.isascii() else _TOKEN).findall(text))


def _groups(pieces: list[str], size: int) -> list[str]:
    return ["".join(pieces[i : i + size]) for i in range(0, len(pieces), size)]


def chunker(rule: str | None = None) -> Chunker:
    """Return the function that cuts a text into deltas.

    Rules: ``words`` (default: one word with its leading white space per delta),
    ``chars:N`` (N characters), ``tokens:N`` (N tokens), ``whole`` (one delta).
    """
    rule = (rule or "words").strip()
    name, _, arg = rule.partition(":")
    if name == "whole" and not arg:
        return lambda text: [text] if text else []
    if name == "words" and not arg:
        return _words
    if name in ("chars", "tokens"):
        try:
            size = int(arg)
        except ValueError:
            size = 0
        if size < 1:
            raise ValueError(f"chunking {rule!r}: {name} needs a positive size, e.g. '{name}:4'")
        if name == "chars":
            return lambda text: [text[i : i + size] for i in range(0, len(text), size)]
        return lambda text: _groups(split_tokens(text), size)
    raise ValueError(
        f"unknown chunking {rule!r}: use 'words', 'whole', 'chars:N' or 'tokens:N'"
    )


_WORD = re.compile(r"\s*\S+|\s+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)
