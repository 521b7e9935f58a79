"""Input items: a request's ``input`` (and ``/v1/conversations``' ``items``) checked item by item,
and the text and tokens of an item.

Input is looser than output: ``input`` may be a string, message items may lack ``type``, content
may be a string. Every fault is an ``OpenResponsesError`` whose ``param`` names the item's field
(``input[2].role``) and whose message says what to change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
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
            raise invalid(f"'{param}.role' must be one of {', '.join(ROLES)}; got {role!r}.",
                          f"{param}.role")
        content = item.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                where = f"{param}.content[{j}]"
                expect(part, dict, where, "a content part object")
                if part.get("type") not in INPUT_PART_TYPES:
                    raise invalid(f"'{where}.type' {part.get('type')!r} is not a content part "
                                  "type; use input_text, input_image or input_file.",
                                  f"{where}.type")
        elif not isinstance(content, str):
            raise invalid(f"'{param}.content' must be a string or an array of content parts.",
                          f"{param}.content", "invalid_type")
        return {"type": "message", **item}
    if kind == "function_call_output":
        for name in ("call_id", "output"):
            if name not in item:
                raise invalid(f"'{param}.{name}' is required on a function_call_output item.",
                              f"{param}.{name}", "missing_required_parameter")
        expect(item["call_id"], str, f"{param}.call_id", "a string")
    if kind == "compaction":
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
    if kind == "function_call":
        for name in ("call_id", "name", "arguments"):
            if not isinstance(item.get(name), str):
                raise invalid(f"'{param}.{name}' is required on a function_call item and must "
                              "be a string.", f"{param}.{name}", "missing_required_parameter")
    return dict(item)
