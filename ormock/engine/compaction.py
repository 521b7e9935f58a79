"""``POST /v1/responses/compact``: the compacted window of a conversation, as a
``response.compaction`` resource.

The window is the request's context (a ``previous_response_id`` chain's inputs and outputs, then
its ``input``). As a provider's, the output is every user message of it, kept as it was, followed
by one ``compaction`` item standing for everything else (assistant messages, tool calls and
outputs, reasoning, system and developer messages, earlier compaction items); its opaque
``encrypted_content`` packs their kinds and texts (``ormock.protocol.compaction``), so that the
output passed back as the input of a new request counts the same tokens as the window did.
Ids and ``created_at`` come from the engine's seeded ids and clock: the same requests in the
same order to a fresh engine give the same bytes. Nothing is stored; each request is journaled.
The namespace's profile refuses what it would refuse on a create request (``instructions``,
``tools``, input item types: ``Profile.check_request``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ormock.engine.context import context_of, context_tokens
from ormock.engine.core import Engine
from ormock.engine.entry_answer import answering
from ormock.engine.journal import JournalEntry
from ormock.engine.stateful import owner_of
from ormock.protocol.compaction import content_tokens, pack, unpack
from ormock.protocol.errors import invalid
from ormock.protocol.fields import choice, expect
from ormock.protocol.request import ResponseRequest, item_text, parse_request
from ormock.protocol.response import usage_object
from ormock.protocol.secrets import mask_headers
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json

__all__ = ["COMPACT_PATH", "compact", "compacted", "journaled", "summary_entries"]

COMPACT_PATH = "/v1/responses/compact"


def journaled(
    engine: Engine,
    body: Any,
    headers: Mapping[str, str],
    path: str,
    size: int | None,
    answer: Callable[[Engine, Any, str | None], Json],
) -> tuple[Json, JournalEntry]:
    """Answer ``body`` with ``answer(engine, body)`` under the engine's lock, the request
    journaled as ``POST path`` like a create request: its status, and an error's envelope (no
    secret header value in it). ``answer`` gets the sha256 of the caller's API key too (a
    ``previous_response_id`` of another key's is not found)."""
    entry = JournalEntry("POST", path, mask_headers(headers), body, at=engine.elapsed(),
                         size=_size(body) if size is None else size)
    with engine.lock:
        engine.journal.append(entry)
        try:
            with answering(entry, headers):
                data = answer(engine, body, owner_of(headers))
            entry.status = 200
        finally:
            engine.journal.recount(entry)  # its error counted too
    return data, entry


def compact(
    engine: Engine, body: Any, headers: Mapping[str, str] | None = None,
    path: str = COMPACT_PATH, size: int | None = None,
) -> tuple[Json, JournalEntry]:
    """Answer a ``POST /v1/responses/compact`` body: the ``response.compaction`` resource and
    the journal entry; a bad request raises ``OpenResponsesError`` (journaled too)."""
    return journaled(engine, body, headers or {}, path, size, compacted)


def compacted(engine: Engine, body: Any, owner: str | None = None) -> Json:
    """The ``response.compaction`` resource for ``body`` (the caller holds the engine's lock)."""
    request = parse_compact(body)
    context, parent = context_of(engine.responses, request, owner=owner)
    engine.profile.check_request(request, create=False)  # as a create request is refused
    resource_id = engine.ids.new("resp")
    output: list[Json] = []
    for item in context:
        if _is_user_message(item):
            output.append({"id": engine.ids.new("msg"), "type": "message",
                           "status": "completed", "role": "user",
                           "content": _content(item.get("content"))})
    content = pack(summary_entries(context))
    output.append({"id": engine.ids.new("cmp"), "type": "compaction",
                   "encrypted_content": content})
    usage = usage_object(context_tokens(request, parent) + request.prompt_tokens,
                         content_tokens(content))
    return {"id": resource_id, "object": "response.compaction",
            "created_at": engine.clock.now(), "output": output, "usage": usage}


def summary_entries(context: list[Json]) -> list[tuple[str, str]]:
    """What a compaction item of this window stands for: every item but the user messages, as
    (kind, text); an earlier compaction item of ormock's, the entries it packed."""
    entries: list[tuple[str, str]] = []
    for item in context:
        if _is_user_message(item):
            continue
        kind = str(item.get("type", "message"))
        if kind == "compaction":
            content = item.get("encrypted_content")
            inner = unpack(content) if isinstance(content, str) else None
            entries += inner if inner is not None else [("compaction", str(content or ""))]
            continue
        if kind == "message":
            kind = str(item.get("role"))
        elif kind == "function_call":
            kind = f"function_call:{item.get('name')}"
        entries.append((kind, item_text(item)))
    return entries


def _is_user_message(item: Json) -> bool:
    return item.get("type", "message") == "message" and item.get("role") == "user"


def _content(content: Any) -> list[Json]:
    """A user message's content as an output message holds it: parts, each with the fields the
    schema requires."""
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    parts: list[Json] = []
    for part in content if isinstance(content, list) else []:
        part = dict(part)
        if part.get("type") == "input_image":
            part.setdefault("image_url", None)
            if part.get("detail") is None:
                part["detail"] = "auto"
        parts.append(part)
    return parts


def _size(body: Any) -> int:
    """A Python caller's body, measured as the server would have read it."""
    try:
        return len(encode_json(body))
    except (TypeError, ValueError, RecursionError):
        return 0


def parse_compact(body: Any) -> ResponseRequest:
    """Check a ``POST /v1/responses/compact`` body: ``model`` is required (a
    ``previous_response_id`` does not stand for it), the answer is one JSON object (no
    ``stream``), and every field it shares with a create request is checked as there."""
    if isinstance(body, dict):
        if body.get("model") is None:
            raise invalid("'model' is required: name the model to compact with, e.g. "
                          "\"gpt-4o-mini\".", "model", "missing_required_parameter")
        if body.get("stream"):
            raise invalid("/v1/responses/compact answers with one JSON object, never a stream; "
                          "leave 'stream' out.", "stream", "unsupported_parameter")
        choice(body, "prompt_cache_retention", ("in_memory", "24h"))
        for name in ("image", "prompt_cache_options"):
            if body.get(name) is not None:
                expect(body[name], dict, name, "an object")
    return parse_request(body)
