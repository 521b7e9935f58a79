"""Checking one field of a request body: its JSON type, a number's range, a string's choices.

Every fault is an ``OpenResponsesError`` (``invalid``) whose ``param`` names the field and whose
message says what the field must be and what it was.
"""

from __future__ import annotations

from typing import Any

from ormock.protocol.errors import invalid
from ormock.protocol.types import Json

__all__ = ["choice", "expect", "number", "type_name"]


def type_name(value: Any) -> str:
    """How a message names the JSON type of ``value``: "an object", "a string", "null", ..."""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(value), "a value")


def expect(value: Any, kind: type | tuple[type, ...], param: str, what: str) -> None:
    """Raise unless ``value`` is a ``kind`` (a boolean is no number here); ``what`` is how the
    message names the type wanted."""
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, (int, float)))
    if not ok:
        raise invalid(f"'{param}' must be {what}, not {type_name(value)}.", param, "invalid_type")


def number(body: Json, name: str, low: float, high: float, integer: bool = False) -> Any:
    """``body[name]`` checked as a number (an integer if ``integer``) from ``low`` to ``high``;
    None when it is absent or null."""
    value = body.get(name)
    if value is None:
        return None
    kind = "an integer" if integer else "a number"
    expect(value, int if integer else (int, float), name, kind)
    if not low <= value <= high:
        raise invalid(f"'{name}' must be between {low:g} and {high:g}; got {value}.", name)
    return value


def choice(body: Json, name: str, allowed: tuple[str, ...]) -> str | None:
    """``body[name]`` checked as one of ``allowed``; None when it is absent or null."""
    value = body.get(name)
    if value is None:
        return None
    if value not in allowed:
        options = ", ".join(repr(a) for a in allowed)
        raise invalid(f"'{name}' must be one of {options}; got {value!r}.", name)
    return str(value)
