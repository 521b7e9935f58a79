"""Reading requests from the journal: the text and tool outputs a request carried, a one-line
description of a request and its answer, and which conditions of the assertion helpers it
fails."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ormock.engine.journal import JournalEntry

__all__ = ["call_outputs", "describe", "input_text", "listing", "mismatch", "plural"]


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def request_input(body: Any) -> list[dict[str, Any]]:
    value = body.get("input") if isinstance(body, dict) else None
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return [i for i in value if isinstance(i, dict)] if isinstance(value, list) else []


def input_text(body: Any) -> str:
    """The text of the request's input messages: what a scenario's ``input_contains`` looks at
    (``ormock.protocol.request.messages_text``), read from a journaled body, valid or not."""
    from ormock.protocol.request import messages_text  # the plugin imports nothing at start-up

    return messages_text(request_input(body))


def call_outputs(body: Any) -> list[str]:
    return [str(i.get("call_id")) for i in request_input(body)
            if i.get("type") == "function_call_output"]


def describe(entry: JournalEntry) -> str:
    """One line: the request and what went back."""
    from ormock.protocol.hints import short  # the plugin imports nothing until a test runs

    body = entry.body if isinstance(entry.body, dict) else {}
    parts = [f"{entry.method} {entry.path}", f"model={body.get('model')!r}",
             f"input={short(input_text(body), 80)}"]
    outputs = call_outputs(body)
    if outputs:
        parts.append(f"tool_outputs={outputs}")
    if body.get("previous_response_id") is not None:
        parts.append(f"previous_response_id={body['previous_response_id']!r}")
    answer = f"-> {entry.status}"
    if entry.response_id:
        answer += f" {entry.response_id}"
    if entry.error:
        answer += f" {entry.error.get('code')}"
    if entry.scenario:
        answer += f" (scenario {entry.scenario!r} step {entry.step})"
    if entry.faults:
        answer += f" faults: {', '.join(map(str, entry.faults))}"
    return " ".join(parts) + " " + answer


def mismatch(entry: JournalEntry, wanted: dict[str, Any]) -> list[str]:
    body = entry.body if isinstance(entry.body, dict) else {}
    reasons = []
    if "input_contains" in wanted and wanted["input_contains"] not in input_text(body):
        reasons.append(f"input does not contain {wanted['input_contains']!r}")
    if "tool_outputs" in wanted:
        got = call_outputs(body)
        missing = [c for c in wanted["tool_outputs"] if c not in got]
        if missing:
            reasons.append(f"no function_call_output for {missing} (it carried {got})")
    if "previous_response_id" in wanted and \
            body.get("previous_response_id") != wanted["previous_response_id"]:
        reasons.append(f"previous_response_id is {body.get('previous_response_id')!r}, not "
                       f"{wanted['previous_response_id']!r}")
    if "model" in wanted and body.get("model") != wanted["model"]:
        reasons.append(f"model is {body.get('model')!r}, not {wanted['model']!r}")
    return reasons


def listing(requests: list[JournalEntry]) -> str:
    if not requests:
        return ""
    return ":\n" + "\n".join(f"  #{i} {describe(e)}" for i, e in enumerate(requests, 1))
