"""The create bodies the create route decoded and checked, remembered by their bytes, so that a
repeated request is not decoded and checked again: bounded in count and in bytes (a body's
decoded objects take several times its bytes: ~7x for many small input items)."""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter
from typing import Any

from ormock.engine.bounded import Bounded
from ormock.protocol.request import ResponseRequest

__all__ = ["ParsedBodies"]

KEPT, BYTES, BODY = 512, 1 << 20, 64 * 1024  # bodies at most, their bytes in all, each's


class ParsedBodies:
    """Valid bodies' decoded JSON and parsed request, by their bytes, the oldest kept dropped
    past ``KEPT`` bodies or ``BYTES`` bytes; none of over ``BODY`` bytes kept. Neither a read
    nor a repeat keeps a body longer: bodies go in the order they first came."""

    def __init__(self) -> None:
        # raw -> (its JSON, its request, its bytes)
        self._kept: Bounded[bytes, tuple[Any, ResponseRequest, int]] = Bounded(
            KEPT, BYTES, itemgetter(2))

    def get(self, raw: bytes) -> tuple[Any, ResponseRequest] | None:
        found = self._kept.peek(raw)
        return None if found is None else (found[0], found[1])

    def keep(self, raw: bytes, body: Any, request: ResponseRequest) -> None:
        size = len(raw)
        if size <= BODY and raw not in self._kept:
            self._kept[raw] = (body, request, size)

    def __len__(self) -> int:
        return len(self._kept)

    def __iter__(self) -> Iterator[bytes]:
        """The bodies kept, oldest first."""
        return iter(self._kept)

    @property
    def size(self) -> int:
        """The bytes of the bodies kept."""
        return self._kept.bytes
