"""How a sent request's body differs from a recorded one's, said so a person sees it at once.

``json_diff`` lists every path that differs (up to ``limit``, then how many more); two strings
are shown around their first differing character, the differing run between angle quotes
(``... compatible with <the> schema ...`` against ``... compatible with <this> schema ...``,
with U+2039 and U+203A), never cut at their start where both read the same.
``lenient`` makes null, empty and absent alike (``tools[0].description: recorded '', sent
null`` is no difference). A multipart body (a file upload) is compared part by part, its
random boundary aside.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["LIMIT", "body_differences", "json_diff", "lenient_value", "multipart_parts",
           "text_diff"]

LIMIT = 12  # differing paths listed in one miss
_CONTEXT = 24  # characters shown each side of the first difference
_OPEN, _CLOSE = "\u2039", "\u203a"  # around the differing run
_WHOLE = 40  # strings no longer than this are shown whole
_EMPTY: tuple[Any, ...] = (None, "", [], {})


def _quoted(text: str) -> str:
    return repr(text)[1:-1]


def text_diff(recorded: str, sent: str) -> str:
    """``recorded '…', sent '…'``: two short strings whole, longer ones each around the first
    character where they differ, the differing run between angle quotes."""
    if recorded == sent:
        return f"recorded {recorded!r}, sent the same"
    if len(recorded) <= _WHOLE and len(sent) <= _WHOLE:  # short: both read whole
        return f"recorded {recorded!r}, sent {sent!r}"
    start = next((i for i, (a, b) in enumerate(zip(recorded, sent, strict=False)) if a != b),
                 min(len(recorded), len(sent)))
    end_a, end_b = len(recorded), len(sent)
    while end_a > start and end_b > start and recorded[end_a - 1] == sent[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1

    def shown(text: str, end: str | int) -> str:
        stop = int(end)
        head = text[max(0, start - _CONTEXT):start]
        middle = text[start:stop]
        if len(middle) > 2 * _CONTEXT:
            middle = middle[:_CONTEXT] + "…" + middle[-_CONTEXT // 2:]
        tail = text[stop:stop + _CONTEXT]
        return ("…" if start > _CONTEXT else "") + _quoted(head) + _OPEN + _quoted(middle) + \
            _CLOSE + _quoted(tail) + ("…" if stop + _CONTEXT < len(text) else "")

    where = f" (character {start + 1})" if start else ""
    return f"recorded '{shown(recorded, end_a)}', sent '{shown(sent, end_b)}'{where}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def lenient_value(value: Any) -> Any:
    """``value`` with every null, empty string, empty list and empty mapping left out (of
    mappings), so null, empty and absent compare alike."""
    if isinstance(value, dict):
        return {k: lenient_value(v) for k, v in value.items() if v not in _EMPTY}
    if isinstance(value, list):
        return [lenient_value(v) for v in value]
    return value


def json_diff(recorded: Any, sent: Any, path: str = "", limit: int = LIMIT) -> list[str]:
    """The differences between two JSON values, one line per path (at most ``limit``, then a
    line saying how many more)."""
    out: list[str] = []
    more = 0

    def add(line: str) -> None:
        nonlocal more
        if len(out) < limit:
            out.append(line)
        else:
            more += 1

    def walk(a: Any, b: Any, where: str) -> None:
        if a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in list(a) + [k for k in b if k not in a]:
                here = f"{where}.{key}" if where else str(key)
                if key not in b:
                    add(f"{here}: recorded {_short(a[key])}, not sent")
                elif key not in a:
                    add(f"{here}: sent {_short(b[key])}, not in the recording")
                else:
                    walk(a[key], b[key], here)
            return
        if isinstance(a, list) and isinstance(b, list):
            for index in range(max(len(a), len(b))):
                here = f"{where}[{index}]"
                if index >= len(b):
                    add(f"{here}: recorded {_short(a[index])}, not sent")
                elif index >= len(a):
                    add(f"{here}: sent {_short(b[index])}, not in the recording")
                else:
                    walk(a[index], b[index], here)
            return
        if isinstance(a, str) and isinstance(b, str):
            add(f"{where or '(body)'}: {text_diff(a, b)}")
            return
        add(f"{where or '(body)'}: recorded {_short(a)}, sent {_short(b)}")

    walk(recorded, sent, path)
    if more:
        out.append(f"... and {more} more difference{'s' if more > 1 else ''}")
    return out


_BOUNDARY = re.compile(r"\A(?:\r?\n)*--([^\r\n]{1,200})\r?\n")


def multipart_parts(text: str) -> list[str] | None:
    """The parts of a multipart body (each with its headers), its boundary taken from its own
    first line; None for a body that is not multipart."""
    found = _BOUNDARY.match(text)
    if found is None:
        return None
    boundary = "--" + found.group(1)
    if not text.rstrip().endswith(boundary + "--"):
        return None
    pieces = text.split(boundary)
    return [piece.strip("\r\n") for piece in pieces[1:-1]]


def body_differences(recorded: Any, sent: Any, lenient: bool = False) -> list[str]:
    """How two request bodies (a JSON document, text, or None) differ: by JSON path, a
    multipart body part by part."""
    if isinstance(recorded, str) and isinstance(sent, str):
        a, b = multipart_parts(recorded), multipart_parts(sent)
        if a is not None and b is not None:
            return json_diff(a, b, "(part)")
    if lenient:
        recorded, sent = lenient_value(recorded), lenient_value(sent)
        if recorded in _EMPTY and sent in _EMPTY:
            return []
    return json_diff(recorded, sent)
