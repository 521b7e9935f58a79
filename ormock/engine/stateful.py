"""The stateful side of the Responses API over the store: who owns a response (the sha256 of
the API key that created it), its input items as cursor pages, deleting (a tombstone), the
responses still being written, a client that left marking its response ``cancelled``, and
``Idempotency-Key`` records (kind ``"idempotency"``).

Every function here reads and writes through the engine's ``ResponseStore`` and its backend, so
it behaves the same on every backend; the server's endpoints (``ormock.server.responses_api``)
call them."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from weakref import WeakKeyDictionary

from ormock.engine.journal import JournalEntry
from ormock.engine.store.responses import ResponseStore, Stored
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.events import TERMINAL_EVENTS
from ormock.protocol.fields import INCLUDABLE
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json
from ormock.protocol.wire import Written

__all__ = ["Background", "Claim", "Generating", "IdempotencyRecord", "check_include",
           "claim_key", "context_items", "input_items_page", "not_found", "owner_of"]

IDEMPOTENCY = "idempotency"
IDEMPOTENCY_TTL = 24 * 3600.0  # seconds a key is remembered
MAX_IDEMPOTENCY_KEY = 255


def owner_of(headers: Mapping[str, str]) -> str | None:
    """The sha256 (hex) of the request's API key (``Authorization: Bearer KEY``; another scheme:
    the whole value), or None without one. Only this hash is ever stored."""
    names = [*map(str.lower, headers)]  # the first header of that name, in any case
    if "authorization" not in names:
        return None
    value = [*headers.values()][names.index("authorization")]
    if not value:
        return None
    scheme, _, key = value.partition(" ")
    return _owner_hash(key.strip() if scheme.lower() == "bearer" else value)


@functools.lru_cache(maxsize=256)
def _owner_hash(token: str) -> str:
    """The sha256 of a key, once per key (a suite sends the same few keys all along; the
    cache is this process's memory, never a store)."""
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def not_found(response_id: str) -> OpenResponsesError:
    """The one answer for a response that is absent, deleted, or another API key's."""
    return OpenResponsesError(
        f"No response with id {response_id!r}: it was never created here, was created with "
        "store: false, was deleted, or belongs to another API key.",
        type="not_found", code="response_not_found", param="response_id",
    )


def check_include(values: list[str]) -> list[str]:
    """The ``include`` query values, each one of ``INCLUDABLE`` (what a create may ask for; else
    400 naming ``include``).
    A stored response already holds what it was created with, so they select nothing more."""
    for value in values:
        if value not in INCLUDABLE:
            raise OpenResponsesError(
                f"Invalid value for 'include': {value!r}; use one of {', '.join(INCLUDABLE)}.",
                code="invalid_value", param="include",
            )
    return values


# -- input items ------------------------------------------------------------------------------
_PREFIXES = {"message": "msg", "function_call": "fc", "function_call_output": "fco",
             "reasoning": "rs", "compaction": "cmp"}


def _item_id(item: Json, owner_id: str, where: str, index: int) -> str:
    prefix = _PREFIXES.get(str(item.get("type")), "item")
    digest = hashlib.sha256(f"{owner_id}:{where}:{index}".encode()).hexdigest()[:40]
    return f"{prefix}_{digest}"


def _listed(item: Json, owner_id: str, where: str, index: int) -> Json:
    """An input item as the input items list shows it: with an id (its own, or one drawn from
    the response that brought it and its place there, so the same on every read), a message's
    text content as parts, and a status."""
    out = dict(item)
    if not isinstance(out.get("id"), str):
        out["id"] = _item_id(item, owner_id, where, index)
    kind = out.get("type")
    if kind == "message":
        content = out.get("content")
        assistant = out.get("role") == "assistant"
        if isinstance(content, str):
            out["content"] = [{"type": "output_text", "text": content, "annotations": []}
                              if assistant else {"type": "input_text", "text": content}]
        out.setdefault("status", "completed")
    elif kind in ("function_call", "function_call_output"):
        out.setdefault("status", "completed")
    return out


def context_items(stored: Stored) -> list[Json]:
    """Everything the response answered, oldest first: its ancestors' inputs and outputs (as a
    continuation rebuilds them, through deleted ancestors too), then its own input."""
    chain = stored.chain()
    root = chain[-1]
    items = [_listed(item, root.response_id, "prior", n) for n, item in
             enumerate(root.prior or [])]
    for node in reversed(chain[1:]):
        items += [_listed(item, node.response_id, "input", n)
                  for n, item in enumerate(node.input)]
        items += [_listed(item, node.response_id, "output", n)
                  for n, item in enumerate(node.response["output"])]
    items += [_listed(item, stored.response_id, "input", n) for n, item in
              enumerate(stored.input)]
    return items


def input_items_page(stored: Stored, *, order: str = "desc", limit: int = 20,
                     after: str | None = None) -> Json:
    """A cursor page of the response's input items: ``{object: "list", data, first_id,
    last_id, has_more}``, newest first unless ``order`` is ``asc``; ``after`` an item id of
    the list (unknown: 400 naming ``after``)."""
    if order not in ("asc", "desc"):
        raise OpenResponsesError(f"Invalid value for 'order': {order!r}; use 'asc' or 'desc'.",
                                 code="invalid_value", param="order")
    if not 1 <= limit <= 100:
        raise OpenResponsesError(f"Invalid value for 'limit': {limit}; it must be between 1 "
                                 "and 100.", code="integer_out_of_range", param="limit")
    items = context_items(stored)
    if order == "desc":
        items.reverse()
    start = 0
    if after is not None:
        found = next((n for n, item in enumerate(items) if item["id"] == after), None)
        if found is None:
            raise OpenResponsesError(
                f"Invalid value for 'after': no input item {after!r} in response "
                f"{stored.response_id!r}; pass the last_id of the previous page.",
                code="invalid_value", param="after")
        start = found + 1
    data = items[start:start + limit]
    return {"object": "list", "data": data,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
            "has_more": start + limit < len(items)}


# -- responses being written ------------------------------------------------------------------
class Generating:
    """The ids of the responses whose answer is still being written, per store: deleting one
    then is a 409. In memory only (a process writes its own answers), in the store object's
    own set (``ResponseStore.generating``: no weak reference made per request). Each step is
    one operation on that set, atomic under the interpreter's lock: no lock of its own taken
    twice for every answer."""

    @staticmethod
    def add(store: ResponseStore, response_id: str) -> None:
        store.generating.add(response_id)

    @staticmethod
    def discard(store: ResponseStore, response_id: str) -> None:
        store.generating.discard(response_id)

    @staticmethod
    def has(store: ResponseStore, response_id: str) -> bool:
        return response_id in store.generating


class Background:
    """The running background-mode tasks (``ormock.server.background``), per store, by
    response id: cancelled when the namespace is reset or the server stops."""

    _all: WeakKeyDictionary[ResponseStore, dict[str, asyncio.Task[None]]] = \
        WeakKeyDictionary()
    _lock = threading.Lock()

    @classmethod
    def add(cls, store: ResponseStore, response_id: str, task: asyncio.Task[None]) -> None:
        with cls._lock:
            cls._all.setdefault(store, {})[response_id] = task

    @classmethod
    def pop(cls, store: ResponseStore, response_id: str) -> asyncio.Task[None] | None:
        with cls._lock:
            return cls._all.get(store, {}).pop(response_id, None)

    @classmethod
    def runs(cls, store: ResponseStore, response_id: str) -> bool:
        """Whether this process runs it (its lease then needs no checking)."""
        with cls._lock:
            return response_id in cls._all.get(store, {})

    @classmethod
    def owns(cls, store: ResponseStore, response_id: str, task: asyncio.Task[None]) -> bool:
        with cls._lock:
            return cls._all.get(store, {}).get(response_id) is task

    @classmethod
    def release(cls, store: ResponseStore, response_id: str, task: asyncio.Task[None]
                ) -> bool:
        """Drop the task's entry; whether it was still there (not cancelled from outside)."""
        with cls._lock:
            tasks = cls._all.get(store, {})
            if tasks.get(response_id) is task:
                del tasks[response_id]
                return True
            return False

    @classmethod
    def running(cls, store: ResponseStore) -> list[asyncio.Task[None]]:
        with cls._lock:
            return [t for t in cls._all.get(store, {}).values() if not t.done()]

    @classmethod
    def cancel_all(cls, store: ResponseStore, wait: float = 10.0, *, mark: bool = False
                   ) -> None:
        """Cancel every task of the store, from any thread, and return once they have ended,
        so that none writes after this (``Engine.reset`` clears the store next). On their own
        loop's thread they are cancelled at once: they cannot run again before the caller
        yields, and a task whose entry is gone writes nothing when cancelled. From another
        thread the cancel is scheduled on their loop, and waited for (at most ``wait``
        seconds). ``mark``: store the responses they ran ``cancelled`` (the server stops)."""
        with cls._lock:
            running = {k: t for k, t in cls._all.pop(store, {}).items() if not t.done()}
        tasks = list(running.values())
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        loops: dict[asyncio.AbstractEventLoop, list[asyncio.Task[None]]] = {}
        for task in tasks:
            loops.setdefault(task.get_loop(), []).append(task)
        for loop, own in loops.items():
            if loop is here or not loop.is_running():
                for task in own:  # a loop that no longer runs runs none of them again
                    task.cancel()
                continue
            ended = asyncio.run_coroutine_threadsafe(_cancelled(own), loop)
            with contextlib.suppress(concurrent.futures.TimeoutError,
                                     concurrent.futures.CancelledError, RuntimeError):
                ended.result(wait)
        for response_id in running if mark else ():
            if store.change(response_id, _stopped) is not None:
                store.backend.log_close(response_id, ttl=store.ttl)  # its followers end


def _stopped(current: Json) -> Json | None:
    return {**current, "status": "cancelled"} if current.get("status") in (
        "queued", "in_progress") else None


async def _cancelled(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` (on their loop) and wait until they have ended."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def cancel_stored(store: ResponseStore, response_id: str) -> bool:
    """Mark a stored response ``cancelled`` (its client left before the terminal event)."""
    found = store.get(response_id)
    if found is None:
        return False
    return store.update(response_id, {**found.response, "status": "cancelled"})


# -- idempotency ------------------------------------------------------------------------------
State = Literal["pending", "done"]


@dataclass(frozen=True)
class IdempotencyRecord:
    """What a key is bound to: the request's fingerprint, whether its answer is still being
    written, the response it made, and the bytes it sent (``sse``: an event stream; else the
    JSON body), replayed as they were. In the store: one JSON line, then those bytes."""

    request: str
    state: State = "pending"
    response_id: str | None = None
    body: bytes = b""
    sse: bool = False

    def encode(self) -> bytes:
        head = encode_json({"request": self.request, "state": self.state,
                            "response_id": self.response_id, "sse": self.sse}).encode()
        return head + b"\n" + self.body

    @classmethod
    def decode(cls, value: bytes) -> IdempotencyRecord:
        head, _, body = value.partition(b"\n")
        data: dict[str, Any] = json.loads(head)
        return cls(str(data["request"]), data["state"], data.get("response_id"), body,
                   bool(data.get("sse")))


def claim_key(key: str, owner: str | None) -> str:
    """The store key of an ``Idempotency-Key`` under an API key: never shared across keys."""
    return f"{owner or '-'}:{key}"


def fingerprint(body: Any) -> str:
    """The same request, however its JSON was spaced or its keys ordered."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class Claim:
    """An ``Idempotency-Key`` this request holds while it answers (``try_claim`` won): made
    ``done`` with the response once written, or released so that a retry answers afresh."""

    def __init__(self, store: ResponseStore, key: str, record: IdempotencyRecord) -> None:
        self.store, self.key, self.record = store, key, record

    @classmethod
    def take(cls, store: ResponseStore, header: str, owner: str | None, body: Any
             ) -> Claim | IdempotencyRecord:
        """Claim the key for this request (exactly one of any number of racing requests
        wins), or the record another request holds: same request, ``done`` -> replay it;
        another request -> 409 ``idempotency_key_conflict``; still being answered -> 409
        ``idempotency_key_in_use``."""
        if not header or len(header) > MAX_IDEMPOTENCY_KEY:
            raise OpenResponsesError(
                f"Invalid 'Idempotency-Key' header: it must be 1 to {MAX_IDEMPOTENCY_KEY} "
                f"characters, not {len(header)}; use a request id or a UUID.",
                code="invalid_value", param="Idempotency-Key")
        key, fresh = claim_key(header, owner), IdempotencyRecord(fingerprint(body))
        backend = store.backend
        while True:
            if backend.compare_and_set(IDEMPOTENCY, key, None, fresh.encode(),
                                       ttl=IDEMPOTENCY_TTL):
                return cls(store, key, fresh)
            value = backend.get(IDEMPOTENCY, key)
            if value is None:  # released or expired meanwhile: claim it again
                continue
            held = IdempotencyRecord.decode(value)
            if held.request != fresh.request:
                raise OpenResponsesError(
                    "This Idempotency-Key was already used with a different request body; "
                    "send a new key for a new request.", type="conflict",
                    code="idempotency_key_conflict", param="Idempotency-Key")
            if held.state == "pending":
                raise OpenResponsesError(
                    "A request with this Idempotency-Key is still being answered; retry once "
                    "it has finished.", type="conflict", code="idempotency_key_in_use",
                    param="Idempotency-Key")
            return held

    def done(self, response_id: str, body: bytes, sse: bool) -> None:
        record = IdempotencyRecord(self.record.request, "done", response_id, body, sse)
        self.store.backend.put(IDEMPOTENCY, self.key, record.encode(), ttl=IDEMPOTENCY_TTL)

    def release(self) -> None:
        self.store.backend.delete(IDEMPOTENCY, self.key)


# -- an answer being written ------------------------------------------------------------------
def written(store: ResponseStore, entry: JournalEntry, sent: Written | None,
            claim: Claim | None) -> None:
    """A create's answer is over (``sent``: what the writer sent; None: nothing was): the
    response no longer generates; a client that left before the terminal event leaves it
    ``cancelled``; the key's record is made ``done`` with the bytes sent (replayed as they
    are), or released when no whole answer with a response went out (a retry answers anew)."""
    response_id = entry.response_id
    if response_id is not None:
        Generating.discard(store, response_id)
    if sent is not None and sent.gone and response_id is not None and not any(
            event.get("type") in TERMINAL_EVENTS for event in sent.events):
        cancel_stored(store, response_id)
    if claim is None:
        return
    if sent is None or sent.gone or response_id is None or entry.status != 200:
        claim.release()
        return
    claim.done(response_id, b"".join(frame.data for _, frame in sent.sent), entry.stream)
