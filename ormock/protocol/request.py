"""Reading a ``POST /v1/responses`` body: checked field by field, normalised, echo prepared.

Requests are looser than responses: ``input`` may be a string, message items may lack ``type``,
content may be a string. Every fault is an ``OpenResponsesError`` whose ``param`` names the field
and whose message says what to change.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ormock.protocol.compaction import content_tokens
from ormock.protocol.errors import invalid
from ormock.protocol.events import is_vendor_type
from ormock.protocol.tokens import count_tokens
from ormock.protocol.tool_schema import check_parameters
from ormock.protocol.types import Json

__all__ = [
    "ResponseRequest",
    "content_seed",
    "item_text",
    "item_tokens",
    "messages_text",
    "parse_compact",
    "parse_items",
    "parse_request",
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
TOOL_CHOICE_MODES = ("auto", "required", "none")
MAX_COMPACTION_CONTENT = 10_485_760  # the official schema's maxLength


def item_text(item: Json) -> str:
    """The text of one input item: a message's content (a string, or its text and refusal
    parts one per line), a function call's arguments, a function call output's output."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (p.get("text") or p.get("refusal") for p in content if isinstance(p, dict))
        return "\n".join(str(t) for t in texts if t)
    if item.get("type") == "function_call_output":
        output = item.get("output")
        return output if isinstance(output, str) else json.dumps(output)
    if item.get("type") == "function_call":
        return str(item.get("arguments", ""))
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


def content_seed(seed: int, body: Json) -> int:
    """The seed for a request's content: the same request gets the same content."""
    stable = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    digest = hashlib.sha256(f"{seed}:{json.dumps(stable, sort_keys=True, default=str)}".encode())
    return int.from_bytes(digest.digest()[:8], "big")


@dataclass
class ResponseRequest:
    """A checked request. ``echo`` holds what the Response object repeats back."""

    body: Json
    model: str | None
    input: list[Json]
    stream: bool
    previous_response_id: str | None
    tools: list[Json] = field(default_factory=list)
    echo: Json = field(default_factory=dict)
    _seeds: dict[int, int] = field(default_factory=dict, repr=False, compare=False)

    def content_seed(self, seed: int) -> int:
        """The seed of this request's content under a server seed (``content_seed``), computed
        once."""
        value = self._seeds.get(seed)
        if value is None:
            value = self._seeds[seed] = content_seed(seed, self.body)
        return value

    @cached_property
    def input_tokens(self) -> int:
        """The tokens of this request's own ``input`` items (not a parent's), counted once: a
        request the server has read before is the same object."""
        return sum(item_tokens(item) for item in self.input)

    @cached_property
    def new_input_text(self) -> str:
        """The text of the messages this request adds (``messages_text`` of its ``input``; not
        the history a ``previous_response_id`` brings in)."""
        return messages_text(self.input)

    @property
    def function_tools(self) -> list[Json]:
        return [t for t in self.tools if t.get("type") == "function"]

    @property
    def tool_choice(self) -> Any:
        return self.echo.get("tool_choice", "auto")


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(value), "a value")


def _expect(value: Any, kind: type | tuple[type, ...], param: str, what: str) -> None:
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, (int, float)))
    if not ok:
        raise invalid(f"'{param}' must be {what}, not {_type_name(value)}.", param, "invalid_type")


def _number(body: Json, name: str, low: float, high: float, integer: bool = False) -> Any:
    value = body.get(name)
    if value is None:
        return None
    kind = "an integer" if integer else "a number"
    _expect(value, int if integer else (int, float), name, kind)
    if not low <= value <= high:
        raise invalid(f"'{name}' must be between {low:g} and {high:g}; got {value}.", name)
    return value


def _choice(body: Json, name: str, allowed: tuple[str, ...]) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if value not in allowed:
        options = ", ".join(repr(a) for a in allowed)
        raise invalid(f"'{name}' must be one of {options}; got {value!r}.", name)
    return str(value)


