"""Stored responses: what ``previous_response_id`` continues and ``GET /v1/responses/{id}``
returns, kept per engine (and, for ``store: false`` in WebSocket mode, per connection)."""

from __future__ import annotations

import json
from typing import Any

from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json

__all__ = ["ResponseStore", "Stored", "check_call_outputs"]


class Stored:
    """A stored response, the input it answered and its parent: its context (everything the
    model saw: the ancestors' inputs and outputs, then its own input) is rebuilt from the chain
    when asked for, so a chain of n turns holds n inputs, not n copies of the context. A
    response issued from the stream cache is kept as its JSON, and parsed only if something
    asks for it. ``context_tokens``: the tokens of the context, counted once;
    ``chain_tokens``: those of context and output, which a continuation starts from (counted
    when first continued). ``size``: the bytes it holds itself, roughly."""

    __slots__ = ("_raw", "_response", "chain_tokens", "context_tokens", "input", "parent",
                 "size")

    def __init__(self, response: Json | None, new_input: list[Json],
                 parent: Stored | None = None, *, raw: bytes | None = None,
                 context_tokens: int = 0, request_size: int = 0) -> None:
        self._response = response
        self._raw = raw
        self.parent = parent
        self.input = new_input
        self.context_tokens = context_tokens
        self.chain_tokens: int | None = None
        # the request it answered, and its own JSON (or a guess at it)
        self.size = request_size + (len(raw) if raw is not None else 1024)

    @property
    def context(self) -> list[Json]:
        """The ancestors' inputs and outputs, oldest first, then its own input."""
        chain: list[Stored] = []
        node: Stored | None = self
        while node is not None:
            chain.append(node)
            node = node.parent
        items: list[Json] = []
        for node in reversed(chain[1:]):
            items += node.input
            items += node.response["output"]
        items += self.input
        return items

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

    def __init__(self, limit: int = 2000, max_bytes: int = 128 * 1024 * 1024) -> None:
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
