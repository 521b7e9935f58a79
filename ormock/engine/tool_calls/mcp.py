"""The embedded default's remote MCP calls: ``mcp_list_tools`` the first time a server is used
in a conversation (its tools: the tool's ``allowed_tools``, or two of its own), then
``mcp_approval_request`` when the tool's ``require_approval`` asks for it (the default), else
``mcp_call`` and a message using its output; and ``mcp_call`` once the client approves a
request with an ``mcp_approval_response`` (a message saying so when it refuses)."""

from __future__ import annotations

import json
from typing import Any

from ormock.engine.schema_values import value_for
from ormock.engine.tool_calls.asked import Asked, Planned
from ormock.protocol.plan import ItemPlan, ToolCallPlan
from ormock.protocol.types import Json

__all__ = ["answer_approvals", "mcp"]

_QUERY = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
_URL = {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}
_OWN_TOOLS: tuple[Json, ...] = (
    {"name": "search", "description": "Search the server's documents.", "input_schema": _QUERY},
    {"name": "fetch", "description": "Fetch one document by its URL.", "input_schema": _URL},
)


def server_tools(tool: Json) -> list[Json]:
    """What ``mcp_list_tools`` lists for this server: its ``allowed_tools`` (names, or
    ``{"tool_names": [...]}``), each taking a query, else two tools of its own."""
    allowed = tool.get("allowed_tools")
    names = allowed.get("tool_names") if isinstance(allowed, dict) else allowed
    if isinstance(names, list) and names:
        return [{"name": str(name), "description": f"The {name} tool of "
                 f"{tool.get('server_label')}.", "input_schema": _QUERY} for name in names]
    return [dict(t) for t in _OWN_TOOLS]


def needs_approval(tool: Json, name: str) -> bool:
    """Whether ``require_approval`` asks the client before ``name`` runs: ``never`` does not,
    a filter by the names it lists under ``never`` / ``always``, anything else (and no
    setting: OpenAI's default) does."""
    rule: Any = tool.get("require_approval")
    if rule == "never":
        return False
    if isinstance(rule, dict):
        never = (rule.get("never") or {}).get("tool_names") or []
        always = (rule.get("always") or {}).get("tool_names") or []
        if name in always:
            return True
        if name in never or (never and not always):
            return False
    return True


def _listed(label: str, context: list[Json]) -> bool:
    return any(i.get("type") == "mcp_list_tools" and i.get("server_label") == label
               for i in context)


def _output(asked: Asked, name: str) -> str:
    return json.dumps({"result": asked.prose.sentence(), "tool": name})


def mcp(tool: Json, asked: Asked) -> Planned:
    label = str(tool.get("server_label"))
    tools = server_tools(tool)
    items: list[ItemPlan] = []
    if not _listed(label, asked.context):
        items.append(ToolCallPlan("mcp_list_tools", {"server_label": label, "tools": tools}))
    lowered = asked.text.lower()
    named = asked.mcp_tool or next((t["name"] for t in tools if t["name"].lower() in lowered),
                                   tools[0]["name"])
    schema = next((t["input_schema"] for t in tools if t["name"] == named), _QUERY)
    arguments = json.dumps(value_for(schema, asked.faker, hints={"query": asked.text[:80]}))
    call = {"server_label": label, "name": named, "arguments": arguments}
    if needs_approval(tool, named):
        items.append(ToolCallPlan("mcp_approval_request", call))
        return Planned(items)  # the client approves or refuses it first
    output = _output(asked, named)
    items.append(ToolCallPlan("mcp_call", {**call, "output": output, "error": None,
                                           "approval_request_id": None}))
    return Planned(items, f"{label}'s {named} answered: {output}")


def answer_approvals(asked: Asked) -> Planned | None:
    """The answer to the ``mcp_approval_response`` items after the user's message: the approved
    calls made and their outputs said, the refused ones said; None when there is none."""
    responses = [i for i in asked.after if i.get("type") == "mcp_approval_response"]
    if not responses:
        return None
    requests = {i.get("id"): i for i in asked.context if i.get("type") == "mcp_approval_request"}
    items: list[ItemPlan] = []
    said = []
    for response in responses:
        request = requests.get(response.get("approval_request_id"))
        if request is None:
            continue
        label, name = request.get("server_label"), request.get("name")
        if not response.get("approve"):
            said.append(f"The call of {name} on {label} was not approved, so it did not run.")
            continue
        output = _output(asked, str(name))
        items.append(ToolCallPlan("mcp_call", {
            "server_label": label, "name": name, "arguments": request.get("arguments", "{}"),
            "output": output, "error": None, "approval_request_id": request.get("id")}))
        said.append(f"{label}'s {name} answered: {output}")
    return Planned(items, " ".join(said)) if said else None
