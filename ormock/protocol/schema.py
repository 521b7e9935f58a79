"""Validation of events against the official Open Responses schema (``openresponses-types``)."""

from __future__ import annotations

from functools import cache
from typing import Any

from ormock.protocol import events as ev

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


def _without_vendor_items(payload: dict[str, Any]) -> dict[str, Any]:
    """Extension items are outside the core schema: the item state machine checks them."""
    item = payload.get("item")
    if isinstance(item, dict) and ev.is_vendor_type(str(item.get("type", ""))):
        payload = {**payload, "item": {"type": "message", "id": "-", "status": "completed",
                                       "role": "assistant", "content": []}}
    response = payload.get("response")
    if isinstance(response, dict) and isinstance(response.get("output"), list):
        output = [
            i for i in response["output"]
            if not (isinstance(i, dict) and ev.is_vendor_type(str(i.get("type", ""))))
        ]
        payload = {**payload, "response": {**response, "output": output}}
    return payload


def _format(error: Any) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"] if not str(p).startswith("function-"))
    more = len(error.errors()) - 1
    tail = f" (and {more} more)" if more else ""
    return f"{where or 'event'}: {first['msg']}{tail}"


def schema_errors(event: dict[str, Any]) -> str | None:
    """None if the event is valid under the official schema, else a one-line reason.

    Vendor-prefixed events are outside the schema and always pass.
    """
    name = _MODELS.get(str(event.get("type")))
    if name is None:
        return None
    try:
        _model(name).model_validate(_without_vendor_items(event))
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
