"""A plausible text for a Lark grammar, drawn: what a custom tool whose grammar is Lark (Codex's
``apply_patch``) gets as its input.

The grammar's rules and terminals are read (alternatives, groups, ``[optional]``, ``?``, ``*``,
``+``, ``"literals"``, ``"a".."z"`` ranges, ``/regex/`` terminals, ``%import common.X``) and
expanded from ``start``: a repeat once (or not, for ``*``), an optional part always, the
alternatives drawn while the text is shallow and the least recursive one past a depth. A
grammar that would hold the server is a ``ValueError`` naming it: one whose expansion takes
more than ``MOST_CHARACTERS`` steps (``"a"~999999999``), or does not end (``start: start``)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

from ormock.engine.tool_calls.regex_text import MOST_CHARACTERS, text_matching

__all__ = ["text_for_lark"]

Draw = Callable[[int], int]

_TOKEN = re.compile(r'''\s*(?:
    (?P<string>"(?:[^"\\]|\\.)*"i?)
  | (?P<regex>/(?:[^/\\\n]|\\.)+/[imslux]*)
  | (?P<name>[?!]?[A-Za-z_][A-Za-z_0-9]*(?:\.[0-9]+)?)
  | (?P<op>->|\.\.|[()\[\]|?*+~:,])
  | (?P<number>[0-9]+)
)''', re.VERBOSE)
# what the common grammar's terminals (``%import common.X``) look like
_COMMON = {
    "LF": "\n", "CR": "\r", "NEWLINE": "\n", "WS": " ", "WS_INLINE": " ", "DIGIT": "7",
    "HEXDIGIT": "a", "INT": "42", "SIGNED_INT": "42", "DECIMAL": "4.2", "NUMBER": "42",
    "SIGNED_NUMBER": "42", "FLOAT": "4.2", "LETTER": "a", "LCASE_LETTER": "a",
    "UCASE_LETTER": "A", "WORD": "word", "CNAME": "name", "ESCAPED_STRING": '"text"',
    "SH_COMMENT": "# note", "CPP_COMMENT": "// note", "C_COMMENT": "/* note */",
}
_DEEP = 12


@dataclass
class _Grammar:
    rules: dict[str, list[list[str]]] = field(default_factory=dict)  # name -> token lists
    common: dict[str, str] = field(default_factory=dict)


def _definitions(text: str) -> _Grammar:
    grammar = _Grammar()
    current: str | None = None
    for raw in textwrap.dedent(text).splitlines():
        line = re.sub(r"(^|\s)//.*$", "", raw).rstrip()
        if not line.strip():
            continue
        stripped = line.strip()
        if stripped.startswith("%import"):
            found = re.match(r"%import\s+common\.(\w+)(?:\s*->\s*(\w+))?", stripped)
            listed = re.match(r"%import\s+common\s*\(([^)]*)\)", stripped)
            for name, alias in ([(found.group(1), found.group(2))] if found else
                                [(n.strip(), None) for n in listed.group(1).split(",")]
                                if listed else []):
                grammar.common[alias or name] = _COMMON.get(name, name.lower())
            continue
        if stripped.startswith("%"):
            continue
        head = re.match(r"\s*[?!]?([A-Za-z_]\w*)(?:\.\d+)?\s*:(.*)$", line)
        if head and not line[0].isspace():
            current = head.group(1)
            grammar.rules[current] = [_tokens(head.group(2))]
        elif current is not None:  # a continuation line (``| ...``)
            grammar.rules[current].append(_tokens(stripped))
    return grammar


def _tokens(text: str) -> list[str]:
    out, at = [], 0
    while at < len(text.rstrip()):
        found = _TOKEN.match(text, at)
        if found is None:
            raise ValueError(f"the grammar's {text[at:at + 12]!r}")
        out.append(found.group().strip())
        at = found.end()
    return out


@dataclass
class _Expander:
    grammar: _Grammar
    draw: Draw
    out: list[str] = field(default_factory=list)
    steps: int = 0  # atoms expanded so far (``MOST_CHARACTERS`` at most)

    def rule(self, name: str, depth: int) -> None:
        if name in self.grammar.common:
            self.out.append(self.grammar.common[name])
            return
        tokens = [t for line in self.grammar.rules.get(name, []) for t in line]
        if not tokens:
            raise ValueError(f"the rule or terminal {name!r}, which the grammar does not define")
        self.expansion(tokens, depth + 1)

    def expansion(self, tokens: list[str], depth: int) -> None:
        options = _split(tokens, "|")
        if len(options) > 1 and depth > _DEEP:
            option = min(options, key=lambda o: sum(t[:1].isalpha() for t in o))
        else:
            option = options[self.draw(len(options))] if depth <= _DEEP else options[0]
        self.sequence(option, depth)

    def sequence(self, tokens: list[str], depth: int) -> None:
        if "->" in tokens:
            tokens = tokens[:tokens.index("->")]
        at = 0
        while at < len(tokens):
            atom, at = _atom(tokens, at)
            times = 1
            if at < len(tokens) and tokens[at] in ("?", "*", "+"):
                times = {"?": 1, "*": self.draw(2) if depth <= _DEEP else 0, "+": 1}[tokens[at]]
                at += 1
            elif at + 1 < len(tokens) and tokens[at] == "~":
                times = int(tokens[at + 1])
                at += 2
                if at + 1 < len(tokens) and tokens[at] == "..":
                    at += 2
            for _ in range(times):
                self.atom(atom, depth)

    def atom(self, atom: list[str], depth: int) -> None:
        self.steps += 1
        if self.steps > MOST_CHARACTERS:
            raise ValueError(f"repeats that make too long a text (more than {MOST_CHARACTERS} "
                             "parts)")
        first = atom[0]
        if first in ("(", "["):
            self.expansion(atom[1:-1], depth)
        elif first.startswith('"'):
            if len(atom) == 3:  # "a".."z": its first character
                self.out.append(_literal(first)[:1])
            else:
                self.out.append(_literal(first))
        elif first.startswith("/"):
            body = first[1:].rpartition("/")[0]
            self.out.append(_plain(body, self.draw))
        else:
            self.rule(first.lstrip("?!"), depth)


def _plain(pattern: str, draw: Draw) -> str:
    """A regex terminal's text; a run of any character (``.+``) as words, to read well."""
    if re.fullmatch(r"\(?\.[*+]\)?", pattern):
        return "lorem ipsum"
    return text_matching(pattern, draw)


