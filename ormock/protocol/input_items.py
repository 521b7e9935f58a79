"""Input items: a request's ``input`` (and ``/v1/conversations``' ``items``) checked item by item,
and the text and tokens of an item.

Input is looser than output: ``input`` may be a string, message items may lack ``type``, content
may be a string. Every fault is an ``OpenResponsesError`` whose ``param`` names the item's field
(``input[2].role``) and whose message says what to change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from ormock.protocol.compaction import content_tokens
from ormock.protocol.errors import invalid
from ormock.protocol.events import is_vendor_type
from ormock.protocol.fields import expect
from ormock.protocol.openai_items import CALLS, OUTPUTS, openai_only_types, output_text
from ormock.protocol.tokens import count_tokens
from ormock.protocol.types import Json

__all__ = [
    "INPUT_PART_TYPES",
    "ITEM_TYPES",
    "MAX_COMPACTION_CONTENT",
    "ROLES",
    "STATUSES",
    "item_text",
    "item_tokens",
    "messages_text",
    "parse_input",
    "parse_items",
]


ROLES = ("user", "assistant", "system", "developer")
INPUT_PART_TYPES = frozenset(
    {"input_text", "input_image", "input_file", "output_text", "refusal", "input_video",
     "summary_text", "reasoning_text", "text"}
)
ITEM_TYPES = frozenset(
    {"message", "function_call", "function_call_output", "reasoning", "item_reference",
     "compaction"}
)
MAX_COMPACTION_CONTENT = 10_485_760  # the official schema's maxLength
STATUSES = ("in_progress", "completed", "incomplete")  # an input item's ``status``, if sent
# the content parts whose text is in a key of their own (a refusal's ``refusal``, the others'
# ``text``), which must then be a string
_TEXT_KEYS = {"input_text": "text", "output_text": "text", "summary_text": "text",
              "reasoning_text": "text", "text": "text", "refusal": "refusal"}
# the parts a function call's output may hold besides a string (the spec's
# FunctionCallOutputItemParam)
_OUTPUT_PART_TYPES = ("input_text", "input_image", "input_file", "input_video")


def item_text(item: Json) -> str:
    """The text of one input item: a message's content (a string, or its text and refusal
    parts one per line), a function call's arguments, a custom tool call's input, a tool
    output's output (``function_call_output``, ``custom_tool_call_output``, ...), the tools of
    an ``additional_tools`` item."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (p.get("text") or p.get("refusal") for p in content if isinstance(p, dict))
        return "\n".join(str(t) for t in texts if t)
    kind = item.get("type")
    if kind in OUTPUTS:
        return output_text(item.get("output"))
    if kind == "function_call":
        return str(item.get("arguments", ""))
    if kind in CALLS:
        value = item.get("input", item.get("arguments", ""))
        return value if isinstance(value, str) else json.dumps(value)
    if kind == "additional_tools":  # its tools, as a request's function tools are counted
        return json.dumps(item.get("tools"))
    return ""


def item_tokens(item: Json) -> int:
    """The tokens of one context item: those of its text (``item_text``); a compaction item's,
    those of the items it stands for (``ormock.protocol.compaction``)."""
    if item.get("type") == "compaction":
        content = item.get("encrypted_content")
        return content_tokens(content) if isinstance(content, str) else 0
    return count_tokens(item_text(item))


def messages_text(items: Iterable[Json]) -> str:
    """The text of the message items among ``items``, one text per line: what scenarios match
    (``input_contains``), templates call ``request.input`` and ``assert_called_with`` reads."""
    texts = (item_text(i) for i in items if i.get("type", "message") == "message")
    return "\n".join(t for t in texts if t)


