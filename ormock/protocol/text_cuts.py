"""A reply text's token count, delta count and delta frames, cut at its spaces when it is plain.

A compiled reply (``ormock.engine.compiled``) needs its text's tokens, deltas and frames, and
through the tokenizer's and the chunker's regular expressions they were most of the fill's work
(``bench/README.md``, "Past findings that explain the design"). Most texts a mock sends are
plain: ASCII, printable, words one space apart, no space at either end, nothing
JSON escapes (``plain``). No token, delta or escape crosses a space of such a text, so:

* its tokens (``count_tokens``) are those of its first word plus, for each later word, those of
  the word with its leading space, remembered per word (``tokens``);
* its ``words`` deltas are its first word and each later word with its leading space, so there
  are as many as words (``deltas``);
* each delta's JSON string is the delta in quotes, so a run of delta frames is constant pieces
  around the sequence numbers and the words, joined once (``DeltaFormat``), byte for byte
  ``delta_frames``'s.

A text may come cut already: the embedded default's prose knows its words and its tokens
(``TextPart.cut``, ``Prose.cut_paragraph``), and a fill takes them as they are.

Any other text goes through ``count_tokens``, the chunker and ``delta_frames``.
"""

from __future__ import annotations

from itertools import islice

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
        if word.isalnum() and word.isascii():  # letters and digits, after a space or not
            value = 1
        elif word[-1:] == "." and word[:-1].isalnum() and word.isascii():  # and a full stop
            value = 2
        else:
            value = count_tokens(" " + word if self.spaced else word)
        self[word] = value
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


# the text of each sequence number a run of deltas may start from, made once
_NUMBERS = tuple(map(str, range(4096)))


class DeltaFormat:
    """``delta_frames`` of a plain text's ``words`` deltas, joined from constant pieces: each
    frame is the same text but for its sequence number and its word, so the frames of a run
    are one list of those pieces and the numbers and words, filled by slice assignments and
    joined once (a ``%``-format a frame parsed its ~170 characters for every delta)."""

    __slots__ = ("end", "head", "middle", "next", "shape")

    _ID, _NUMBER, _TEXT = "@ormock-delta-id@", 987_654_321, "@ormock-delta-text@"

    def __init__(self, kind: str, output_index: int, content_index: int) -> None:
        frame = delta_frames(kind, self._NUMBER, self._ID, output_index, content_index,
                             [self._TEXT])[0].decode()
        # head, the number, middle (the item id in it), the text in quotes, end
        head, rest = frame.split(str(self._NUMBER))
        middle, end = rest.split(f'"{self._TEXT}"')
        assert self._ID in middle
        assert self._ID not in head + end
        self.head, self.middle, self.end = head, middle, '"' + end
        self.next = self.end + head  # a frame's end, then the next one's head
        self.shape = (kind, output_index, content_index)

    def frames(self, first: int, item_id: str, words: list[str]) -> bytes:
        """The frames of a plain text's deltas (``words``: it split at its spaces), numbered
        from ``first``, of the item ``item_id``."""
        if '"' in item_id or "\\" in item_id or not (item_id.isascii()
                                                      and item_id.isprintable()):
            kind, output_index, content_index = self.shape  # JSON escapes it: never a drawn id
            deltas = [*words[:1], *(" " + word for word in islice(words, 1, None))]
            return b"".join(delta_frames(kind, first, item_id, output_index, content_index,
                                         deltas))
        count = len(words)
        if not count:
            return b""
        middle = self.middle.replace(self._ID, item_id)
        pieces = [self.next] * (4 * count)  # number, middle, word, end and next head: a frame
        end = first + count
        pieces[0::4] = _NUMBERS[first:end] if end <= len(_NUMBERS) else \
            map(str, range(first, end))
        pieces[1::4] = [middle + '" '] * count  # a later word's delta starts with its space
        pieces[1] = middle + '"'
        pieces[2::4] = words
        pieces[-1] = self.end
        return (self.head + "".join(pieces)).encode()
