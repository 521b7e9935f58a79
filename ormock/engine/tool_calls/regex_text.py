"""A text that a regular expression matches whole, drawn: what a custom tool whose grammar is
a regex gets as its input (and a Lark grammar's regex terminals).

The pattern is read into literals, classes (``[a-z]``, ``\\d``, ``.``), groups, alternations and
repeats; anchors match nothing. The text is checked with ``re.fullmatch``; what this reader
does not take (backreferences, lookarounds, repeats that may make a text longer than
``MOST_CHARACTERS``, groups nested past Python's recursion limit) is a ``ValueError`` naming
it, so that a request's grammar never holds the server."""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MOST_CHARACTERS", "text_matching"]

# the most steps (characters, and repeats of empty groups) a text may take: a pattern whose
# repeats may go past it (``a{999999999}``) is refused before anything is made
MOST_CHARACTERS = 100_000

Draw = Callable[[int], int]  # a number below the given one

# the characters a class may give, the plain ones first
_PRINTABLE = string.ascii_lowercase + string.digits + string.ascii_uppercase + " _-.,:/"
_CLASSES = {
    "d": string.digits,
    "w": string.ascii_letters + string.digits + "_",
    "s": " ",
    "D": string.ascii_letters,
    "W": " -.,",
    "S": string.ascii_letters + string.digits,
}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "0": "\0"}


@dataclass
class _Reader:
    pattern: str
    at: int = 0

    def peek(self) -> str:
        return self.pattern[self.at] if self.at < len(self.pattern) else ""

    def take(self) -> str:
        char = self.peek()
        self.at += 1
        return char


# ("alt", [seqs]) | ("seq", [nodes]) | ("chars", str) | ("rep", node, low, high)
Node = tuple[Any, ...]


def _alternation(reader: _Reader) -> Node:
    options = [_sequence(reader)]
    while reader.peek() == "|":
        reader.take()
        options.append(_sequence(reader))
    return ("alt", options)


def _sequence(reader: _Reader) -> Node:
    nodes: list[Node] = []
    while reader.peek() not in ("", "|", ")"):
        atom = _atom(reader)
        if atom is not None:
            nodes.append(_repeat(reader, atom))
    return ("seq", nodes)


def _repeat(reader: _Reader, atom: Node) -> Node:
    char = reader.peek()
    if char and char in "*+?":
        reader.take()
        low, high = {"*": (0, 3), "+": (1, 3), "?": (0, 1)}[char]
    elif char == "{" and re.match(r"\{\d*(,\d*)?\}", reader.pattern[reader.at:]):
        found = re.match(r"\{(\d*)(,?)(\d*)\}", reader.pattern[reader.at:])
        assert found is not None
        reader.at += found.end()
        low = int(found.group(1) or 0)
        high = int(found.group(3)) if found.group(3) else (low + 3 if found.group(2) else low)
    else:
        return atom
    if reader.peek() in ("?", "+"):  # lazy or possessive: the same texts
        reader.take()
    return ("rep", atom, low, high)


def _atom(reader: _Reader) -> Node | None:
    char = reader.take()
    if char in "^$":
        return None
    if char == ".":
        return ("chars", string.ascii_lowercase)
    if char == "[":
        return ("chars", _class(reader))
    if char == "(":
        flags = re.match(r"\?[aiLmsux-]+\)", reader.pattern[reader.at:])
        if flags:  # inline flags: they change no text this reader makes
            reader.at += flags.end()
            return None
        if reader.pattern.startswith("?", reader.at):
            _group_prefix(reader)
        inner = _alternation(reader)
        if reader.take() != ")":
            raise ValueError("an unclosed group")
        return inner
    if char == "\\":
        return _escape(reader)
    return ("chars", char)


def _group_prefix(reader: _Reader) -> None:
    rest = reader.pattern[reader.at:]
    for prefix in ("?:", "?>"):
        if rest.startswith(prefix):
            reader.at += len(prefix)
            return
    named = re.match(r"\?P?<([A-Za-z_]\w*)>|\?[aiLmsux-]+:", rest)
    if named:  # a named group, or a group with flags of its own
        reader.at += named.end()
        return
    raise ValueError(f"the group '({rest[:4]}' (lookarounds and conditionals are not made)")


def _escape(reader: _Reader) -> Node | None:
    char = reader.take()
    if not char:
        raise ValueError("a pattern that ends with a backslash")
    if char in _CLASSES:
        return ("chars", _CLASSES[char])
    if char in "bBAZz":
        return None
    if char.isdigit() and char != "0":
        raise ValueError(f"the backreference '\\{char}'")
    if char in _ESCAPES:
        return ("chars", _ESCAPES[char])
    if char in "xu":
        size = 2 if char == "x" else 4
        code = reader.pattern[reader.at:reader.at + size]
        reader.at += size
        return ("chars", chr(int(code, 16)))
    return ("chars", char)


def _class(reader: _Reader) -> str:
    negated = reader.peek() == "^"
    if negated:
        reader.take()
    members: set[str] = set()
    first = True
    while True:
        char = reader.take()
        if char == "":
            raise ValueError("an unclosed character class")
        if char == "]" and not first:
            break
        first = False
        if char == "\\":
            escaped = reader.take()
            chars = _CLASSES.get(escaped) or _ESCAPES.get(escaped) or escaped
            members.update(chars)
            continue
        if reader.peek() == "-" and reader.pattern[reader.at + 1:reader.at + 2] not in ("]", ""):
            reader.take()
            end = reader.take()
            if end == "\\":
                end = reader.take()
            members.update(chr(c) for c in range(ord(char), ord(end) + 1))
            continue
        members.add(char)
    if negated:
        return "".join(c for c in _PRINTABLE if c not in members) or "~"
    ordered = "".join(c for c in _PRINTABLE if c in members)
    return ordered + "".join(sorted(members - set(_PRINTABLE)))


def _longest(node: Node) -> int:
    """The most steps ``_make`` may take for ``node``: each node one, a repeat its most times
    its child's."""
    kind = node[0]
    if kind == "chars":
        return 1
    if kind == "seq":
        return 1 + sum(_longest(child) for child in node[1])
    if kind == "alt":
        return 1 + max(_longest(child) for child in node[1])
    most: int = node[3]
    return 1 + most * _longest(node[1])


def _make(node: Node, draw: Draw, out: list[str]) -> None:
    kind = node[0]
    if kind == "chars":
        out.append(node[1][draw(len(node[1]))])
    elif kind == "seq":
        for child in node[1]:
            _make(child, draw, out)
    elif kind == "alt":
        _make(node[1][draw(len(node[1]))], draw, out)
    else:
        _, child, low, high = node
        for _ in range(low + draw(high - low + 1)):
            _make(child, draw, out)


def text_matching(pattern: str, draw: Draw) -> str:
    """A text ``pattern`` matches whole (``re.fullmatch``), made with ``draw``; a
    ``ValueError`` names what cannot be made."""
    try:
        compiled = re.compile(pattern)  # one Python cannot read: its re.error (a ValueError)
        tree = _alternation(_Reader(pattern))
        if _longest(tree) > MOST_CHARACTERS:
            raise ValueError(f"repeats that may make a text of more than {MOST_CHARACTERS} "
                             "characters")
        for _ in range(16):
            out: list[str] = []
            _make(tree, draw, out)
            text = "".join(out)
            if compiled.fullmatch(text):
                return text
    except RecursionError:
        raise ValueError("groups nested too deeply to read") from None
    raise ValueError(f"no text drawn for {pattern!r} matches it")
