"""The create bodies the create route decoded and checked, remembered by their bytes, so that a
repeated request is not decoded and checked again: bounded in count and in bytes (a body's
decoded objects take several times its bytes: ~7x for many small input items)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ormock.protocol.request import ResponseRequest

__all__ = ["ParsedBodies"]

KEPT, BYTES, BODY = 512, 1 << 20, 64 * 1024  # bodies at most, their bytes in all, each's


class ParsedBodies(OrderedDict[bytes, tuple[Any, ResponseRequest]]):
    """Valid bodies' decoded JSON and parsed request, by their bytes, the oldest dropped past
    ``KEPT`` bodies or ``BYTES`` bytes; none of over ``BODY`` bytes kept. A dict: ``get`` is
    its own (C, on every create)."""

    def __init__(self) -> None:
        super().__init__()
        self.size = 0  # the bytes of the bodies kept

    def keep(self, raw: bytes, body: Any, request: ResponseRequest) -> None:
        size = len(raw)
        if size > BODY or raw in self:
            return
        self[raw] = (body, request)
        total = self.size + size
        while len(self) > KEPT or total > BYTES:
            total -= len(self.popitem(False)[0])  # the oldest (positional: no keyword dict)
        self.size = total
