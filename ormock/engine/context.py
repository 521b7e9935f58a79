"""A request's context: what the model sees through ``previous_response_id`` (the chain's
inputs and outputs, then the new input), and its tokens, counted once per item and kept."""

from __future__ import annotations

from ormock.engine.store.responses import ResponseStore, Stored
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.openai_items import CALLS, OUTPUTS, call_outputs
from ormock.protocol.reasoning import reasoning_key, restore
from ormock.protocol.request import ResponseRequest, item_text
from ormock.protocol.request import item_tokens as compaction_tokens
from ormock.protocol.tokens import count_tokens
from ormock.protocol.types import Json

__all__ = ["check_call_outputs", "context_of", "context_tokens", "item_tokens", "restored"]


def context_of(
    responses: ResponseStore, request: ResponseRequest, local: ResponseStore | None = None,
    owner: str | None = None,
) -> tuple[list[Json], Stored | None]:
    """The items the model sees (the chain's inputs and outputs, then the new input) and the
    parent; a ``previous_response_id`` nothing stored is a 400, and so is a deleted one or
    another API key's (``owner``: the sha256 of the caller's, ``ormock.engine.stateful``)."""
    previous = request.previous_response_id
    if previous is None:
        return list(request.input), None
    parent = responses.visible(previous, owner)
    if parent is None and local is not None:
        parent = local.get(previous)
    if parent is None:
        raise OpenResponsesError(
            f"Previous response with id {previous!r} not found: this server answers only "
            "for stored responses it produced (was it created with store: false, or on "
            "another server or namespace?).",
            type="invalid_request",
            code="previous_response_not_found",
            param="previous_response_id",
        )
    context = [*parent.context, *parent.response["output"]]
    check_call_outputs(context, request.input)
    return [*context, *request.input], parent

def restored(request: ResponseRequest, context: list[Json], seed: int
             ) -> tuple[list[Json], int]:
    """The context with the request's reasoning items restored from their encrypted content
    (``ormock.protocol.reasoning``), and the tokens that adds; under ``store: false`` a
    reasoning item's id the context does not hold, sent without its encrypted content, is a
    404. Asked only of a request that sends one (``ResponseRequest.sends_reasoning``)."""
    new = request.input
    before = context[:len(context) - len(new)]
    items = restore(new, reasoning_key(seed), stored=request.echo.get("store") is not False,
                    known={item.get("id") for item in before})
    if items is None:
        return context, 0
    added = sum(item_tokens([now]) - item_tokens([sent])
                for now, sent in zip(items, new, strict=True) if now is not sent)
    return [*before, *items], added


def context_tokens(request: ResponseRequest, parent: Stored | None) -> int:
    """The tokens of the context items: the parent's are kept, never counted again."""
    new = request.input_tokens
    if parent is None:
        return new
    if parent.chain_tokens is None:  # what a continuation of it adds: its output
        parent.chain_tokens = parent.context_tokens + item_tokens(parent.response["output"])
    return parent.chain_tokens + new


def item_tokens(items: list[Json]) -> int:
    # a compaction item counts what it stands for (``ormock.protocol.compaction``)
    return sum(compaction_tokens(item) if item.get("type") == "compaction"
               else count_tokens(item_text(item)) for item in items)


def check_call_outputs(context: list[Json], new_input: list[Json]) -> None:
    """A continuation's tool outputs (``function_call_output``, ``custom_tool_call_output``,
    ...: ``ormock.protocol.openai_items``) must answer calls the chain or its own input made,
    and all the calls of the previous response that are still open must be answered at once."""
    calls = {i.get(key): kind for i in (*context, *new_input)
             if (key := CALLS.get(kind := str(i.get("type")))) is not None}
    answered = {call_id for _, _, call_id in call_outputs(context)}
    given = list(call_outputs(new_input))
    for index, item, call_id in given:
        if call_id not in calls:
            key = OUTPUTS[item["type"]]
            raise OpenResponsesError(
                f"No tool call found for {item['type'].replace('_', ' ')} with {key} "
                f"{call_id!r}: the previous responses made calls "
                f"{', '.join(sorted(map(str, calls.keys() - answered))) or '(none)'}.",
                code="invalid_value",
                param=f"input[{index}].{key}",
            )
    pending = calls.keys() - answered - {call_id for _, _, call_id in given}
    if given and pending:
        first = sorted(map(str, pending))[0]
        raise OpenResponsesError(
            f"No tool output found for {calls[first].replace('_', ' ')} {first!r}: answer "
            "every pending tool call of the previous response in one request.",
            code="missing_tool_output",
            param="input",
        )