def parse_request(body: Any, *, require_model: bool = True) -> ResponseRequest:
    """Check a request body and normalise it; raise ``OpenResponsesError`` on the first fault.
    ``require_model=False``: a body may name neither ``model`` nor ``previous_response_id``
    (``POST /v1/responses/input_tokens``)."""
    if not isinstance(body, dict):
        raise invalid(
            f"The request body must be a JSON object, not {_type_name(body)}.", None,
            "invalid_json",
        )
    model = body.get("model")
    previous = body.get("previous_response_id")
    if previous is not None:
        _expect(previous, str, "previous_response_id", "a response id string")
    if model is None and previous is None and require_model:
        raise invalid("'model' is required: name the model to answer, e.g. \"gpt-4o-mini\".",
                      "model", "missing_required_parameter")
    if model is not None:
        _expect(model, str, "model", "a string")
        if not model:
            raise invalid("'model' must not be empty.", "model")
    tools = _tools(body.get("tools"))
    echo: Json = {"tools": [_echo_tool(t) for t in tools]}
    if model is not None:
        echo["model"] = model
    echo["previous_response_id"] = previous
    echo["tool_choice"] = _tool_choice(body.get("tool_choice"), tools)
    if body.get("instructions") is not None:
        _expect(body["instructions"], str, "instructions", "a string")
        echo["instructions"] = body["instructions"]
    for name in ("parallel_tool_calls", "store", "background", "stream"):
        if body.get(name) is not None:
            _expect(body[name], bool, name, "true or false")
    if body.get("parallel_tool_calls") is not None:
        echo["parallel_tool_calls"] = body["parallel_tool_calls"]
    if body.get("store") is not None:
        echo["store"] = body["store"]
    if body.get("background"):
        raise invalid("Background mode is not supported by this server; send 'background': "
                      "false or leave it out.", "background", "unsupported_parameter")
    for name, low, high in (("temperature", 0, 2), ("top_p", 0, 1),
                            ("presence_penalty", -2, 2), ("frequency_penalty", -2, 2)):
        value = _number(body, name, low, high)
        if value is not None:
            echo[name] = float(value)
    value = _number(body, "top_logprobs", 0, 20, integer=True)
    if value is not None:
        echo["top_logprobs"] = value
    value = body.get("max_output_tokens")
    if value is not None:
        _expect(value, int, "max_output_tokens", "an integer")
        if value < 16:
            raise invalid(f"'max_output_tokens' must be at least 16; got {value}.",
                          "max_output_tokens", "integer_below_min_value")
        echo["max_output_tokens"] = value
    value = body.get("max_tool_calls")
    if value is not None:
        _expect(value, int, "max_tool_calls", "an integer")
        if value < 1:
            raise invalid(f"'max_tool_calls' must be at least 1; got {value}.", "max_tool_calls",
                          "integer_below_min_value")
        echo["max_tool_calls"] = value
    for name, allowed in (("truncation", ("auto", "disabled")),
                          ("service_tier", ("auto", "default", "flex", "priority"))):
        value = _choice(body, name, allowed)
        if value is not None:
            echo[name] = value
    for name in ("safety_identifier", "prompt_cache_key"):
        if body.get(name) is not None:
            _expect(body[name], str, name, "a string")
            echo[name] = body[name]
    if body.get("metadata") is not None:
        echo["metadata"] = _metadata(body["metadata"])
    if body.get("text") is not None:
        echo["text"] = _text(body["text"])
    if body.get("reasoning") is not None:
        echo["reasoning"] = _reasoning(body["reasoning"])
    if body.get("include") is not None:
        _expect(body["include"], list, "include", "an array of strings")
        for index, value in enumerate(body["include"]):
            _expect(value, str, f"include[{index}]", "a string")
    return ResponseRequest(
        body=body,
        model=model,
        input=_input(body.get("input")),
        stream=bool(body.get("stream")),
        previous_response_id=previous,
        tools=tools,
        echo=echo,
    )


def parse_compact(body: Any) -> ResponseRequest:
    """Check a ``POST /v1/responses/compact`` body: ``model`` is required (a
    ``previous_response_id`` does not stand for it), the answer is one JSON object (no
    ``stream``), and every field it shares with a create request is checked as there."""
    if isinstance(body, dict):
        if body.get("model") is None:
            raise invalid("'model' is required: name the model to compact with, e.g. "
                          "\"gpt-4o-mini\".", "model", "missing_required_parameter")
        if body.get("stream"):
            raise invalid("/v1/responses/compact answers with one JSON object, never a stream; "
                          "leave 'stream' out.", "stream", "unsupported_parameter")
        _choice(body, "prompt_cache_retention", ("in_memory", "24h"))
        for name in ("image", "prompt_cache_options"):
            if body.get(name) is not None:
                _expect(body[name], dict, name, "an object")
    return parse_request(body)


def _input(value: Any) -> list[Json]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    _expect(value, list, "input", "a string or an array of items")
    return [_input_item(item, f"input[{i}]") for i, item in enumerate(value)]


def parse_items(value: Any, param: str, most: int) -> list[Json]:
    """An array of at most ``most`` input items, each checked as a request's ``input`` items
    are, the faults naming ``param[i]`` (``/v1/conversations``' ``items``)."""
    _expect(value, list, param, "an array of items")
    if len(value) > most:
        raise invalid(f"'{param}' may hold at most {most} items at a time; got {len(value)}.",
                      param, "array_above_max_length")
    return [_input_item(item, f"{param}[{i}]") for i, item in enumerate(value)]


def _input_item(item: Any, param: str) -> Json:
    _expect(item, dict, param, "an item object")
    kind = item.get("type", "message")
    if not isinstance(kind, str):
        raise invalid(f"'{param}.type' must be a string.", f"{param}.type", "invalid_type")
    if kind not in ITEM_TYPES and not is_vendor_type(kind):
        known = ", ".join(sorted(ITEM_TYPES))
        raise invalid(f"'{param}.type' {kind!r} is not an input item type; use one of {known}, "
                      "or a vendor-prefixed type such as 'acme:search_call'.", f"{param}.type")
    if kind == "message":
        role = item.get("role")
        if role not in ROLES:
            raise invalid(f"'{param}.role' must be one of {', '.join(ROLES)}; got {role!r}.",
                          f"{param}.role")
        content = item.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                where = f"{param}.content[{j}]"
                _expect(part, dict, where, "a content part object")
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
        _expect(item["call_id"], str, f"{param}.call_id", "a string")
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


