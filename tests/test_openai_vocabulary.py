"""The vocabulary of OpenAI's clients, generated from the installed openai SDK
(``bench/openai_vocabulary.py``): current, and every type of it handled by ormock; OpenAI's
input items taken and checked as the SDK declares them under the ``openai`` profile, and refused
naming that profile under the spec's."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.events import CORE_EVENT_TYPES
from ormock.protocol.openai_items import CALLS, HOSTED, OUTPUTS, SETTINGS, SPEC_TYPES
from ormock.protocol.profile import get_profile
from ormock.protocol.request import parse_request
from ormock.protocol.request_tools import FORCED_TYPES, TOOL_CHOICE_MODES, UNFORCED_TYPES
from ormock.protocol.vocabulary import OPENAI_VOCABULARY, openai_vocabulary
from tests.vocabulary_items import minimal_item

Json = dict[str, Any]
ROOT = Path(__file__).resolve().parent.parent
VOCABULARY = openai_vocabulary()


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("openai_vocabulary", ROOT / "bench" /
                                                  "openai_vocabulary.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_vocabulary_is_the_installed_sdks() -> None:
    generator = _generator()
    fresh = generator.vocabulary()
    committed = json.loads(OPENAI_VOCABULARY.read_text())
    stale = [k for k in fresh if k != "openai_sdk" and committed.get(k) != fresh[k]]
    assert not stale, (
        f"ormock/protocol/openai_vocabulary.json (openai {committed['openai_sdk']}) is stale for "
        f"the installed openai {fresh['openai_sdk']} in {', '.join(stale)}: regenerate it with "
        "`make openai-vocabulary`, then handle what is new")
    if committed["openai_sdk"] == fresh["openai_sdk"]:
        assert OPENAI_VOCABULARY.read_text() == generator.render(fresh)


def test_the_vocabulary_counts() -> None:
    assert len(VOCABULARY["input_items"]) >= 31 and len(VOCABULARY["tools"]) >= 18
    assert len(VOCABULARY["output_items"]) >= 28 and len(VOCABULARY["events"]) >= 59
    assert {"additional_tools", "custom_tool_call", "custom_tool_call_output", "web_search_call",
            "local_shell_call", "tool_search_output"} <= set(VOCABULARY["input_items"])


# -- every type the SDK knows, ormock handles --------------------------------------------------
def _unhandled(known: set[str], handled: set[str]) -> list[str]:
    return sorted(known - handled)


def test_every_input_item_type_of_the_sdk_has_a_meaning() -> None:
    handled = {*SPEC_TYPES, *CALLS, *OUTPUTS, *HOSTED, *SETTINGS}
    missing = _unhandled(set(VOCABULARY["input_items"]), handled)
    assert not missing, (f"the openai SDK knows input item types ormock does not handle: "
                         f"{', '.join(missing)}; give each a meaning in "
                         "ormock/protocol/openai_items.py (CALLS, OUTPUTS, HOSTED, SETTINGS)")


def test_every_tool_type_of_the_sdk_is_known_to_tool_choice() -> None:
    handled = {"function", "custom", "mcp", *UNFORCED_TYPES,
               *(t for types in FORCED_TYPES.values() for t in types)}
    missing = _unhandled(set(VOCABULARY["tools"]), handled)
    assert not missing, (f"the openai SDK knows tool types ormock does not handle: "
                         f"{', '.join(missing)}; say how tool_choice forces each in "
                         "ormock/protocol/request_tools.py (FORCED_TYPES, UNFORCED_TYPES)")


def test_every_tool_choice_form_of_the_sdk_is_taken() -> None:
    assert set(VOCABULARY["tool_choice"]["modes"]) == set(TOOL_CHOICE_MODES)
    handled = {"function", "custom", "mcp", "allowed_tools", *FORCED_TYPES}
    missing = _unhandled(set(VOCABULARY["tool_choice"]["forms"]), handled)
    assert not missing, (f"the openai SDK knows tool_choice forms ormock does not take: "
                         f"{', '.join(missing)}; add them to FORCED_TYPES in "
                         "ormock/protocol/request_tools.py")


def test_every_output_item_type_of_the_sdk_comes_back_as_input() -> None:
    """What a client receives it may send back: every output item type is an input item type
    the openai profile takes."""
    missing = _unhandled(set(VOCABULARY["output_items"]), set(VOCABULARY["input_items"]))
    assert not missing, f"output item types the openai profile cannot take back: {missing}"


def test_every_event_type_of_the_sdk_is_known_to_the_openai_profile() -> None:
    known = get_profile("openai").known_events | CORE_EVENT_TYPES | {
        "response.reasoning_text.delta", "response.reasoning_text.done"}
    missing = _unhandled(set(VOCABULARY["events"]), set(known))
    assert not missing, f"event types the openai profile's checker does not know: {missing}"


ITEM_TYPES = sorted(VOCABULARY["input_items"])


@pytest.mark.parametrize("kind", ITEM_TYPES)
def test_a_minimal_item_of_each_sdk_type_is_taken_under_openai(kind: str) -> None:
    request = parse_request({"model": "m", "input": [minimal_item(kind),
                                                     {"role": "user", "content": "go on"}]})
    get_profile("openai").check_request(request)
    assert request.input[0]["type"] == kind


@pytest.mark.parametrize("kind", sorted(set(VOCABULARY["input_items"]) - SPEC_TYPES))
def test_the_spec_profile_refuses_openais_items_naming_the_openai_profile(kind: str) -> None:
    request = parse_request({"model": "m", "input": [{"role": "user", "content": "hi"},
                                                     minimal_item(kind)]})
    with pytest.raises(OpenResponsesError) as raised:
        get_profile("openresponses").check_request(request)
    error = raised.value
    assert (error.status, error.param, error.code) == (400, "input[1].type", "unsupported_value")
    assert f"'input[1].type' {kind!r} is an OpenAI item type; serve with --profile openai to " \
           "accept it" in error.message


CUSTOM_CALL = {"type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch",
               "input": "*** Begin Patch"}


@pytest.mark.parametrize(("item", "param", "code", "says"), [
    ({**CUSTOM_CALL, "call_id": 5}, "input[0].call_id", "invalid_type",
     "'input[0].call_id' must be a string, not an integer."),
    ({k: v for k, v in CUSTOM_CALL.items() if k != "name"}, "input[0].name",
     "missing_required_parameter", "'input[0].name' is required on a custom_tool_call item."),
    ({"type": "shell_call", "call_id": "c", "action": {"commands": "ls"}},
     "input[0].action.commands", "invalid_type", "must be an array, not a string"),
    ({"type": "apply_patch_call_output", "call_id": "c", "status": "done"}, "input[0].status",
     "invalid_value", "must be one of 'completed', 'failed'; got 'done'"),
    ({"type": "computer_call", "id": "cu_1", "call_id": "c", "pending_safety_checks": [],
      "status": "completed", "action": {"type": "teleport"}}, "input[0].action.type",
     "invalid_value", "'input[0].action.type' must be one of 'click'"),
    ({"type": "additional_tools", "role": "developer", "tools": [{"type": "function"}]},
     "input[0].tools[0].name", "missing_required_parameter", "is required"),
    ({"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": "yes"},
     "input[0].approve", "invalid_type", "must be true or false, not a string"),
])
def test_openai_items_are_checked_as_the_sdk_declares_them(item: Json, param: str, code: str,
                                                            says: str) -> None:
    request = parse_request({"model": "m", "input": [item]})
    with pytest.raises(OpenResponsesError) as raised:
        get_profile("openai").check_request(request)
    error = raised.value
    assert (error.status, error.param, error.code) == (400, param, code), error.message
    assert says in error.message


def test_an_optional_field_sent_as_null_is_taken() -> None:
    item = {**CUSTOM_CALL, "id": None, "namespace": None}
    get_profile("openai").check_request(parse_request({"model": "m", "input": [item]}))


@pytest.mark.parametrize(("tool", "param", "says"), [
    ({"type": "web_search", "search_context_size": "huge"}, "tools[0].search_context_size",
     "must be one of 'low', 'medium', 'high'"),
    ({"type": "mcp"}, "tools[0].server_label", "is required"),
    ({"type": "custom", "name": "p", "format": {"type": "grammar", "syntax": "ebnf",
                                                "definition": "x"}},
     "tools[0].format.syntax", "must be one of 'lark', 'regex'"),
    ({"type": "teleporter"}, "tools[0].type", "is not a tool type of the openai SDK"),
])
def test_openai_tools_are_checked_as_the_sdk_declares_them(tool: Json, param: str,
                                                            says: str) -> None:
    request = parse_request({"model": "m", "input": "hi", "tools": [tool]})
    with pytest.raises(OpenResponsesError) as raised:
        get_profile("openai").check_request(request)
    assert (raised.value.status, raised.value.param) == (400, param), raised.value.message
    assert says in raised.value.message
    get_profile("openresponses").check_request(request)  # the spec's: echoed as given


def test_an_unknown_item_type_names_the_openai_ones() -> None:
    with pytest.raises(OpenResponsesError) as raised:
        parse_request({"model": "m", "input": [{"type": "teleport_call"}]})
    assert raised.value.param == "input[0].type"
    assert "under the openai profile one of the openai SDK's (additional_tools" in \
        raised.value.message
