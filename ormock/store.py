"""Stored responses: what ``previous_response_id`` continues and ``GET /v1/responses/{id}``
returns, kept per engine (and, for ``store: false`` in WebSocket mode, per connection)."""

from __future__ import annotations

import json
from typing import Any

from .protocol.errors import OpenResponsesError
from .sse import encode_json

__all__ = ["ResponseStore", "Stored", "check_call_outputs"]

Json = dict[str, Any]


class Stored:
    """A stored response and its context (everything the model saw: the ancestors' inputs and
    outputs, and its own input). A response issued from the stream cache is kept as its JSON,
    and parsed only if something asks for it. ``context_tokens``: the tokens of the context,
    counted once; ``chain_tokens``: those of context and output, which a continuation starts
    from (counted when first continued). ``size``: the bytes it holds, roughly."""

    __slots__ = ("_raw", "_response", "chain_tokens", "context", "context_tokens", "size")

    def __init__(self, response: Json | None, context: list[Json], raw: bytes | None = None,
                 context_tokens: int = 0, request_size: int = 0) -> None:
        self._response = response
        self._raw = raw
        self.context = context
        self.context_tokens = context_tokens
        self.chain_tokens: int | None = None
        # the request it answered, its JSON, and a reference per context item
        self.size = request_size + (len(raw) if raw is not None else request_size) + 8 * len(
            context)

    @property
    def response(self) -> Json:
        if self._response is None:
            assert self._raw is not None
            self._response = json.loads(self._raw)
        return self._response

    @property
    def raw(self) -> bytes:
        return self._raw if self._raw is not None else encode_json(self.response).encode()


class ResponseStore(dict[str, Stored]):
    """Stored responses by id, oldest first; past ``limit`` responses or ``max_bytes`` (their
    ``size``), the oldest go."""

    def __init__(self, limit: int = 2000, max_bytes: int = 256 * 1024 * 1024) -> None:
        super().__init__()
        self.limit = limit
        self.max_bytes = max_bytes
        self.bytes = 0

    def keep(self, response_id: str, stored: Stored) -> None:
        self.pop(response_id, None)
        self[response_id] = stored
        self.bytes += stored.size
        while len(self) > 1 and (len(self) > self.limit or self.bytes > self.max_bytes):
            self.bytes -= super().pop(next(iter(self))).size

    def pop(self, key: str, default: Any = None) -> Any:
        stored = super().pop(key, default)
        if isinstance(stored, Stored):
            self.bytes -= stored.size
        return stored


def check_call_outputs(context: list[Json], new_input: list[Json]) -> None:
    """A continuation's tool outputs must answer calls the chain made, and all the calls of
    the previous response that are still open must be answered at once."""
    calls = {i.get("call_id") for i in context if i.get("type") == "function_call"}
    answered = {i.get("call_id") for i in context if i.get("type") == "function_call_output"}
    given = [(n, i) for n, i in enumerate(new_input) if i.get("type") == "function_call_output"]
    for index, item in given:
        if item.get("call_id") not in calls:
            raise OpenResponsesError(
                f"No tool call found for function call output with call_id "
                f"{item.get('call_id')!r}: the previous responses made calls "
                f"{', '.join(sorted(map(str, calls - answered))) or '(none)'}.",
                code="invalid_value",
                param=f"input[{index}].call_id",
            )
    pending = calls - answered - {i.get("call_id") for _, i in given}
    if given and pending:
        raise OpenResponsesError(
            f"No tool output found for function call {sorted(map(str, pending))[0]!r}: answer "
            "every pending function call of the previous response in one request.",
            code="missing_tool_output",
            param="input",
        )
