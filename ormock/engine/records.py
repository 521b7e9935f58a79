"""Frozen dataclasses made without their ``__init__``, on the paths every request takes.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (its own
``__setattr__`` refuses): about 1,700 instructions a field on CPython 3.11, so a ``Reply`` (eleven
fields) costs more to make than most of what a new content's reply does. ``made`` writes the
fields into the instance's ``__dict__`` at once: the same instance, at a tenth of the cost. The
caller gives every field ``__init__`` sets (defaults included); tests/test_records.py holds
each use to what ``__init__`` makes.
"""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["made"]

T = TypeVar("T")


def made(cls: type[T], /, **fields: Any) -> T:
    """An instance of the frozen dataclass ``cls`` holding ``fields`` (every field its
    ``__init__`` sets, in order, defaults included; none with a ``__post_init__`` to run), made
    without ``__init__``."""
    new = object.__new__(cls)
    new.__dict__.update(fields)
    return new
