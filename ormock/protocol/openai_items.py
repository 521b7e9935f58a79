"""The input items OpenAI's clients send beyond the Open Responses spec, and what each means.

The openai SDK's input item union (``ormock.protocol.vocabulary``) holds more than the spec's
message, function_call, function_call_output, reasoning, item_reference and compaction: the
calls and outputs of the tools a client runs (custom, computer, local shell, shell, apply_patch,
tool search, programs), the items of hosted tools a provider ran, sent back as context (web
search, file search, code interpreter, image generation, MCP), and a few that configure the turn
(``additional_tools``, ``configuration_update``, ``compaction_trigger``).

Each is taken under the ``openai`` profile once it has a meaning here: a client tool's call
(``CALLS``: where its call id is), a tool output answering one (``OUTPUTS``), a hosted tool's item
(``HOSTED``) or a turn's setting (``SETTINGS``). Outputs answer calls as function_call_output
answers function_call: a continuation's outputs must answer calls of its chain, scenario steps
match their call ids (``function_call_output``) and templates read their text
(``request.tool_outputs``). ``tests/test_openai_vocabulary.py`` names any item type of the SDK
that has no meaning here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from functools import cache

from ormock.protocol.types import Json
from ormock.protocol.vocabulary import check_model, openai_input_types, openai_vocabulary

__all__ = ["CALLS", "HOSTED", "OUTPUTS", "SETTINGS", "call_outputs", "check_openai_item",
           "openai_only_types", "output_text"]

# a call the client runs, and the key of its call id
CALLS = {"function_call": "call_id", "custom_tool_call": "call_id", "computer_call": "call_id",
         "local_shell_call": "call_id", "shell_call": "call_id", "apply_patch_call": "call_id",
         "tool_search_call": "call_id", "program": "call_id"}
# a tool output, and the key of the call id it answers (a local shell output names its call by
# ``id``)
OUTPUTS = {"function_call_output": "call_id", "custom_tool_call_output": "call_id",
           "computer_call_output": "call_id", "local_shell_call_output": "id",
           "shell_call_output": "call_id", "apply_patch_call_output": "call_id",
           "tool_search_output": "call_id", "program_output": "call_id"}
# a hosted tool's item: the provider ran it; sent back, it is context
HOSTED = frozenset({"web_search_call", "file_search_call", "code_interpreter_call",
                    "image_generation_call", "mcp_list_tools", "mcp_call",
                    "mcp_approval_request", "mcp_approval_response"})
# what sets up the turn: tools offered as an item, a configuration change, a compaction asked for
SETTINGS = frozenset({"additional_tools", "configuration_update", "compaction_trigger"})
# the spec's own item types, checked by ``ormock.protocol.input_items`` under every profile
SPEC_TYPES = frozenset({"message", "function_call", "function_call_output", "reasoning",
                        "item_reference", "compaction"})


@cache
def openai_only_types() -> frozenset[str]:
    """The SDK's input item types beyond the spec's that have a meaning here: what the
    ``openai`` profile takes."""
    handled = {*CALLS, *OUTPUTS, *HOSTED, *SETTINGS}
    return frozenset(t for t in openai_input_types() - SPEC_TYPES if t in handled)


def check_openai_item(item: Json, param: str) -> None:
    """An OpenAI-only input item checked as the SDK declares its type (400 naming the field)."""
    check_model(item, openai_vocabulary()["input_items"][item["type"]], param)


def call_outputs(items: Iterable[Json]) -> Iterator[tuple[int, Json, str | None]]:
    """The tool outputs among ``items``: each one's index, the item, and the call id it
    answers."""
    for index, item in enumerate(items):
        key = OUTPUTS.get(item.get("type"))  # type: ignore[arg-type]
        if key is not None:
            value = item.get(key)
            yield index, item, value if isinstance(value, str) else None


def output_text(output: object) -> str:
    """A tool output's text: a string as it is, content parts' texts one per line, anything
    else as JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(p, dict) for p in output):
        texts = [str(p.get("text")) for p in output if isinstance(p.get("text"), str)]
        if texts:
            return "\n".join(texts)
    return json.dumps(output)
