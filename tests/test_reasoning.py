"""Reasoning sealed into ``encrypted_content`` and read back (``ormock.protocol.reasoning``), and
what a request's ``tool_choice`` asks of the answer (``ToolDemand``)."""

from __future__ import annotations

from typing import Any

import pytest

from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.reasoning import reasoning_key, restore, seal, unseal
from ormock.protocol.request import parse_request
from ormock.protocol.request_tools import ToolDemand

KEY = reasoning_key(0)
WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
PATCH = {"type": "custom", "name": "apply_patch"}
SEARCH = {"type": "web_search"}
DOCS = {"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example"}


def test_sealed_reasoning_reads_back_and_refuses_changes() -> None:
    sealed = seal(KEY, ["Short."], ["Long thought, with ünïcode."])
    assert unseal(KEY, sealed) == (["Short."], ["Long thought, with ünïcode."])
    assert seal(KEY, ["Short."], []) == seal(reasoning_key(0), ["Short."], [])  # deterministic
    body, tag = sealed.rsplit(":", 1)
    for changed, why in ((f"{body[:-1]}A:{tag}", "tag does not match"),
                         (seal(reasoning_key(1), ["Short."], []), "another server"),
                         (f"{body}:@@", "not valid base64"),
                         ("gAAAAAB-openai", "not ormock's")):
        with pytest.raises(ValueError, match=why):
            unseal(KEY, changed)


def test_restore_fills_the_item_and_keeps_foreign_content() -> None:
    sealed = seal(KEY, ["Sum."], ["Thought."])
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": sealed},
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "opaque"}]
    restored = restore(items, KEY, stored=False, known=())
    assert restored is not None and restored[2] is items[2] and restored[0] is items[0]
    assert restored[1]["summary"] == [{"type": "summary_text", "text": "Sum."}]
    assert restored[1]["content"] == [{"type": "reasoning_text", "text": "Thought."}]
    assert restore(items[:1], KEY, stored=False, known=()) is None


def test_restore_refuses_a_changed_value_and_an_unknown_unstored_id() -> None:
    body, tag = seal(KEY, ["Sum."], []).rsplit(":", 1)
    changed = [{"type": "reasoning", "id": "rs_1", "summary": [],
                "encrypted_content": f"{body}x:{tag}"}]
    with pytest.raises(OpenResponsesError) as raised:
        restore(changed, KEY, stored=True, known=())
    assert (raised.value.status, raised.value.code, raised.value.param) == (
        400, "invalid_encrypted_content", "input[0].encrypted_content")
    assert raised.value.message.startswith("The encrypted content for item 'rs_1' could not "
                                           "be verified: ")
    anonymous = [{"role": "user", "content": "hi"}, {**changed[0], "id": None}]
    with pytest.raises(OpenResponsesError) as unnamed:  # no id: named by where it is
        restore(anonymous, KEY, stored=True, known=())
    assert unnamed.value.message.startswith("The encrypted content of the reasoning item "
                                            "input[1] could not be verified")
    bare = [{"type": "reasoning", "id": "rs_9", "summary": []}]
    assert restore(bare, KEY, stored=True, known=()) is None  # stored: looked up as before
    assert restore(bare, KEY, stored=False, known={"rs_9"}) is None  # the context holds it
    with pytest.raises(OpenResponsesError) as missing:
        restore(bare, KEY, stored=False, known=())
    assert (missing.value.status, missing.value.param) == (404, "input[0].id")
    assert missing.value.message.startswith("Item with id 'rs_9' not found. Items are not "
                                            "persisted when `store` is set to false.")


@pytest.mark.parametrize(("tools", "choice", "demand"), [
    ([WEATHER, SEARCH], None, ToolDemand(False, (WEATHER, SEARCH))),
    ([WEATHER, SEARCH], "required", ToolDemand(True, (WEATHER, SEARCH))),
    ([WEATHER, SEARCH], "none", ToolDemand(False, ())),
    ([], "auto", ToolDemand(False, ())),
    ([WEATHER, PATCH], {"type": "custom", "name": "apply_patch"},
     ToolDemand(True, (PATCH,), PATCH)),
    ([WEATHER, SEARCH], {"type": "web_search"}, ToolDemand(True, (SEARCH,), SEARCH)),
    ([DOCS], {"type": "mcp", "server_label": "docs", "name": "search"},
     ToolDemand(True, (DOCS,), DOCS, "search")),
    ([WEATHER, PATCH, SEARCH], {"type": "allowed_tools", "mode": "required",
                                "tools": [{"type": "custom", "name": "apply_patch"},
                                          {"type": "web_search"}]},
     ToolDemand(True, (PATCH, SEARCH))),
])
def test_the_tool_demand_of_each_choice(tools: list[dict[str, Any]], choice: Any,
                                        demand: ToolDemand) -> None:
    body: dict[str, Any] = {"model": "m", "input": "hi", "tools": tools}
    if choice is not None:
        body["tool_choice"] = choice
    assert parse_request(body).tool_demand == demand


def test_tools_of_an_additional_tools_item_are_offered() -> None:
    choice = {"type": "function", "name": "get_weather"}
    offered = {"type": "additional_tools", "role": "developer", "tools": [WEATHER]}
    request = parse_request({"model": "m", "tool_choice": choice,
                             "input": [offered, {"role": "user", "content": "hi"}]})
    assert request.tool_demand == ToolDemand(True, (WEATHER,), WEATHER)
