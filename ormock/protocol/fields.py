"""Checking one field of a request body: its JSON type, a number's range, a string's choices,
``include`` and ``metadata`` (a create's and a conversation's alike).

Every fault is an ``OpenResponsesError`` (``invalid``) whose ``param`` names the field and whose
message says what the field must be and what it was.
"""

from __future__ import annotations

from typing import Any

from ormock.protocol.errors import invalid
from ormock.protocol.types import Json

__all__ = ["INCLUDABLE", "MAX_METADATA", "choice", "expect", "includes", "metadata", "number",
           "type_name"]

# what ``include`` may name: the openai SDK's ``ResponseIncludable`` (the official schema's
# ``reasoning.encrypted_content`` and ``message.output_text.logprobs`` among them)
INCLUDABLE = ("file_search_call.results", "web_search_call.results",
              "web_search_call.action.sources", "message.input_image.image_url",
              "computer_call_output.output.image_url", "code_interpreter_call.outputs",
              "reasoning.encrypted_content", "message.output_text.logprobs")
MAX_METADATA = 16  # keys; each at most 64 characters, each value a string of at most 512


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


def includes(value: Any, param: str = "include") -> list[str]:
    """``include``: an array of ``INCLUDABLE`` names."""
    expect(value, list, param, "an array of strings")
    for index, item in enumerate(value):
        expect(item, str, f"{param}[{index}]", "a string")
        if item not in INCLUDABLE:
            raise invalid(f"'{param}[{index}]' {item!r} is not an includable field; use one of "
                          f"{', '.join(INCLUDABLE)}.", f"{param}[{index}]")
    return list(value)


def metadata(value: Any, param: str = "metadata") -> Json:
    """``metadata``: at most ``MAX_METADATA`` keys of at most 64 characters, each value a string
    of at most 512 (the official schema's ``MetadataParam``)."""
    expect(value, dict, param, "an object of string values")
    if len(value) > MAX_METADATA:
        raise invalid(f"'{param}' may hold at most {MAX_METADATA} keys; got {len(value)}.", param)
    for key, item in value.items():
        if len(key) > 64:
            raise invalid(f"'{param}' keys may be at most 64 characters; {key[:20]!r}... has "
                          f"{len(key)}.", f"{param}.{key}", "string_above_max_length")
        if not isinstance(item, str):
            raise invalid(f"'{param}.{key}' must be a string, not {type_name(item)}.",
                          f"{param}.{key}", "invalid_type")
        if len(item) > 512:
            raise invalid(f"'{param}.{key}' may be at most 512 characters; got {len(item)}.",
                          f"{param}.{key}", "string_above_max_length")
    return dict(value)
