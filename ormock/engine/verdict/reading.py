"""Reading a journal entry (an object or its dict) into what the rules look at."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ormock.engine.journal import JournalEntry
from ormock.engine.verdict.model import PER_ATTEMPT, plural
from ormock.protocol.types import Json

__all__ = ["CUT", "DROPPED", "RETRYABLE_STATUS", "Request", "read_all", "read_entry"]

RETRYABLE_STATUS = frozenset({408, 409, 429})
DROPPED = frozenset({"closed", "reset", "stalled"})
CUT = frozenset({"truncated", "closed", "reset", "stalled"})
_IGNORED_KEYS = frozenset({"stream", "stream_options"})


@dataclass
class Request:
    """A journal entry, read the same way from an object or a dict."""

    number: int
    at: float
    status: int
    stream: bool
    body: Any
    key: str
    response_id: str | None
    response_status: str | None
    ended: str
    headers: dict[str, str]
    output_ids: list[str]
    finished_at: float | None
    events: list[Json]
    faults: list[str]
    error: Json | None

    @property
    def sent_events(self) -> int:
        return len(self.events)

    @property
    def failed_at(self) -> float:
        """When the client could know the failure: the answer's end, else its last event."""
        if self.finished_at is not None:
            return self.finished_at
        return self.at + self.last_offset

    @property
    def last_offset(self) -> float:
        offsets = [e.get("offset_ms") for e in self.events]
        numbers = [o for o in offsets if isinstance(o, (int, float))]
        return max(numbers) / 1000 if numbers else 0.0

    @property
    def previous_response_id(self) -> str | None:
        value = self.body.get("previous_response_id") if isinstance(self.body, dict) else None
        return value if isinstance(value, str) else None

    def retry_after(self) -> float | None:
        """Seconds the answer asked to wait: ``retry-after-ms``, else ``retry-after`` (in
        seconds; an HTTP date is not read)."""
        for name, unit in (("retry-after-ms", 1000), ("retry-after", 1)):
            try:
                seconds = float(self.headers.get(name, "")) / unit
            except ValueError:
                continue
            if math.isfinite(seconds):
                return max(seconds, 0.0)
        return None

    def failure(self) -> str | None:
        """The failure in words, or None when the answer was a usable one."""
        if self.status >= 400:
            error = self.error or {}
            code = error.get("code") or error.get("type")
            return f"HTTP {self.status}" + (f" ({code})" if code else "")
        if self.ended in CUT:
            what = "stream" if self.stream else "JSON body"
            after = f" after {plural(self.sent_events, 'event')}" if self.stream else ""
            return {"truncated": f"a {what} that ended early{after}",
                    "closed": f"a {what} whose connection was closed{after}",
                    "reset": f"a {what} whose connection was reset{after}",
                    "stalled": f"a {what} that stalled{after}"}[self.ended]
        if self.response_status == "failed":
            return "a stream that ended in response.failed"
        return None

    def broken(self) -> str:
        """How a stream that never completed ended, in words (for ``accepted-broken-stream``)."""
        after = f" after {plural(self.sent_events, 'event')}"
        return {"truncated": f"ended early{after}, with no terminal event",
                "closed": f"lost its connection{after}",
                "reset": f"had its connection reset{after}",
                "stalled": f"stalled{after}"}.get(self.ended, "ended in response.failed")

    @property
    def warm_up(self) -> bool:
        """A ``generate: false`` request (Codex's first WebSocket message): it prepares state
        and generates nothing, so a client may go on without it (sending its turn whole)."""
        return isinstance(self.body, dict) and self.body.get("generate") is False

    def delivered(self) -> bool:
        """Whether the client had the whole answer: a stream or body that ended whole with a
        response that did not fail."""
        return self.status == 200 and self.ended == "whole" and self.response_status in (
            "completed", "incomplete")

    def retryable(self) -> bool:
        """A failure a client should retry: before any event, and retryable by its status."""
        should = self.headers.get("x-should-retry")
        if should == "false":
            return False
        if self.status >= 400:
            return should == "true" or self.status in RETRYABLE_STATUS or self.status >= 500
        return self.ended in DROPPED and self.sent_events == 0

    def non_retryable_status(self) -> bool:
        should = self.headers.get("x-should-retry")
        if should == "false":
            return self.status >= 400
        return 400 <= self.status < 500 and self.status not in RETRYABLE_STATUS and (
            should != "true"
        )