def _literal(token: str) -> str:
    body = token[1:token.rindex('"')]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _split(tokens: list[str], separator: str) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    depth = 0
    for token in tokens:
        if token in ("(", "["):
            depth += 1
        elif token in (")", "]"):
            depth -= 1
        if token == separator and depth == 0:
            parts.append([])
        else:
            parts[-1].append(token)
    return [p for p in parts if p] or [[]]


def _atom(tokens: list[str], at: int) -> tuple[list[str], int]:
    """The atom at ``at`` (a group whole) and where the next one starts."""
    if tokens[at] in ("(", "["):
        depth, end = 0, at
        for end in range(at, len(tokens)):
            depth += tokens[end] in ("(", "[")
            depth -= tokens[end] in (")", "]")
            if depth == 0:
                break
        return tokens[at:end + 1], end + 1
    if at + 2 < len(tokens) and tokens[at + 1] == "..":
        return tokens[at:at + 3], at + 3
    return [tokens[at]], at + 1


def text_for_lark(grammar: str, draw: Draw) -> str:
    """A text ``grammar`` plausibly takes, from its ``start`` rule (else its first); a
    ``ValueError`` names what cannot be read."""
    read = _definitions(grammar)
    if not read.rules:
        raise ValueError("a grammar with no rules")
    expander = _Expander(read, draw)
    try:
        expander.rule("start" if "start" in read.rules else next(iter(read.rules)), 0)
    except RecursionError:  # past ``_DEEP`` the least recursive alternative still recurses
        raise ValueError("rules that do not end (or nest too deeply to expand)") from None
    return "".join(expander.out)
