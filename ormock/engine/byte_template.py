"""Bytes with slots: a reply's bytes, made once by a build, cut where its per-reply values stand
into a ``%``-format that a later reply fills with its own.

The one way a reply's bytes are reused. A compiled template (``ormock.engine.compiled``: a
reply built once per shape, sentinels standing for its ids, timestamps, text, usage and the
sequence numbers after its deltas) and the stream cache (``ormock.engine.cache``: a content's
reply, cut at the ids it drew and its two timestamps) both cut a build's output here and
fill it here. Neither spells a byte of the reply itself: every byte outside a slot is the
build's, and a slot holds a value spelled as the build spells it (the bytes of an id, a text's
or a usage's JSON; a number in decimal). Both lay a fill's values out alike: the ids in the
order the build drew them, then created_at and completed_at, then what the template's maker
adds after them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

__all__ = ["ByteTemplate"]

# where a slot's value is, and how it is spelled: a piece of format with one conversion
Slot = tuple[bytes, int]


def _picker(order: list[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """What picks the values of slots standing in ``order`` from a fill's values, as a tuple
    (``itemgetter`` gives a tuple only for two indexes and more)."""
    if len(order) > 1:
        return itemgetter(*order)
    if order:
        only = order[0]
        return lambda values: (values[only],)
    return lambda values: ()


class ByteTemplate:
    """``fmt % pick(values)``: bytes whose every ``%`` is a slot or an escaped ``%%``. A plain
    class with slots, made once per template and read on every fill; treated as immutable."""

    __slots__ = ("fmt", "pick")

    def __init__(self, fmt: bytes, pick: Callable[[Sequence[Any]], tuple[Any, ...]]) -> None:
        self.fmt, self.pick = fmt, pick

    def __repr__(self) -> str:
        return f"ByteTemplate({self.fmt!r})"

    def fill(self, values: Sequence[Any]) -> bytes:
        """The bytes with each slot's value in it."""
        return self.fmt % self.pick(values)

    @staticmethod
    def cut(raw: bytes, marks: re.Pattern[bytes],
            slot: Callable[[re.Match[bytes]], Slot]) -> ByteTemplate:
        """``raw`` cut at each match of ``marks``, left to right: ``slot(match)`` gives the
        slot's spelling (format bytes with one ``%s`` or ``%d``, and any literal bytes of the
        match kept around it) and the index of its value; every other byte is kept as it is."""
        pieces: list[bytes] = []
        order: list[int] = []
        at = 0
        for match in marks.finditer(raw):
            spelling, index = slot(match)
            pieces += [raw[at:match.start()].replace(b"%", b"%%"), spelling]
            order.append(index)
            at = match.end()
        pieces.append(raw[at:].replace(b"%", b"%%"))
        return ByteTemplate(b"".join(pieces), _picker(order))

    @staticmethod
    def at_values(raw: bytes, values: Sequence[bytes],
                  spellings: Sequence[bytes]) -> ByteTemplate:
        """``raw`` cut at every occurrence of each of ``values``: the n-th's a slot spelled
        ``spellings[n]`` filled from the n-th value. Where two could match at one place the
        longer wins; a value given twice is the first one's slot."""
        table: dict[bytes, Slot] = {}
        for index, (value, spelling) in enumerate(zip(values, spellings, strict=True)):
            if value:
                table.setdefault(value, (spelling, index))
        if not table:
            return ByteTemplate(raw.replace(b"%", b"%%"), _picker([]))
        marks = re.compile(b"|".join(re.escape(value)
                                     for value in sorted(table, key=len, reverse=True)))
        return ByteTemplate.cut(raw, marks, lambda match: table[match.group()])
