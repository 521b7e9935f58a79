"""Bad input to the endpoints beside create gets a clear answer, against a real server: an
unknown namespace is 404 on ``GET /v1/models`` too, a namespace needs a name, and a ``HEAD`` of
the inspector's live journal neither holds its connection nor leaves a watcher behind."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from ormock import OrmockServer
from ormock.protocol.schema import validate_error


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    envelope = response.json()
    assert validate_error(envelope) is None, validate_error(envelope)
    error: dict[str, Any] = envelope["error"]
    return error


def test_models_of_an_unknown_or_dropped_namespace_is_404(server: OrmockServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as raw:
        error = _error(raw.get("/never-opened/v1/models"), 404)
        assert (error["code"], error["param"]) == ("unknown_namespace", "path")
        assert "POST /_ormock/namespaces" in error["message"]
        server.namespaces.open("models-dropped")
        assert raw.get("/models-dropped/v1/models").status_code == 200
        server.namespaces.drop("models-dropped")
        error = _error(raw.get("/models-dropped/v1/models"), 404)
        assert error["code"] == "namespace_closed"
        assert raw.get("/v1/models").status_code == 200  # the default namespace is always open


def test_opening_a_namespace_without_a_name_is_refused(server: OrmockServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as raw:
        for body in ({"name": ""}, {"name": "", "seed": 3}):
            error = _error(raw.post("/_ormock/namespaces", json=body), 400)
            assert (error["code"], error["param"]) == ("invalid_namespace", "name")
            assert "1 to 64 letters" in error["message"]
        assert "" not in raw.get("/_ormock/namespaces").json()["data"]


def test_head_of_the_live_journal_ends_at_once() -> None:
    with OrmockServer(seed=0) as own, httpx.Client(base_url=own.url, timeout=5) as raw:
        head = raw.head("/_ormock/journal/stream")
        assert head.status_code == 200
        assert head.headers["content-type"].startswith("text/event-stream")
        # the same keep-alive connection answers the next request
        assert raw.get("/v1/models").status_code == 200
        deadline = time.monotonic() + 5
        while own.namespaces.feed.watchers and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not own.namespaces.feed.watchers  # nobody watches: replies take the fast path


def test_a_json_reply_held_back_stops_when_the_client_leaves(server: OrmockServer,
                                                             base_url: str) -> None:
    """A JSON answer waits for its whole stream (``slow``: 30 s here); a client that gives up
    meanwhile ends it at once, as a stream's would: no task sleeps on, the journal says
    ``client gone`` and the response is ``cancelled``."""
    name = base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]
    engine = server.namespaces.serve(name)
    with httpx.Client(base_url=base_url, timeout=10) as raw:
        added = raw.post(f"{server.url}/{name}/_ormock/faults",
                         json={"slow": {"first_event": 30}})
        assert added.status_code == 201, added.text
        with pytest.raises(httpx.ReadTimeout):
            raw.post("/responses", json={"model": "m", "input": "hi"}, timeout=0.3)
        [entry] = list(engine.journal)
        deadline = time.monotonic() + 5
        while entry.finished_at is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert entry.ended == "client gone" and entry.finished_at is not None
        assert entry.response_id is not None
        stored = raw.get(f"/responses/{entry.response_id}").json()
        assert stored["status"] == "cancelled"


def test_an_item_reference_is_not_added_to_a_conversation(base_url: str) -> None:
    """An ``item_reference`` only points at an item (create's ``input`` leaves it out of the
    conversation): added as an item it would be listed as one no client can read (the openai
    SDK's ``ConversationItem`` has no such type) and take the id it points at."""
    reference = {"type": "item_reference", "id": "msg_elsewhere"}
    with httpx.Client(base_url=base_url, timeout=10) as raw:
        error = _error(raw.post("/conversations", json={"items": [reference]}), 400)
        assert (error["param"], error["code"]) == ("items[0].type", "invalid_value")
        assert "add the item itself" in error["message"]
        conversation = raw.post("/conversations", json={}).json()["id"]
        user = {"type": "message", "role": "user", "content": "hi"}
        error = _error(raw.post(f"/conversations/{conversation}/items",
                                json={"items": [user, reference]}), 400)
        assert error["param"] == "items[1].type"
        assert raw.get(f"/conversations/{conversation}/items").json()["data"] == []
