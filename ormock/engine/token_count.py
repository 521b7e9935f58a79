"""``POST /v1/responses/input_tokens``: the input tokens a request would count, without
answering it.

The count is the one a ``POST /v1/responses`` of the same body reports as
``usage.input_tokens``: the context's items (a ``conversation``'s items, or a
``previous_response_id`` chain's inputs and outputs, then the new input; a compaction item
counts what it stands for), the instructions and the function tools, by ormock's one
tokenizer. ``model`` may be left out. Each request is journaled; nothing is stored, and no id
or timestamp is drawn. The namespace's profile refuses what it would refuse on a create
request (``instructions``, ``tools``, ``conversation``, input item types).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ormock.engine.compaction import journaled
from ormock.engine.context import context_of, context_tokens
from ormock.engine.conversations import join_conversation
from ormock.engine.core import Engine
from ormock.engine.journal import JournalEntry
from ormock.protocol.request import parse_request
from ormock.protocol.types import Json

__all__ = ["INPUT_TOKENS_PATH", "count_input_tokens", "counted"]

INPUT_TOKENS_PATH = "/v1/responses/input_tokens"


def count_input_tokens(
    engine: Engine, body: Any, headers: Mapping[str, str] | None = None,
    path: str = INPUT_TOKENS_PATH, size: int | None = None,
) -> tuple[Json, JournalEntry]:
    """Answer a ``POST /v1/responses/input_tokens`` body: ``{"object":
    "response.input_tokens", "input_tokens": N}`` and the journal entry; a bad request raises
    ``OpenResponsesError`` (journaled too)."""
    return journaled(engine, body, headers or {}, path, size, counted)


def counted(engine: Engine, body: Any, owner: str | None = None) -> Json:
    """The count for ``body`` (the caller holds the engine's lock)."""
    request = parse_request(body, require_model=False)
    joined = join_conversation(engine, request)  # its items count as context
    _, parent = context_of(engine.responses, request, owner=owner)
    engine.profile.check_request(request, create=False)  # as a create request is refused
    tokens = context_tokens(request, parent) + (joined.tokens if joined is not None else 0)
    return {"object": "response.input_tokens", "input_tokens": tokens + request.prompt_tokens}
