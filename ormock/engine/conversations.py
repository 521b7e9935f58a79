"""Conversations (``/v1/conversations``): durable lists of items that ``POST /v1/responses``
with ``conversation`` reads as its context and appends its input and output to.

Everything lives in the engine's store (``ormock.engine.store``), so conversations work on every
backend (memory, an SQLite file across restarts) and per namespace: kind ``"conversation"``
(key: the id; value: the Conversation JSON) and kind ``"conversation_item"`` (key:
``<conversation id>/<item id>``; value: the item JSON). Items of a conversation are kept in write
order, which is the conversation's order: each is written once, when added. Ids (``conv_...``,
``msg_...``, ...) and ``created_at`` come from the engine's seeded ids and clock.

Every function here expects the caller to hold ``engine.lock`` (the server's endpoints take it;
``Engine.answer`` holds it while it answers), so that a read-then-write (adding items, deleting a
conversation and its items) is not interleaved with another request of the namespace.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ormock.engine.context import item_tokens
from ormock.protocol.errors import OpenResponsesError, invalid
from ormock.protocol.fields import INCLUDABLE, metadata
from ormock.protocol.request import ResponseRequest, parse_items
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["CONVERSATION_KIND", "INCLUDABLE", "ITEM_KIND", "MAX_ITEMS", "Joined",
           "add_items", "create_conversation", "delete_conversation", "delete_item",
           "get_conversation", "get_item", "join_conversation", "list_items",
           "update_conversation"]

CONVERSATION_KIND = "conversation"
ITEM_KIND = "conversation_item"
MAX_ITEMS = 20  # items one create request may add (the openai SDK's docstrings)
_ID_PREFIXES = {"message": "msg", "function_call": "fc", "reasoning": "rs"}
_PAGE = 500


# -- conversations ----------------------------------------------------------------------------
def create_conversation(engine: Engine, body: Any) -> Json:
    """``POST /v1/conversations``: a new conversation with ``metadata`` and up to 20 ``items``."""
    body = _object(body)
    metadata = _metadata(body.get("metadata"))
    raw_items = body.get("items")
    items = parse_items(raw_items, "items", MAX_ITEMS) if raw_items is not None else []
    conversation: Json = {"id": engine.ids.new("conv"), "object": "conversation",
                          "created_at": engine.clock.now(), "metadata": metadata}
    prepared = _prepare(engine, conversation["id"], items, "items")
    _put(engine, conversation)
    _append(engine, conversation["id"], prepared)
    return conversation


def get_conversation(engine: Engine, conversation_id: str,
                     param: str = "conversation_id") -> Json:
    """The conversation; one never created here, or deleted, is a 404 naming ``param``."""
    value = engine.backend.get(CONVERSATION_KIND, conversation_id)
    if value is None:
        raise OpenResponsesError(
            f"Conversation with id {conversation_id!r} not found: it was never created on this "
            "server and namespace, or it was deleted.",
            type="not_found", code="conversation_not_found", param=param,
        )
    found: Json = json.loads(value)
    return found


def update_conversation(engine: Engine, conversation_id: str, body: Any) -> Json:
    """``POST /v1/conversations/{id}``: its ``metadata`` replaced (null: emptied)."""
    body = _object(body)
    conversation = get_conversation(engine, conversation_id)
    if "metadata" not in body:
        raise invalid("'metadata' is required: the metadata that replaces the conversation's "
                      "(null empties it).", "metadata", "missing_required_parameter")
    conversation["metadata"] = _metadata(body["metadata"])
    _put(engine, conversation)
    return conversation


def delete_conversation(engine: Engine, conversation_id: str) -> Json:
    """``DELETE /v1/conversations/{id}``: the conversation and its items go."""
    get_conversation(engine, conversation_id)
    for key, _ in list(_pages(engine, conversation_id)):
        engine.backend.delete(ITEM_KIND, key)
    engine.backend.delete(CONVERSATION_KIND, conversation_id)
    return {"id": conversation_id, "object": "conversation.deleted", "deleted": True}


# -- items ------------------------------------------------------------------------------------
def add_items(engine: Engine, conversation_id: str, body: Any,
              query: Mapping[str, Sequence[str]]) -> Json:
    """``POST /v1/conversations/{id}/items``: up to 20 ``items`` appended; the list of them."""
    _include(query)
    get_conversation(engine, conversation_id)
    body = _object(body)
    if "items" not in body:
        raise invalid("'items' is required: an array of up to 20 items to add.", "items",
                      "missing_required_parameter")
    items = parse_items(body["items"], "items", MAX_ITEMS)
    prepared = _prepare(engine, conversation_id, items, "items")
    _append(engine, conversation_id, prepared)
    return _list(prepared, has_more=False)


def list_items(engine: Engine, conversation_id: str,
               query: Mapping[str, Sequence[str]]) -> Json:
    """``GET /v1/conversations/{id}/items``: a cursor page (``after``, ``limit`` 1..100, default
    20; ``order`` ``desc``, the default, newest first, or ``asc``)."""
    _include(query)
    get_conversation(engine, conversation_id)
    limit_text = _one(query, "limit")
    limit = 20
    if limit_text is not None:
        try:
            limit = int(limit_text)
        except ValueError:
            raise invalid(f"'limit' must be an integer between 1 and 100; got {limit_text!r}.",
                          "limit", "invalid_type") from None
        if not 1 <= limit <= 100:
            raise invalid(f"'limit' must be between 1 and 100; got {limit}.", "limit")
    order = _one(query, "order") or "desc"
    if order not in ("asc", "desc"):
        raise invalid(f"'order' must be 'asc' or 'desc'; got {order!r}.", "order")
    after = _one(query, "after")
    cursor = None
    if after is not None:
        cursor = _key(conversation_id, after)
        if engine.backend.get(ITEM_KIND, cursor) is None:
            raise invalid(f"'after' must be the id of an item of conversation "
                          f"{conversation_id!r}; {after!r} is not (was it deleted?).", "after")
    page = engine.backend.list(ITEM_KIND, prefix=_key(conversation_id, ""), after=cursor,
                               limit=limit + 1, reverse=order == "desc")
    items = [json.loads(value) for _, value in page[:limit]]
    return _list(items, has_more=len(page) > limit)


def get_item(engine: Engine, conversation_id: str, item_id: str,
             query: Mapping[str, Sequence[str]]) -> Json:
    """``GET /v1/conversations/{id}/items/{item_id}``."""
    _include(query)
    get_conversation(engine, conversation_id)
    value = engine.backend.get(ITEM_KIND, _key(conversation_id, item_id))
    if value is None:
        raise _item_not_found(conversation_id, item_id)
    item: Json = json.loads(value)
    return item


def delete_item(engine: Engine, conversation_id: str, item_id: str) -> Json:
    """``DELETE /v1/conversations/{id}/items/{item_id}``: the conversation, as it is after."""
    conversation = get_conversation(engine, conversation_id)
    if not engine.backend.delete(ITEM_KIND, _key(conversation_id, item_id)):
        raise _item_not_found(conversation_id, item_id)
    return conversation


# -- responses in a conversation --------------------------------------------------------------
class Joined:
    """The conversation a ``POST /v1/responses`` belongs to: its items (the context before the
    request's input), their tokens, and the request's input to append (its ids checked)."""

    __slots__ = ("id", "input", "items", "tokens")

    def __init__(self, conversation_id: str, items: list[Json], new_input: list[Json]) -> None:
        self.id = conversation_id
        self.items = items
        self.tokens = item_tokens(items)
        self.input = new_input

    def append(self, engine: Engine, output: list[Json]) -> None:
        """After the response: its input (fresh ids drawn now), then its output items, join the
        conversation."""
        _append(engine, self.id, [*_prepare(engine, self.id, self.input, "input"),
                                  *(dict(item) for item in output)])


def join_conversation(engine: Engine, request: ResponseRequest) -> Joined | None:
    """The conversation ``request`` names (``conversation``: an id, or ``{"id": ...}``), or None;
    with ``previous_response_id`` too it is a 400, an unknown one a 404, both naming
    ``conversation``."""
    value = request.body.get("conversation")
    if value is None:
        return None
    if not engine.profile.conversations:  # refused as the profile refuses it, not looked up
        engine.profile.check_request(request, create=False)
    if isinstance(value, dict):
        conversation_id = value.get("id")
        if not isinstance(conversation_id, str) or not conversation_id:
            raise invalid("'conversation.id' must be a conversation id string such as "
                          "'conv_...'.", "conversation.id", "invalid_type")
    elif isinstance(value, str) and value:
        conversation_id = value
    else:
        raise invalid("'conversation' must be a conversation id string or an object "
                      "{\"id\": ...}.", "conversation", "invalid_type")
    if request.previous_response_id is not None:
        raise invalid("Mutually exclusive parameters: send only one of 'previous_response_id' "
                      "or 'conversation' (a conversation already holds the earlier turns).",
                      "conversation")
    get_conversation(engine, conversation_id, param="conversation")
    items = [json.loads(value) for _, value in _pages(engine, conversation_id)]
    new_input = [item for item in request.input if item.get("type") != "item_reference"]
    _check_ids(engine, conversation_id, new_input, "input")
    return Joined(conversation_id, items, new_input)


# -- helpers ----------------------------------------------------------------------------------
def _key(conversation_id: str, item_id: str) -> str:
    return f"{conversation_id}/{item_id}"


def _put(engine: Engine, conversation: Json) -> None:
    engine.backend.put(CONVERSATION_KIND, conversation["id"], encode_json(conversation).encode())


def _append(engine: Engine, conversation_id: str, items: list[Json]) -> None:
    for item in items:
        engine.backend.put(ITEM_KIND, _key(conversation_id, item["id"]),
                           encode_json(item).encode())


def _pages(engine: Engine, conversation_id: str) -> list[tuple[str, bytes]]:
    """Every item of a conversation, oldest first, as (key, value)."""
    prefix, after, found = _key(conversation_id, ""), None, []
    while True:
        page = engine.backend.list(ITEM_KIND, prefix=prefix, after=after, limit=_PAGE)
        found += page
        if len(page) < _PAGE:
            return found
        after = page[-1][0]


def _prepare(engine: Engine, conversation_id: str, items: list[Json], param: str) -> list[Json]:
    """Items as a conversation holds them: each with an id (its own, or a fresh one: ``msg_``
    for a message) and a status; a message's string content as one text part. An id the
    conversation already holds is a 400, and so is an ``item_reference`` (it only points at an
    item: create's ``input`` leaves it out)."""
    for index, item in enumerate(items):
        if item.get("type") == "item_reference":
            raise invalid(f"'{param}[{index}].type' 'item_reference' cannot be added to a "
                          "conversation: a reference only points at an item; add the item "
                          "itself.", f"{param}[{index}].type")
    _check_ids(engine, conversation_id, items, param)
    prepared: list[Json] = []
    for given in items:
        item = dict(given)
        kind = item.get("type", "message")
        item_id = item.get("id")
        if item_id is None:
            item_id = engine.ids.new(_ID_PREFIXES.get(kind, "item"))
        if kind == "message":
            content = item.get("content")
            if isinstance(content, str):
                part: Json = ({"type": "output_text", "text": content, "annotations": [],
                               "logprobs": []} if item.get("role") == "assistant"
                              else {"type": "input_text", "text": content})
                item["content"] = [part]
        if kind in ("message", "function_call", "function_call_output"):
            item.setdefault("status", "completed")
        prepared.append({"id": item_id, "type": kind,
                         **{k: v for k, v in item.items() if k not in ("id", "type")}})
    return prepared


def _check_ids(engine: Engine, conversation_id: str, items: list[Json], param: str) -> None:
    """The ids items bring must be new to the conversation (and to each other)."""
    seen: set[str] = set()
    for index, item in enumerate(items):
        item_id = item.get("id")
        if item_id is None:
            continue
        if not isinstance(item_id, str) or not item_id or "/" in item_id:
            raise invalid(f"'{param}[{index}].id' must be an item id string (no '/').",
                          f"{param}[{index}].id", "invalid_type")
        if item_id in seen or engine.backend.get(
                ITEM_KIND, _key(conversation_id, item_id)) is not None:
            raise invalid(f"'{param}[{index}].id' {item_id!r} is already an item of "
                          f"conversation {conversation_id!r}; leave 'id' out to add a new "
                          "item.", f"{param}[{index}].id", "duplicate_item")
        seen.add(item_id)


def _list(items: list[Json], *, has_more: bool) -> Json:
    return {"object": "list", "data": items,
            "first_id": items[0]["id"] if items else None,
            "last_id": items[-1]["id"] if items else None,
            "has_more": has_more}


def _object(body: Any) -> Json:
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.", None, "invalid_json")
    return body


def _metadata(value: Any) -> Json:
    return {} if value is None else metadata(value)


def _one(query: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


def _include(query: Mapping[str, Sequence[str]]) -> None:
    """``include`` (``include[]``, as the openai SDK writes it) may name only what the API
    knows (``INCLUDABLE``); the items are always returned whole, with everything they were
    stored with, so every such field is there."""
    for value in [*query.get("include", ()), *query.get("include[]", ())]:
        if value not in INCLUDABLE:
            raise invalid(f"'include' {value!r} is not an includable field; use one of "
                          f"{', '.join(INCLUDABLE)}.", "include")


def _item_not_found(conversation_id: str, item_id: str) -> OpenResponsesError:
    return OpenResponsesError(
        f"Item with id {item_id!r} not found in conversation {conversation_id!r}: it was never "
        "added to it, or it was deleted.",
        type="not_found", code="item_not_found", param="item_id",
    )