def parse_input(value: Any) -> list[Json]:
    """A request's ``input``: none, a string (one user message) or an array of input items,
    each checked (``_input_item``)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    expect(value, list, "input", "a string or an array of items")
    return [_input_item(item, f"input[{i}]") for i, item in enumerate(value)]


def parse_items(value: Any, param: str, most: int) -> list[Json]:
    """An array of at most ``most`` input items, each checked as a request's ``input`` items
    are, the faults naming ``param[i]`` (``/v1/conversations``' ``items``)."""
    expect(value, list, param, "an array of items")
    if len(value) > most:
        raise invalid(f"'{param}' may hold at most {most} items at a time; got {len(value)}.",
                      param, "array_above_max_length")
    return [_input_item(item, f"{param}[{i}]") for i, item in enumerate(value)]


def _input_item(item: Any, param: str) -> Json:
    expect(item, dict, param, "an item object")
    kind = item.get("type", "message")
    if not isinstance(kind, str):
        if kind is None and _is_reference(item):  # the spec lets an item reference's be null
            return _item_reference(item, param)
        raise invalid(f"'{param}.type' must be a string.", f"{param}.type", "invalid_type")
    if kind not in ITEM_TYPES and not is_vendor_type(kind) and kind not in openai_only_types():
        known = ", ".join(sorted(ITEM_TYPES))
        raise invalid(f"'{param}.type' {kind!r} is not an input item type; use one of {known}, "
                      "a vendor-prefixed type such as 'acme:search_call', or under the openai "
                      "profile one of the openai SDK's "
                      f"({', '.join(sorted(openai_only_types()))}).", f"{param}.type")
    if kind == "message":
        role = item.get("role")
        if role not in ROLES:
            return _untyped(item, param) if "type" not in item else _bad_role(role, param)
        content = item.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                _part(part, f"{param}.content[{j}]", INPUT_PART_TYPES)
        elif not isinstance(content, str):
            raise invalid(f"'{param}.content' must be a string or an array of content parts.",
                          f"{param}.content", "invalid_type")
        if "id" in item or "status" in item:
            _id_and_status(item, param)
        return {"type": "message", **item}
    if kind in _SPEC_CHECKS:
        _SPEC_CHECKS[kind](item, param)
        _id_and_status(item, param)
    return dict(item)


def _is_reference(item: Json) -> bool:
    """An item with no ``type`` (or a null one) is an item reference when it has an ``id`` and
    nothing of a message (the spec's ItemReferenceParam, the SDK's ItemReference)."""
    return "id" in item and "role" not in item and "content" not in item


def _untyped(item: Json, param: str) -> Json:
    """An item with neither ``type`` nor a role: an item reference, or a fault saying what it
    lacks."""
    if _is_reference(item):
        return _item_reference(item, param)
    if "content" in item or "role" in item:
        return _bad_role(item.get("role"), param)
    raise invalid(f"'{param}' has no 'type': send a message as {{\"role\": \"user\", "
                  "\"content\": ...}, an item reference as {\"type\": \"item_reference\", "
                  "\"id\": ...}, or another item with its 'type'.", f"{param}.type",
                  "missing_required_parameter")


def _bad_role(role: Any, param: str) -> Json:
    if role is None:
        raise invalid(f"'{param}.role' is required on a message: one of {', '.join(ROLES)}.",
                      f"{param}.role", "missing_required_parameter")
    raise invalid(f"'{param}.role' must be one of {', '.join(ROLES)}; got {role!r}.",
                  f"{param}.role")


def _item_reference(item: Json, param: str) -> Json:
    _reference(item, param)
    return {**item, "type": "item_reference"}


def _reference(item: Json, param: str) -> None:
    if "id" not in item:
        raise invalid(f"'{param}.id' is required on an item_reference item: the id of the item "
                      "it stands for.", f"{param}.id", "missing_required_parameter")
    expect(item["id"], str, f"{param}.id", "an item id string")


def _id_and_status(item: Json, param: str) -> None:
    """An item's optional ``id`` (a string or null) and ``status`` (one of ``STATUSES``)."""
    ident = item.get("id")
    if ident is not None:
        expect(ident, str, f"{param}.id", "a string")
    status = item.get("status")
    if status is not None and status not in STATUSES:
        expect(status, str, f"{param}.status", "a string")
        raise invalid(f"'{param}.status' must be one of {', '.join(STATUSES)}; got {status!r}.",
                      f"{param}.status")


def _part(part: Any, where: str, types: Iterable[str]) -> None:
    """One content part: an object of one of ``types``, its text (if it has one) a string."""
    expect(part, dict, where, "a content part object")
    kind = part.get("type")
    if kind not in types:
        names = sorted(types)
        use = names[0] if len(names) == 1 else f"one of {', '.join(names)}"
        raise invalid(f"'{where}.type' {kind!r} is not a content part type here; use {use}.",
                      f"{where}.type")
    key = _TEXT_KEYS.get(kind)
    if key is not None and part.get(key).__class__ is not str:
        if key not in part:
            raise invalid(f"'{where}.{key}' is required on each {kind} part: a string.",
                          f"{where}.{key}", "missing_required_parameter")
        expect(part[key], str, f"{where}.{key}", "a string")


def _parts(value: Any, where: str, types: tuple[str, ...], what: str) -> None:
    """An array of content parts of ``types`` (``what`` names what the array may be)."""
    expect(value, list, where, what)
    for j, part in enumerate(value):
        _part(part, f"{where}[{j}]", types)


def _reasoning(item: Json, param: str) -> None:
    """The spec's ReasoningItemParam: ``summary`` summary_text parts; ``content`` null or (as
    the openai SDK sends it back) reasoning_text parts; ``encrypted_content`` null or a
    string."""
    if "summary" not in item:
        raise invalid(f"'{param}.summary' is required on a reasoning item: an array of "
                      "summary_text parts, [] for none.", f"{param}.summary",
                      "missing_required_parameter")
    _parts(item["summary"], f"{param}.summary", ("summary_text",),
           "an array of summary_text parts")
    if item.get("content") is not None:
        _parts(item["content"], f"{param}.content", ("reasoning_text",),
               "null or an array of reasoning_text parts")
    if item.get("encrypted_content") is not None:
        expect(item["encrypted_content"], str, f"{param}.encrypted_content", "a string or null")


def _function_call_output(item: Json, param: str) -> None:
    for name in ("call_id", "output"):
        if name not in item:
            raise invalid(f"'{param}.{name}' is required on a function_call_output item.",
                          f"{param}.{name}", "missing_required_parameter")
    expect(item["call_id"], str, f"{param}.call_id", "a string")
    output = item["output"]
    if not isinstance(output, str):
        _parts(output, f"{param}.output", _OUTPUT_PART_TYPES,
               "a string or an array of content parts (input_text, input_image, input_file)")


def _compaction(item: Json, param: str) -> None:
    content = item.get("encrypted_content")
    if not isinstance(content, str):
        raise invalid(f"'{param}.encrypted_content' is required on a compaction item and "
                      "must be a string: pass back the item /v1/responses/compact returned, "
                      "as it is.", f"{param}.encrypted_content",
                      "missing_required_parameter")
    if len(content) > MAX_COMPACTION_CONTENT:
        raise invalid(f"'{param}.encrypted_content' may be at most "
                      f"{MAX_COMPACTION_CONTENT} characters; got {len(content)}.",
                      f"{param}.encrypted_content", "string_above_max_length")


def _function_call(item: Json, param: str) -> None:
    for name in ("call_id", "name", "arguments"):
        if not isinstance(item.get(name), str):
            raise invalid(f"'{param}.{name}' is required on a function_call item and must "
                          "be a string.", f"{param}.{name}", "missing_required_parameter")


# the checks of the spec's item types other than a message, each by its type
_SPEC_CHECKS: dict[str, Callable[[Json, str], None]] = {
    "reasoning": _reasoning, "item_reference": _reference,
    "function_call_output": _function_call_output, "compaction": _compaction,
    "function_call": _function_call,
}
