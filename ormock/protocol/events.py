"""The Open Responses streaming event catalogue: wire names and what each kind of event is."""

from __future__ import annotations

__all__ = [
    "CORE_EVENT_TYPES",
    "LIFECYCLE_EVENTS",
    "TERMINAL_EVENTS",
    "is_vendor_type",
]

CREATED = "response.created"
QUEUED = "response.queued"
IN_PROGRESS = "response.in_progress"
COMPLETED = "response.completed"
INCOMPLETE = "response.incomplete"
FAILED = "response.failed"
ERROR = "error"

ITEM_ADDED = "response.output_item.added"
ITEM_DONE = "response.output_item.done"
PART_ADDED = "response.content_part.added"
PART_DONE = "response.content_part.done"
TEXT_DELTA = "response.output_text.delta"
TEXT_DONE = "response.output_text.done"
ANNOTATION_ADDED = "response.output_text.annotation.added"
REFUSAL_DELTA = "response.refusal.delta"
REFUSAL_DONE = "response.refusal.done"
ARGS_DELTA = "response.function_call_arguments.delta"
ARGS_DONE = "response.function_call_arguments.done"
SUMMARY_PART_ADDED = "response.reasoning_summary_part.added"
SUMMARY_PART_DONE = "response.reasoning_summary_part.done"
SUMMARY_DELTA = "response.reasoning_summary_text.delta"
SUMMARY_DONE = "response.reasoning_summary_text.done"
REASONING_DELTA = "response.reasoning.delta"
REASONING_DONE = "response.reasoning.done"

# terminal event type -> the response status it carries
TERMINAL_EVENTS: dict[str, str] = {
    COMPLETED: "completed",
    INCOMPLETE: "incomplete",
    FAILED: "failed",
}
LIFECYCLE_EVENTS = frozenset({CREATED, QUEUED, IN_PROGRESS, *TERMINAL_EVENTS})

# the deltas of a content part's text, and every delta (a function call's arguments too)
TEXT_DELTAS = frozenset({TEXT_DELTA, REFUSAL_DELTA, REASONING_DELTA, SUMMARY_DELTA})
TEXT_DONES = frozenset({TEXT_DONE, REFUSAL_DONE, REASONING_DONE, SUMMARY_DONE})
DELTAS = TEXT_DELTAS | {ARGS_DELTA}
# text-like deltas: delta type -> (done type, field of the done event holding the whole text)
TEXT_STREAMS: dict[str, tuple[str, str]] = {
    TEXT_DELTA: (TEXT_DONE, "text"),
    REFUSAL_DELTA: (REFUSAL_DONE, "refusal"),
    REASONING_DELTA: (REASONING_DONE, "text"),
}
# content part type -> the field of the part holding its text
PART_TEXT_FIELD: dict[str, str] = {
    "output_text": "text",
    "refusal": "refusal",
    "reasoning_text": "text",
    "summary_text": "text",
    "text": "text",
}
# which delta belongs to which content part type
DELTA_PART_TYPE: dict[str, str] = {
    TEXT_DELTA: "output_text",
    TEXT_DONE: "output_text",
    ANNOTATION_ADDED: "output_text",
    REFUSAL_DELTA: "refusal",
    REFUSAL_DONE: "refusal",
    REASONING_DELTA: "reasoning_text",
    REASONING_DONE: "reasoning_text",
}

CORE_EVENT_TYPES = frozenset(
    {
        *LIFECYCLE_EVENTS,
        ERROR,
        ITEM_ADDED,
        ITEM_DONE,
        PART_ADDED,
        PART_DONE,
        TEXT_DELTA,
        TEXT_DONE,
        ANNOTATION_ADDED,
        REFUSAL_DELTA,
        REFUSAL_DONE,
        ARGS_DELTA,
        ARGS_DONE,
        SUMMARY_PART_ADDED,
        SUMMARY_PART_DONE,
        SUMMARY_DELTA,
        SUMMARY_DONE,
        REASONING_DELTA,
        REASONING_DONE,
    }
)


def is_vendor_type(type_: str) -> bool:
    """Extension events and items carry a vendor prefix: ``acme:trace``."""
    prefix, sep, name = type_.partition(":")
    return bool(sep and prefix and name)
