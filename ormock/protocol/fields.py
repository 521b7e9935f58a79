"""Checking one field of a request body: its JSON type, a number's range, a string's choices
and length, ``include`` and ``metadata`` (a create's and a conversation's alike), ``text``,
``reasoning`` and ``stream_options``.

Every fault is an ``OpenResponsesError`` (``invalid``) whose ``param`` names the field and whose
message says what the field must be and what it was.
"""

from __future__ import annotations

from typing import Any

from ormock.protocol.errors import invalid
from ormock.protocol.types import Json

__all__ = ["INCLUDABLE", "MAX_INPUT_TEXT", "MAX_METADATA", "bounded_string", "choice", "expect",
           "includes", "metadata", "number", "reasoning_param", "stream_options", "text_param",
           "type_name"]

# what ``include`` may name: the openai SDK's ``ResponseIncludable`` (the official schema's
# ``reasoning.encrypted_content`` and ``message.output_text.logprobs`` among them)
INCLUDABLE = ("file_search_call.results", "web_search_call.results",
              "web_search_call.action.sources", "message.input_image.image_url",
              "computer_call_output.output.image_url", "code_interpreter_call.outputs",
              "reasoning.encrypted_content", "message.output_text.logprobs")
MAX_METADATA = 16  # keys; each at most 64 characters, each value a string of at most 512
MAX_INPUT_TEXT = 10_485_760  # characters of a string ``input`` (the official schema's maxLength)


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


def bounded_string(value: Any, param: str, limit: int) -> str:
    """``value`` checked as a string of at most ``limit`` characters (a schema's
    ``maxLength``)."""
    expect(value, str, param, "a string")
    if len(value) > limit:
        raise invalid(f"'{param}' may be at most {limit} characters; got {len(value)}: shorten "
                      "it.", param, "string_above_max_length")
    return str(value)


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


def text_param(value: Any) -> Json:
    """``text``: its ``format`` (``text`` when null or absent, ``json_object`` or
    ``json_schema``) and ``verbosity``, as the Response echoes them."""
    expect(value, dict, "text", "an object")
    fmt = value.get("format")
    if fmt is None:
        fmt = {"type": "text"}
    expect(fmt, dict, "text.format", "an object")
    kind = fmt.get("type")
    echo: Json
    if kind in ("text", "json_object"):
        echo = {"format": {"type": kind}}
    elif kind == "json_schema":
        if not isinstance(fmt.get("name"), str):
            raise invalid("'text.format.name' is required for a json_schema format.",
                          "text.format.name", "missing_required_parameter")
        if not isinstance(fmt.get("schema"), dict):
            raise invalid("'text.format.schema' must be a JSON Schema object.",
                          "text.format.schema", "invalid_type")
        # the official Response schema wants the echoed schema as null
        echo = {"format": {"type": "json_schema", "name": fmt["name"],
                           "description": fmt.get("description"), "schema": None,
                           "strict": bool(fmt.get("strict", False))}}
    else:
        raise invalid(f"'text.format.type' must be 'text', 'json_object' or 'json_schema'; got "
                      f"{kind!r}.", "text.format.type")
    if value.get("verbosity") is not None:
        verbosity = value["verbosity"]
        if verbosity not in ("low", "medium", "high"):
            raise invalid("'text.verbosity' must be 'low', 'medium' or 'high'.",
                          "text.verbosity")
        echo["verbosity"] = verbosity
    return echo


def reasoning_param(value: Any) -> Json:
    """``reasoning``: its ``effort`` and ``summary``, as the Response echoes them."""
    expect(value, dict, "reasoning", "an object")
    effort = value.get("effort")
    if effort is not None and effort not in ("none", "minimal", "low", "medium", "high", "xhigh"):
        raise invalid(f"'reasoning.effort' {effort!r} is not a reasoning effort; use none, "
                      "minimal, low, medium, high or xhigh.", "reasoning.effort")
    summary = value.get("summary")
    if summary is not None and summary not in ("auto", "concise", "detailed"):
        raise invalid("'reasoning.summary' must be 'auto', 'concise' or 'detailed'.",
                      "reasoning.summary")
    return {"effort": effort, "summary": summary}


def stream_options(value: Any, stream: Any) -> Json:
    """``stream_options`` (the official schema's ``StreamOptionsParam``): an object whose
    ``include_obfuscation`` is true or false, sent only with ``stream: true`` (OpenAI refuses
    it without, as the openai SDK says: "Only set this when you set `stream: true`")."""
    expect(value, dict, "stream_options", "an object")
    obfuscation = value.get("include_obfuscation")
    if obfuscation is not None:
        expect(obfuscation, bool, "stream_options.include_obfuscation", "true or false")
    if stream is not True:
        raise invalid("'stream_options' is only allowed with 'stream': true; send 'stream': true "
                      "or leave 'stream_options' out.", "stream_options")
    return dict(value)