def _tools(value: Any) -> list[Json]:
    if value is None:
        return []
    _expect(value, list, "tools", "an array of tools")
    seen: set[str] = set()
    tools = []
    for i, tool in enumerate(value):
        param = f"tools[{i}]"
        _expect(tool, dict, param, "a tool object")
        if tool.get("type") == "function":
            name = tool.get("name")
            if not isinstance(name, str) or not name:
                raise invalid(f"'{param}.name' is required on a function tool.", f"{param}.name",
                              "missing_required_parameter")
            if name in seen:
                raise invalid(f"'{param}.name' {name!r} is already the name of another tool; "
                              "tool names must be unique.", f"{param}.name", "duplicate_tool")
            seen.add(name)
            params = tool.get("parameters")
            if params is not None:
                _expect(params, dict, f"{param}.parameters", "a JSON Schema object")
                check_parameters(params, f"{param}.parameters")
        elif not isinstance(tool.get("type"), str):
            raise invalid(f"'{param}.type' is required.", f"{param}.type",
                          "missing_required_parameter")
        tools.append(tool)
    return tools


def _echo_tool(tool: Json) -> Json:
    if tool.get("type") != "function":
        return dict(tool)
    return {
        "type": "function",
        "name": tool["name"],
        "description": tool.get("description"),
        "parameters": tool.get("parameters"),
        "strict": tool.get("strict"),
    }


def _tool_choice(value: Any, tools: list[Json]) -> Any:
    if value is None:
        return "auto"
    names = {t.get("name") for t in tools if t.get("type") == "function"}
    if isinstance(value, str):
        if value not in TOOL_CHOICE_MODES:
            raise invalid(f"'tool_choice' must be 'auto', 'required', 'none' or an object; got "
                          f"{value!r}.", "tool_choice")
        if value == "required" and not tools:
            raise invalid("'tool_choice' is 'required' but no tools were given; add 'tools' or "
                          "use 'auto'.", "tool_choice")
        return value
    _expect(value, dict, "tool_choice", "a string or an object")
    kind = value.get("type")
    if kind == "function":
        name = value.get("name")
        if name not in names:
            raise invalid(f"'tool_choice' names the function {name!r}, which is not in 'tools' "
                          f"(known: {', '.join(sorted(map(str, names))) or 'none'}).",
                          "tool_choice", "unknown_tool")
        return {"type": "function", "name": name}
    if kind == "allowed_tools":
        listed = value.get("tools")
        _expect(listed, list, "tool_choice.tools", "an array of tools")
        for i, tool in enumerate(listed):
            if not isinstance(tool, dict) or tool.get("name") not in names:
                raise invalid(f"'tool_choice.tools[{i}]' names a function that is not in 'tools' "
                              f"(known: {', '.join(sorted(map(str, names))) or 'none'}).",
                              f"tool_choice.tools[{i}]", "unknown_tool")
        mode = value.get("mode", "auto")
        if mode not in ("auto", "required"):
            raise invalid(f"'tool_choice.mode' must be 'auto' or 'required'; got {mode!r}.",
                          "tool_choice.mode")
        return {"type": "allowed_tools",
                "tools": [{"type": "function", "name": t["name"]} for t in listed],
                "mode": mode}
    raise invalid(f"'tool_choice.type' must be 'function' or 'allowed_tools'; got {kind!r}.",
                  "tool_choice.type")


def _metadata(value: Any) -> Json:
    _expect(value, dict, "metadata", "an object of string values")
    if len(value) > 16:
        raise invalid(f"'metadata' may hold at most 16 keys; got {len(value)}.", "metadata")
    for key, item in value.items():
        if not isinstance(item, str):
            raise invalid(f"'metadata.{key}' must be a string.", f"metadata.{key}",
                          "invalid_type")
    return dict(value)


def _text(value: Any) -> Json:
    _expect(value, dict, "text", "an object")
    fmt = value.get("format") or {"type": "text"}
    _expect(fmt, dict, "text.format", "an object")
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


def _reasoning(value: Any) -> Json:
    _expect(value, dict, "reasoning", "an object")
    effort = value.get("effort")
    if effort is not None and effort not in ("none", "minimal", "low", "medium", "high", "xhigh"):
        raise invalid(f"'reasoning.effort' {effort!r} is not a reasoning effort; use none, "
                      "minimal, low, medium, high or xhigh.", "reasoning.effort")
    summary = value.get("summary")
    if summary is not None and summary not in ("auto", "concise", "detailed"):
        raise invalid("'reasoning.summary' must be 'auto', 'concise' or 'detailed'.",
                      "reasoning.summary")
    return {"effort": effort, "summary": summary}

