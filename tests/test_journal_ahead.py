"""With a shared store, an answer's journal entry is in the store, whole (how it ended, the bytes
sent), before the write that ends the answer: a client that asks any other worker for the
journal as soon as it has its answer finds it. Driven over raw ASGI, so the check runs at the
very moment the last bytes are handed to the server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from stores import RedisServer

from ormock.server.assembly import assemble

PACED = {"name": "paced", "steps": [{"times": "forever", "reply": {
    "items": [{"message": "one two three four"}], "chunking": "words",
    "pacing": {"per_event": 0.01}}}]}


def _scope() -> dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
            "scheme": "http", "path": "/v1/responses", "raw_path": b"/v1/responses",
            "query_string": b"", "root_path": "", "server": ("127.0.0.1", 8787),
            "client": ("127.0.0.1", 50000),
            "headers": [(b"host", b"127.0.0.1:8787"), (b"content-type", b"application/json")]}


@pytest.mark.parametrize(("body", "paced"), [
    ({"model": "m", "input": "Hello"}, False),
    ({"model": "m", "input": "Hello", "stream": True}, False),
    ({"model": "m", "input": "Hello", "stream": True}, True),
    ({"input": "Hello"}, False),  # a 400: no model
], ids=["json", "stream", "paced-stream", "error"])
def test_the_entry_is_shared_whole_before_the_last_write(
        redis_server: RedisServer, body: dict[str, Any], paced: bool) -> None:
    url = redis_server.fresh_url()
    server, other = assemble(store=url), assemble(store=url)  # two workers on one store
    if paced:
        server.namespaces.serve("").use(PACED)
    seen: list[list[dict[str, Any]]] = []
    sent = bytearray()
    status: list[int] = []
    asked = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]

    async def receive() -> dict[str, Any]:
        if asked:
            return asked.pop(0)
        await asyncio.Event().wait()  # the client stays
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        if message["type"] == "http.response.body":
            sent.extend(message.get("body", b""))
            if not message.get("more_body"):  # the write that ends the answer
                seen.append(list(other.namespaces.serve("").journal_view()))

    asyncio.run(server.app(_scope(), receive, send))
    assert len(seen) == 1
    entries = [e.to_dict() for e in seen[0]]
    assert len(entries) == 1, seen
    entry = entries[0]
    assert entry["status"] == status[0]
    if status[0] == 200:
        assert entry["ended"] in ("whole", "complete")
        assert entry["sent_bytes"] == len(sent)
        assert entry["finished_at"] is not None
    # and what the store keeps once the answer is over is the same entry
    after = [e.to_dict() for e in other.namespaces.serve("").journal_view()]
    assert [(e["status"], e.get("ended"), e.get("sent_bytes")) for e in after] == \
        [(entry["status"], entry.get("ended"), entry.get("sent_bytes"))]


def test_a_websocket_turns_entry_is_shared_whole_before_its_last_frame(
        redis_server: RedisServer) -> None:
    url = redis_server.fresh_url()
    server, other = assemble(store=url), assemble(store=url)
    turn = {"type": "response.create", "model": "m", "input": "Hello"}
    asked: list[dict[str, Any]] = [{"type": "websocket.connect"},
                                   {"type": "websocket.receive", "text": json.dumps(turn)}]
    done = asyncio.Event()
    seen: list[list[dict[str, Any]]] = []
    texts: list[str] = []

    async def receive() -> dict[str, Any]:
        if asked:
            return asked.pop(0)
        await done.wait()  # the client stays until the turn is over, then leaves
        return {"type": "websocket.disconnect", "code": 1000}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "websocket.send":
            texts.append(message["text"])
            if json.loads(message["text"])["type"] == "response.completed":  # the last frame
                seen.append(list(other.namespaces.serve("").journal_view()))
                done.set()

    scope = {**_scope(), "type": "websocket", "scheme": "ws", "subprotocols": []}
    del scope["method"]
    asyncio.run(server.app(scope, receive, send))
    assert len(seen) == 1
    entries = [e.to_dict() for e in seen[0]]
    assert len(entries) == 1, seen
    assert entries[0]["ended"] in ("whole", "complete")
    assert entries[0]["sent_bytes"] == sum(len(text.encode()) for text in texts)
    assert entries[0]["finished_at"] is not None


@pytest.mark.parametrize("store", ["redis", None], ids=["two-workers-on-redis", "one-process"])
def test_a_reset_during_an_answer_leaves_its_entry_out_of_the_journal(
        redis_server: RedisServer, store: str | None) -> None:
    """A reset on another worker while a paced stream runs on this one clears the journal: the
    stream's entry, published as it began, is not put back when it ends (the entry is gone, as
    from one process's own journal reset under a request it is still answering)."""
    url = redis_server.fresh_url() if store else None
    server = assemble(store=url) if url else assemble()
    other = assemble(store=url) if url else server
    server.namespaces.serve("").use(PACED)
    before: list[list[Any]] = []
    sent = bytearray()
    body = {"model": "m", "input": "Hello", "stream": True}
    asked = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]

    async def receive() -> dict[str, Any]:
        if asked:
            return asked.pop(0)
        await asyncio.Event().wait()
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            if not sent:  # the first event: the entry is in the journal, then reset away
                before.append(list(other.namespaces.serve("").journal_view()))
                other.namespaces.serve("").reset(scenarios=False)
            sent.extend(message.get("body", b""))

    asyncio.run(server.app(_scope(), receive, send))
    assert sent.endswith(b"data: [DONE]\n\n") or b"response.completed" in sent
    assert len(before) == 1 and len(before[0]) == 1  # it was there while it ran
    assert list(other.namespaces.serve("").journal_view()) == []
    assert list(server.namespaces.serve("").journal_view()) == []
