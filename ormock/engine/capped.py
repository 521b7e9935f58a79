"""Lists that keep only their newest items, capped in count and in bytes: the journal, the
errors seen inside the server. Nothing a client sends can make one grow without bound."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["Capped"]

T = TypeVar("T")


class Capped(list[T]):
    """A list of the newest items: past ``limit`` items the oldest half goes, past
    ``max_bytes`` (by ``size``) the oldest go until a quarter of the room is free again. The
    newest item always stays, however large. ``dropped`` counts what went."""

    def __init__(self, limit: int, max_bytes: int, size: Callable[[T], int]) -> None:
        super().__init__()
        if limit < 1 or max_bytes < 1:
            raise ValueError("a capped list needs room for one item")
        self.limit = limit
        self.max_bytes = max_bytes
        self.size = size
        self.bytes = 0
        self.dropped = 0

    def append(self, item: T) -> None:
        super().append(item)
        self.bytes += self.size(item)
        if len(self) > self.limit or self.bytes > self.max_bytes:
            self._trim()

    def _trim(self) -> None:
        count = len(self)
        keep_items = max(self.limit // 2 if count > self.limit else count, 1)
        keep_bytes = self.max_bytes * 3 // 4 if self.bytes > self.max_bytes else self.bytes
        # the oldest past ``keep_items`` go at once (their sizes summed together), then one
        # at a time while the bytes are past ``keep_bytes``; the newest always stays
        cut = count - keep_items
        freed = self._sizes(cut)
        while cut < count - 1 and self.bytes - freed > keep_bytes:
            freed += self.size(self[cut])
            cut += 1
        del self[:cut]
        self.bytes -= freed
        self.dropped += cut

    def _sizes(self, count: int) -> int:
        """The size of the ``count`` oldest items, together."""
        return sum(map(self.size, self[:count])) if count else 0

    def clear(self) -> None:
        super().clear()
        self.bytes = 0
