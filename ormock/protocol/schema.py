"""Validation of events against the official Open Responses schema (``openresponses-types``)."""

from __future__ import annotations

from functools import cache
from typing import Any

from ormock.protocol import events as ev
from ormock.protocol.tools.kinds import KINDS

__all__ = ["schema_errors", "validate_compaction", "validate_error", "validate_response"]

_MODELS = {
    ev.CREATED: "ResponseCreatedStreamingEvent",
    ev.QUEUED: "ResponseQueuedStreamingEvent",
    ev.IN_PROGRESS: "ResponseInProgressStreamingEvent",
    ev.COMPLETED: "ResponseCompletedStreamingEvent",
    ev.INCOMPLETE: "ResponseIncompleteStreamingEvent",
    ev.FAILED: "ResponseFailedStreamingEvent",
    ev.ERROR: "ErrorStreamingEvent",
    ev.ITEM_ADDED: "ResponseOutputItemAddedStreamingEvent",
    ev.ITEM_DONE: "ResponseOutputItemDoneStreamingEvent",
    ev.PART_ADDED: "ResponseContentPartAddedStreamingEvent",
    ev.PART_DONE: "ResponseContentPartDoneStreamingEvent",
    ev.TEXT_DELTA: "ResponseOutputTextDeltaStreamingEvent",
    ev.TEXT_DONE: "ResponseOutputTextDoneStreamingEvent",
    ev.ANNOTATION_ADDED: "ResponseOutputTextAnnotationAddedStreamingEvent",
    ev.REFUSAL_DELTA: "ResponseRefusalDeltaStreamingEvent",
    ev.REFUSAL_DONE: "ResponseRefusalDoneStreamingEvent",
    ev.ARGS_DELTA: "ResponseFunctionCallArgumentsDeltaStreamingEvent",
    ev.ARGS_DONE: "ResponseFunctionCallArgumentsDoneStreamingEvent",
    ev.SUMMARY_PART_ADDED: "ResponseReasoningSummaryPartAddedStreamingEvent",
    ev.SUMMARY_PART_DONE: "ResponseReasoningSummaryPartDoneStreamingEvent",
    ev.SUMMARY_DELTA: "ResponseReasoningSummaryDeltaStreamingEvent",
    ev.SUMMARY_DONE: "ResponseReasoningSummaryDoneStreamingEvent",
    ev.REASONING_DELTA: "ResponseReasoningDeltaStreamingEvent",
    ev.REASONING_DONE: "ResponseReasoningDoneStreamingEvent",
}


@cache
def _model(name: str) -> Any:
    import openresponses_types

    return getattr(openresponses_types, name)


def _outside(item: Any, openai_tools: bool) -> bool:
    """An item outside the core schema: an extension item, or (``openai_tools``) one of
    OpenAI's tool-call items, which their own rules check (``ormock.protocol.tools``)."""
    kind = str(item.get("type", "")) if isinstance(item, dict) else ""
    return ev.is_vendor_type(kind) or (openai_tools and kind in KINDS)


def _without_vendor_items(payload: dict[str, Any], openai_tools: bool = False
                          ) -> dict[str, Any]:
    """Extension items are outside the core schema: the item state machine checks them. So
    are OpenAI's tool items, tools and forced tool choices under ``openai_tools``: the
    Response's echo keeps its function tools for the schema to read."""
    item = payload.get("item")
    if _outside(item, openai_tools):
        payload = {**payload, "item": {"type": "message", "id": "-", "status": "completed",
                                       "role": "assistant", "content": []}}
    response = payload.get("response")
    if isinstance(response, dict) and isinstance(response.get("output"), list):
        output = [i for i in response["output"] if not _outside(i, openai_tools)]
        response = {**response, "output": output}
        payload = {**payload, "response": response}
    if openai_tools and isinstance(response, dict):
        payload = {**payload, "response": _function_tools_only(response)}
    return payload


def _function_tools_only(response: dict[str, Any]) -> dict[str, Any]:
    tools = response.get("tools")
    if isinstance(tools, list):
        response = {**response, "tools": [t for t in tools if not isinstance(t, dict)
                                          or t.get("type") == "function"]}
    choice = response.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") not in ("function", "allowed_tools"):
        response = {**response, "tool_choice": "required"}
    elif isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        listed = [t for t in choice.get("tools") or [] if isinstance(t, dict)
                  and t.get("type") == "function"]
        response = {**response, "tool_choice": {**choice, "tools": listed}}
    return response


def _format(error: Any) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"] if not str(p).startswith("function-"))
    more = len(error.errors()) - 1
    tail = f" (and {more} more)" if more else ""
    return f"{where or 'event'}: {first['msg']}{tail}"


def schema_errors(event: dict[str, Any], *, openai_tools: bool = False) -> str | None:
    """None if the event is valid under the official schema, else a one-line reason.

    Vendor-prefixed events are outside the schema and always pass; ``openai_tools``: so are
    OpenAI's tool items, tools and tool choices (a profile that sends them).
    """
    name = _MODELS.get(str(event.get("type")))
    if name is None:
        return None
    try:
        _model(name).model_validate(_without_vendor_items(event, openai_tools))
    except Exception as error:  # pydantic.ValidationError
        return _format(error)
    return None


def validate_response(response: dict[str, Any]) -> str | None:
    """None if ``response`` is a valid Response object under the official schema."""
    try:
        _model("ResponseResource").model_validate(
            _without_vendor_items({"response": response})["response"]
        )
    except Exception as error:
        return _format(error)
    return None


def validate_compaction(resource: dict[str, Any]) -> str | None:
    """None if ``resource`` is a valid ``response.compaction`` under the official schema (its
    ``CompactResource``: what ``POST /v1/responses/compact`` answers)."""
    try:
        _model("CompactResource").model_validate(resource)
    except Exception as error:
        return _format(error)
    return None


def validate_error(envelope: Any) -> str | None:
    """None if ``envelope`` is an Open Responses error body, ``{"error": {"message", "type",
    "param", "code"}}`` (the official ``ErrorPayload``: all four present, ``param`` and
    ``code`` may be null), else a one-line reason."""
    if not isinstance(envelope, dict) or not isinstance(envelope.get("error"), dict):
        return "the body is not an object with an 'error' object"
    try:
        _model("ErrorPayload").model_validate(envelope["error"])
    except Exception as error:
        return "error." + _format(error)
    return None
