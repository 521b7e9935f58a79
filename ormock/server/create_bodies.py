"""The create bodies the create route decoded and checked, remembered by their bytes, so that a
repeated request is not decoded and checked again: bounded in count and in bytes (a body's
decoded objects take several times its bytes: ~7x for many small input items)."""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter
from typing import Any

from ormock.engine.bounded import Bounded
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.request import ResponseRequest, parse_request
from ormock.server.body import decode_json

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

    def read(self, raw: bytes) -> tuple[Any, ResponseRequest | None]:
        """A body decoded (``decode_json``: its 400 raised) and checked (``parse_request``):
        as kept when it came before, else read now and kept when valid. An invalid one's
        request is None: it is left to the engine, which journals it with its error."""
        found = self._kept.peek(raw)
        if found is not None:
            return found[0], found[1]
        body = decode_json(raw)
        try:
            request = parse_request(body)
        except OpenResponsesError:
            return body, None
        size = len(raw)
        if size <= BODY:
            self._kept[raw] = (body, request, size)
        return body, request

    def __len__(self) -> int:
        return len(self._kept)

    def __iter__(self) -> Iterator[bytes]:
        """The bodies kept, oldest first."""
        return iter(self._kept)

    @property
    def size(self) -> int:
        """The bytes of the bodies kept."""
        return self._kept.bytes
