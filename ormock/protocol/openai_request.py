"""What a request holds beyond the Open Responses spec in OpenAI's vocabulary, taken or refused
as a profile says (``Profile.openai_requests``).

Beyond the spec are: an input item of one of the openai SDK's other types
(``ormock.protocol.openai_items``), a tool of a type other than ``function``, and a
``tool_choice`` form other than a function or ``allowed_tools`` of functions. A profile that
takes OpenAI's requests (``openai``) checks each as the SDK declares it (``ormock.protocol.
vocabulary``) and refuses a tool type the SDK does not know (a vendor-prefixed one aside); any
other profile refuses the items and the ``tool_choice`` forms, saying they are OpenAI's, and
echoes other tools as given, as it always has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.events import is_vendor_type
from ormock.protocol.openai_items import check_openai_item, openai_only_types
from ormock.protocol.request_tools import check_tools
from ormock.protocol.vocabulary import check_model, openai_tool_types, openai_vocabulary

if TYPE_CHECKING:
    from ormock.protocol.request import ResponseRequest

__all__ = ["beyond_spec", "check_openai"]

Refuse = Callable[[str, str, str], OpenResponsesError]  # message, param, code


def beyond_spec(request: ResponseRequest) -> list[str]:
    """The params of what the request holds beyond the spec: ``input[i]``, ``tools[i]``,
    ``tool_choice``."""
    found: list[str] = []
    openai_types = openai_only_types()
    for index, item in enumerate(request.input):
        if item.get("type") in openai_types:
            found.append(f"input[{index}]")
    for index, tool in enumerate(request.tools):
        if tool.get("type") != "function":
            found.append(f"tools[{index}]")
    choice = request.tool_choice
    if isinstance(choice, dict) and _openai_choice(choice) is not None:
        found.append("tool_choice")
    return found


def _openai_choice(choice: dict[str, object]) -> str | None:
    """Where a checked ``tool_choice`` is OpenAI's (the param of its type), or None."""
    if choice["type"] == "function":
        return None
    if choice["type"] != "allowed_tools":
        return "tool_choice.type"
    entries = choice["tools"]
    assert isinstance(entries, list)
    return next((f"tool_choice.tools[{i}].type" for i, entry in enumerate(entries)
                 if entry.get("type", "function") != "function"), None)


def check_openai(request: ResponseRequest, parts: list[str], profile: str, takes: bool,
                 refuse: Refuse) -> None:
    """Check (``takes``) or refuse what the request holds beyond the spec (``parts``:
    ``beyond_spec``) under the profile named ``profile``."""
    for part in parts:
        if part == "tool_choice":
            where = _openai_choice(request.tool_choice)
            if not takes and where is not None:
                kind = request.tool_choice["type"] if where == "tool_choice.type" else \
                    "allowed_tools of non-function tools"
                raise refuse(f"'{where}' {kind!r} is an OpenAI tool_choice form; serve with "
                             f"--profile openai to accept it (the {profile} profile takes "
                             "auto, required, none, a function, or allowed_tools of functions).",
                             where, "unsupported_value")
            continue
        section, index = part.rstrip("]").split("[")
        if section == "input":
            item = request.input[int(index)]
            if not takes:
                raise refuse(f"'{part}.type' {item['type']!r} is an OpenAI item type; serve "
                             f"with --profile openai to accept it (the {profile} profile takes "
                             "the Open Responses item types: compaction, function_call, "
                             "function_call_output, item_reference, message, reasoning, or a "
                             "vendor-prefixed type).", f"{part}.type", "unsupported_value")
            check_openai_item(item, part)
            if item["type"] == "additional_tools":
                check_tools(item["tools"], param=f"{part}.tools")
        elif takes:
            _check_tool(request.tools[int(index)], part, profile, refuse)


def _check_tool(tool: dict[str, object], param: str, profile: str, refuse: Refuse) -> None:
    kind = tool.get("type")
    if kind in openai_tool_types():
        check_model(tool, openai_vocabulary()["tools"][kind], param)
    elif not (isinstance(kind, str) and is_vendor_type(kind)):
        raise refuse(f"'{param}.type' {kind!r} is not a tool type of the openai SDK; use one of "
                     f"{', '.join(sorted(openai_tool_types()))}, or a vendor-prefixed type "
                     f"(the {profile} profile checks tools as OpenAI does).", f"{param}.type",
                     "unsupported_value")
