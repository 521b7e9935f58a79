"""A scenario's items of OpenAI's tool-call types (``web_search_call:``, ``mcp_call:``,
``custom_tool_call:``, ...): their JSON Schema (each key the wire field of the same name) and the
plan each makes (``ormock.protocol.plan.ToolCallPlan``).

What a step may leave out is made: a call id (drawn), an image's ``result`` and its partial
images (``partial_images: N``: small PNGs), an MCP tool's ``input_schema``, a code
interpreter's ``container_id``; ``arguments`` may be a mapping (sent as compact JSON)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ormock.protocol.plan import ToolCallPlan
from ormock.protocol.tools.png import png_base64
from ormock.protocol.types import Json

__all__ = ["TOOL_ITEM_SCHEMAS", "tool_plan"]

_STR = {"type": "string"}
_STRS = {"type": "array", "items": _STR}
_OBJECT = {"type": "object"}
_ID = {"id": _STR}
_CALL = {"id": _STR, "call_id": _STR}


def _item(required: list[str], properties: Json) -> Json:
    return {"type": "object", "additionalProperties": False, "required": required,
            "properties": properties}


_MCP_TOOL = _item(["name"], {"name": _STR, "description": _STR, "input_schema": _OBJECT,
                             "annotations": _OBJECT})
_RESULT = _item([], {"file_id": _STR, "filename": _STR, "score": {"type": "number"},
                     "text": _STR, "attributes": _OBJECT})
_ARGUMENTS = {"type": ["object", "string"]}

TOOL_ITEM_SCHEMAS: dict[str, Json] = {
    "web_search_call": _item(["action"], {**_ID, "action": _item(["type"], {
        "type": {"enum": ["search", "open_page", "find_in_page"]}, "query": _STR,
        "queries": _STRS, "url": _STR, "pattern": _STR,
        "sources": {"type": "array", "items": _item(["url"], {"type": {"const": "url"},
                                                               "url": _STR})}})}),
    "file_search_call": _item(["queries"], {**_ID, "queries": _STRS,
                                            "results": {"type": "array", "items": _RESULT}}),
    "code_interpreter_call": _item(["code"], {**_ID, "code": _STR, "container_id": _STR,
                                              "outputs": {"type": "array", "items": _OBJECT}}),
    "image_generation_call": _item([], {
        **_ID, "result": _STR, "revised_prompt": _STR, "size": _STR, "quality": _STR,
        "background": _STR, "output_format": _STR, "action": _STR,
        "partial_images": {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 3},
                                     {"type": "array", "items": _STR}]}}),
    "mcp_list_tools": _item(["server_label", "tools"], {
        **_ID, "server_label": _STR, "tools": {"type": "array", "items": _MCP_TOOL},
        "error": _STR}),
    "mcp_call": _item(["server_label", "name"], {
        **_ID, "server_label": _STR, "name": _STR, "arguments": _ARGUMENTS,
        "output": {"type": ["string", "null"]}, "error": {"type": ["string", "null"]},
        "approval_request_id": _STR}),
    "mcp_approval_request": _item(["server_label", "name"], {
        **_ID, "server_label": _STR, "name": _STR, "arguments": _ARGUMENTS}),
    "custom_tool_call": _item(["name", "input"], {**_CALL, "name": _STR, "input": _STR,
                                                   "namespace": _STR}),
    "computer_call": _item([], {**_CALL, "action": _OBJECT,
                                "actions": {"type": "array", "items": _OBJECT},
                                "pending_safety_checks": {"type": "array", "items": _OBJECT}}),
    "local_shell_call": _item(["action"], {**_CALL, "action": _item(["command"], {
        "type": {"const": "exec"}, "command": _STRS, "env": _OBJECT,
        "timeout_ms": {"type": "integer"}, "working_directory": _STR, "user": _STR})}),
    "shell_call": _item(["action"], {**_CALL, "environment": _OBJECT, "action": _item(
        ["commands"], {"commands": _STRS, "timeout_ms": {"type": "integer"},
                       "max_output_length": {"type": "integer"}})}),
    "apply_patch_call": _item(["operation"], {**_CALL, "operation": _item(["type", "path"], {
        "type": {"enum": ["create_file", "update_file", "delete_file"]}, "path": _STR,
        "diff": _STR})}),
    "tool_search_call": _item([], {**_CALL, "arguments": _OBJECT,
                                   "execution": {"enum": ["server", "client"]}}),
    "tool_search_output": _item(["tools"], {**_CALL, "tools": {"type": "array",
                                                               "items": _OBJECT},
                                            "execution": {"enum": ["server", "client"]}}),
}


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           separators=(",", ":"))


def _colour(seed: str) -> tuple[int, int, int]:
    digest = hashlib.sha256(seed.encode()).digest()
    return digest[0], digest[1], digest[2]


def tool_plan(kind: str, body: Json) -> ToolCallPlan:
    """The plan of a (schema-valid, rendered) tool item of type ``kind``."""
    fields = {k: v for k, v in body.items() if k != "id"}
    partials: tuple[str, ...] = ()
    if kind in ("mcp_call", "mcp_approval_request"):
        fields["arguments"] = _compact(fields.get("arguments", {}))
    if kind == "mcp_call":
        fields = {"output": None, "error": None, "approval_request_id": None, **fields}
    if kind == "mcp_list_tools":
        fields["tools"] = [{"input_schema": {"type": "object"}, **tool}
                           for tool in fields["tools"]]
    if kind == "code_interpreter_call":
        fields = {"container_id": "cntr_ormock", "outputs": None, **fields}
    if kind == "computer_call":
        fields.setdefault("pending_safety_checks", [])
    if kind == "local_shell_call":
        fields["action"] = {"type": "exec", "env": {}, **fields["action"]}
    if kind in ("tool_search_call", "tool_search_output"):
        fields.setdefault("execution", "server")
        if fields["execution"] == "server":
            fields.setdefault("call_id", None)
    if kind == "tool_search_call":
        fields.setdefault("arguments", {})
    if kind == "image_generation_call":
        wanted = fields.pop("partial_images", 0)
        colour = _colour(str(fields.get("revised_prompt", "")))
        partials = tuple(wanted) if isinstance(wanted, list) else tuple(
            png_base64(16, 16, colour, sharpness=1 + n) for n in range(int(wanted)))
        fields.setdefault("result", png_base64(16, 16, colour))
    return ToolCallPlan(kind, fields, partial_images=partials, id=body.get("id"))
