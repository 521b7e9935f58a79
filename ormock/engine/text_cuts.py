"""A reply text's token count, delta count and delta frames, cut at its spaces when it is plain.

What a compiled reply (``ormock.engine.compiled``) needs of its text costs more through the
tokenizer's and the chunker's regular expressions than the rest of the fill. Most texts a
mock sends are plain: ASCII, printable, words one space apart, no space at either end, nothing
JSON escapes (``plain``). No token, delta or escape crosses a space of such a text, so:

* its tokens (``count_tokens``) are those of its first word plus, for each later word, those of
  the word with its leading space, remembered per word (``tokens``);
* its ``words`` deltas are its first word and each later word with its leading space, so there
  are as many as words (``deltas``);
* each delta's JSON string is the delta in quotes, so a run of delta frames is one ``%``-format
  per frame, applied at C speed (``DeltaFormat``), byte for byte ``delta_frames``'s.

Any other text goes through ``count_tokens``, the chunker and ``delta_frames``.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from ormock.protocol.sse import delta_frames
from ormock.protocol.tokens import count_tokens

__all__ = ["DeltaFormat", "plain", "tokens", "usage_format"]

_WORDS = 8192  # words whose counts are remembered, then forgotten all at once


class _Counts(dict[str, int]):
    """``count_tokens`` of a word (after a space when ``spaced``), counted when first asked."""

    def __init__(self, spaced: bool) -> None:
        super().__init__()
        self.spaced = spaced

    def __missing__(self, word: str) -> int:
        if len(self) >= _WORDS:
            self.clear()
        value = self[word] = count_tokens(" " + word if self.spaced else word)
        return value


_FIRST, _LATER = _Counts(False), _Counts(True)


def plain(text: str) -> bool:
    """ASCII printable, words one space apart, no space at either end, no ``"`` or ``\\``."""
    return (text.isascii() and text.isprintable() and text[:1] != " " and text[-1:] != " "
            and "  " not in text and '"' not in text and "\\" not in text and text != "")


def tokens(words: list[str]) -> int:
    """``count_tokens`` of a plain text, split at its spaces."""
    return _FIRST[words[0]] + sum(map(_LATER.__getitem__, islice(words, 1, None)))


def usage_format() -> bytes:
    """The JSON of ``usage_object(input, output)`` as ``%`` of (input, output, total)."""
    from ormock.protocol.response import usage_object
    from ormock.protocol.sse import encode_json

    marks = (1_234_567_891, 2_345_678_912, 1_234_567_891 + 2_345_678_912)
    text = encode_json(usage_object(marks[0], marks[1])).replace("%", "%%")
    for mark in marks:
        text = text.replace(str(mark), "%d")
    fmt = text.encode()
    assert fmt % (3, 4, 7) == encode_json(usage_object(3, 4)).encode()
    return fmt


class DeltaFormat:
    """``delta_frames`` of a plain text's ``words`` deltas, one ``%``-format a frame."""

    __slots__ = ("first", "later")

    _ID, _NUMBER = "@ormock-delta-id@", 987_654_321

    def __init__(self, kind: str, output_index: int, content_index: int) -> None:
        frame = delta_frames(kind, self._NUMBER, self._ID, output_index, content_index,
                             ["@ormock-delta-text@"])[0].decode().replace("%", "%%")
        frame = frame.replace(str(self._NUMBER), "%d", 1).replace(self._ID, "{id}", 1)
        self.first = frame.replace('"@ormock-delta-text@"', '"%s"', 1)
        self.later = frame.replace('"@ormock-delta-text@"', '" %s"', 1)

    def frames(self, first: int, item_id: str, words: list[str]) -> bytes:
        """The frames of a plain text's deltas (``words``: it split at its spaces), numbered
        from ``first``, of the item ``item_id``."""
        item_id = item_id.replace("%", "%%")  # never in an id drawn, escaped all the same
        head = self.first.replace("{id}", item_id) % (first, words[0])
        later: Any = self.later.replace("{id}", item_id).__mod__
        rest = "".join(map(later, zip(range(first + 1, first + len(words)),
                                      islice(words, 1, None), strict=True)))
        return (head + rest).encode()
