"""Frozen dataclasses made without their ``__init__``, on the paths every request takes.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (its own
``__setattr__`` refuses). ``made`` writes the fields into the instance's ``__dict__`` at once
(the way ``render`` makes its frames and wires, and the stream cache its replies): the same
instance, made with less work, because every create makes several (``bench/README.md``, "Past
findings that explain the design"). The caller gives every field ``__init__`` sets (defaults
included); tests/test_frozen.py holds each use to what ``__init__`` makes.
"""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["made"]

T = TypeVar("T")
_new, _set = object.__new__, object.__setattr__


def made(cls: type[T], /, **fields: Any) -> T:
    """An instance of the frozen dataclass ``cls`` holding ``fields`` (every field its
    ``__init__`` sets, in order, defaults included; none with a ``__post_init__`` to run), made
    without ``__init__``."""
    new = _new(cls)
    _set(new, "__dict__", fields)  # the call's own dict of keywords: nobody else holds it
    return new
