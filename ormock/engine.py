"""Choosing the reply for a request, keeping the responses a chain refers to, and the journal.

An ``Engine`` is one isolated fake: its own ids, clock, stored responses and journal. The server
keeps one per namespace (``/v1`` is the namespace ``""``; ``/<name>/v1`` another).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from faker import Faker

from .embedded import default_plan, input_text
from .protocol.checker import check_stream
from .protocol.errors import OpenResponsesError
from .protocol.ids import Clock, IdFactory
from .protocol.response import new_response
from .protocol.stream import build_events
from .protocol.tokens import count_tokens
from .reply import Reply
from .request import ResponseRequest, parse_request
from .sse import encode_json

__all__ = ["Engine", "JournalEntry", "Namespaces"]

Json = dict[str, Any]
SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "cookie", "set-cookie",
                            "openai-organization", "openai-project"})


@dataclass
class JournalEntry:
    """One request the fake received and what it sent back."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0
    response_id: str | None = None
    error: Json | None = None
    events: int = 0

    def to_dict(self) -> Json:
        return {
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "body": self.body,
            "status": self.status,
            "response_id": self.response_id,
            "error": self.error,
            "events": self.events,
        }


def masked(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers with secrets replaced, as the journal keeps them."""
    return {k: ("***" if k.lower() in SECRET_HEADERS else v) for k, v in headers.items()}


@dataclass
class _Stored:
    response: Json
    context: list[Json]  # everything the model saw: ancestors' inputs and outputs, this input


class Engine:
    """One isolated fake provider."""

    def __init__(self, *, seed: int = 0, clock: str = "seeded", self_check: bool = False) -> None:
        self.seed = seed
        self.self_check = self_check
        self.ids = IdFactory(seed)
        self.clock = Clock(clock)
        self.faker = Faker()
        self.responses: dict[str, _Stored] = {}
        self.journal: list[JournalEntry] = []
        self._lock = threading.Lock()

    def respond(self, body: Any, headers: Mapping[str, str], path: str = "/v1/responses") -> Reply:
        """Answer a ``POST /v1/responses``; an ``OpenResponsesError`` becomes an error reply."""
        entry = JournalEntry("POST", path, masked(headers), body)
        with self._lock:
            self.journal.append(entry)
            try:
                reply = self._respond(parse_request(body))
            except OpenResponsesError as error:
                entry.status, entry.error = error.status, error.envelope()["error"]
                raise
        entry.status, entry.response_id, entry.events = 200, reply.response["id"], len(
            reply.events
        )
        return reply

    def _context(self, request: ResponseRequest) -> tuple[list[Json], _Stored | None]:
        previous = request.previous_response_id
        if previous is None:
            return list(request.input), None
        parent = self.responses.get(previous)
        if parent is None:
            raise OpenResponsesError(
                f"Previous response with id {previous!r} not found: this server answers only "
                "for stored responses it produced (was it created with store: false, or on "
                "another server or namespace?).",
                type="invalid_request",
                code="previous_response_not_found",
                param="previous_response_id",
            )
        return [*parent.context, *parent.response["output"], *request.input], parent

    def _respond(self, request: ResponseRequest) -> Reply:
        context, parent = self._context(request)
        echo = dict(request.echo)
        if request.model is None and parent is not None:
            echo["model"] = parent.response["model"]
        plan = default_plan(request, context, self.faker, self.seed)
        snapshot = new_response(self.ids.new("resp"), self.clock.now(), echo)
        events = build_events(
            plan,
            snapshot,
            self.ids,
            input_tokens=_input_tokens(request, context),
            completed_at=self.clock.now(),
        )
        if self.self_check:
            _self_check(events)
        reply = Reply(events=events, stream=request.stream, seed=self.seed)
        if echo.get("store", True):
            self.responses[snapshot["id"]] = _Stored(reply.response, context)
        return reply

    def reset(self) -> None:
        with self._lock:
            self.responses.clear()
            self.journal.clear()
            self.ids = IdFactory(self.seed)
            self.clock = Clock(self.clock.mode)


def _self_check(events: list[Json]) -> None:
    """Refuse to send a planned stream that breaks the protocol or the official schema."""
    report = check_stream(events, schema=True)
    if not report.ok:
        raise OpenResponsesError(
            "ormock planned a stream that breaks the protocol (self-check is on): "
            + "; ".join(map(str, report.violations[:5])),
            type="server_error",
            code="self_check_failed",
            status=500,
        )


def _input_tokens(request: ResponseRequest, context: list[Json]) -> int:
    total = count_tokens(request.echo.get("instructions") or "")
    for item in context:
        total += count_tokens(input_text(item))
    for tool in request.function_tools:
        total += count_tokens(encode_json(tool))
    return total


class Namespaces:
    """The engines of one server, one per namespace, made on first use."""

    def __init__(self, *, seed: int = 0, clock: str = "seeded", self_check: bool = False) -> None:
        self.seed = seed
        self.self_check = self_check
        self.clock = clock
        self._engines: dict[str, Engine] = {}
        self._lock = threading.Lock()

    def get(self, name: str = "") -> Engine:
        engine = self._engines.get(name)
        if engine is None:
            with self._lock:
                engine = self._engines.setdefault(
                    name, Engine(seed=self.seed, clock=self.clock, self_check=self.self_check)
                )
        return engine

    def drop(self, name: str) -> None:
        with self._lock:
            self._engines.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._engines)