def _key(body: Any, headers: Mapping[str, Any], per_attempt: Iterable[str],
         context: list[Any] | None = None) -> str:
    """What makes two requests the same attempt: the body (its input, tools, previous
    response, model, ...) without ``stream``, ``stream_options`` and the ``per_attempt``
    fields, and the ``X-Ormock-Scenario`` it names. ``context``: the whole input the request
    stands for (``read_all``), in place of its ``input`` and ``previous_response_id``."""
    if isinstance(body, dict):
        left_out = _IGNORED_KEYS.union(per_attempt)
        if context is not None:
            left_out = left_out.union(("input", "previous_response_id"))
        body = {k: v for k, v in body.items() if k not in left_out}
        if context is not None:
            body["context"] = context
    scenario = next((v for k, v in headers.items() if str(k).lower() == "x-ormock-scenario"),
                    None)
    try:
        return json.dumps([body, scenario], sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr((body, scenario))


def read_entry(number: int, entry: JournalEntry | Mapping[str, Any],
               per_attempt: Iterable[str] = PER_ATTEMPT) -> Request:
    data: Mapping[str, Any] = entry.to_dict() if isinstance(entry, JournalEntry) else entry
    headers = {str(k).lower(): str(v) for k, v in (data.get("reply_headers") or {}).items()}
    return Request(
        number=number,
        at=float(data.get("at") or 0.0),
        status=int(data.get("status") or 0),
        stream=bool(data.get("stream")),
        body=data.get("body"),
        key=_key(data.get("body"), data.get("headers") or {}, per_attempt),
        response_id=data.get("response_id"),
        response_status=data.get("response_status"),
        ended=str(data.get("ended") or "whole"),
        headers=headers,
        output_ids=list(data.get("output_ids") or []),
        finished_at=data.get("finished_at"),
        events=list(data.get("events") or []),
        faults=list(data.get("faults") or []),
        error=data.get("error"),
    )


def read_all(items: Iterable[JournalEntry | Mapping[str, Any]],
             per_attempt: Iterable[str] = PER_ATTEMPT) -> list[Request]:
    """The entries of a journal, numbered from 1, each keyed by the whole context it stands
    for: one turn may be sent chained (``previous_response_id`` naming a response the journal
    has, and only the new items: a WebSocket continuation, the turn after Codex's warm-up) or
    whole (the context sent again: its retry on a new connection). The context is the parent's
    context, its output (by the ids the journal keeps), then the input, each item sent back
    from a journaled output also read by its ids; so both forms of one turn key alike."""
    fields = tuple(per_attempt)
    requests: list[Request] = []
    datas: list[Mapping[str, Any]] = []
    for number, entry in enumerate(items, 1):
        request = read_entry(number, entry, fields)
        requests.append(request)
        datas.append(entry.to_dict() if isinstance(entry, JournalEntry) else entry)
    known = {i for r in requests for i in r.output_ids}
    contexts: dict[str, list[Any]] = {}  # response id -> the context it answered, and output
    for request, data in zip(requests, datas, strict=True):
        body = request.body
        if not isinstance(body, dict):
            continue
        parent = contexts.get(request.previous_response_id or "")
        if request.previous_response_id is not None and parent is None:
            continue  # a parent the journal does not have: keyed by its body as it is
        context = [*(parent or []), *_as_sent(body.get("input"), known)]
        request.key = _key(body, data.get("headers") or {}, fields, context)
        if request.response_id is not None:
            contexts[request.response_id] = [*context, *request.output_ids]
    return requests


def _as_sent(items: Any, known: set[str]) -> list[Any]:
    """Input items as a context holds them: an item sent back from a journaled output by its
    ids (those ``summarize`` keeps: its id, then its call id), any other as it is."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    out: list[Any] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("id") in known:
            out += [v for k in ("id", "call_id") if (v := item.get(k)) in known]
        else:
            out.append(item)
    return out
