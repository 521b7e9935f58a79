"""Bad input to the endpoints beside create gets a clear answer, against a real server: an
unknown namespace is 404 on ``GET /v1/models`` too, a namespace needs a name, a ``HEAD`` of the
inspector's live journal neither holds its connection nor leaves a watcher behind, a JSON answer
held back ends when its client leaves, a conversation takes no ``item_reference``, and a body
nested too deeply to read is answered (not a 500, not a dropped socket) where cassettes replay
and where ``ormock record`` relays."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from envelopes import error_of
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from ormock import Limits, OrmockServer
from ormock.server.recorder import RecorderServer

CASSETTES = Path(__file__).resolve().parent.parent / "cassettes"
DEEP = "[" * 5000 + "]" * 5000  # valid JSON that Python's decoder cannot read: too deep
READABLE_BUT_DEEP = '{"input": ' + "[" * 975 + "]" * 975 + "}"  # decoded, then too deep to walk


def test_models_of_an_unknown_or_dropped_namespace_is_404(server: OrmockServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as raw:
        error = error_of(raw.get("/never-opened/v1/models"), 404)
        assert (error["code"], error["param"]) == ("unknown_namespace", "path")
        assert "POST /_ormock/namespaces" in error["message"]
        server.namespaces.open("models-dropped")
        assert raw.get("/models-dropped/v1/models").status_code == 200
        server.namespaces.drop("models-dropped")
        error = error_of(raw.get("/models-dropped/v1/models"), 404)
        assert error["code"] == "namespace_closed"
        assert raw.get("/v1/models").status_code == 200  # the default namespace is always open


def test_opening_a_namespace_without_a_name_is_refused(server: OrmockServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as raw:
        for body in ({"name": ""}, {"name": "", "seed": 3}):
            error = error_of(raw.post("/_ormock/namespaces", json=body), 400)
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
        error = error_of(raw.post("/conversations", json={"items": [reference]}), 400)
        assert (error["param"], error["code"]) == ("items[0].type", "invalid_value")
        assert "add the item itself" in error["message"]
        conversation = raw.post("/conversations", json={}).json()["id"]
        user = {"type": "message", "role": "user", "content": "hi"}
        error = error_of(raw.post(f"/conversations/{conversation}/items",
                                json={"items": [user, reference]}), 400)
        assert error["param"] == "items[1].type"
        assert raw.get(f"/conversations/{conversation}/items").json()["data"] == []


def _ws(url: str) -> str:
    return url.replace("http", "ws", 1) + "/v1/responses"


def test_a_body_too_deep_to_read_is_a_miss_where_cassettes_replay(server: OrmockServer,
                                                                  base_url: str) -> None:
    name = base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]
    engine = server.namespaces.serve(name)
    root = f"{server.url}/{name}"
    yaml = {"content-type": "application/yaml"}
    with httpx.Client(base_url=root, timeout=10) as raw:
        for file in ("streamed-text.yaml", "websocket-session.yaml"):
            loaded = raw.post("/_ormock/cassettes", content=(CASSETTES / file).read_text(),
                              headers=yaml)
            assert loaded.status_code == 201, loaded.text
        for body in (DEEP, READABLE_BUT_DEEP):  # too deep to decode; past MAX_DEPTH
            error = error_of(raw.post("/v1/responses", content=body,
                                      headers={"content-type": "application/json"}), 400)
            assert "no recorded interaction" in error["message"]
        # what the journal keeps of them is text: it, the checks and the verdict still read
        for view in ("/_ormock/journal", "/_ormock/checks", "/_ormock/verdict"):
            assert raw.get(view).status_code == 200, view
    with connect(_ws(root), max_size=None) as socket:
        socket.send(DEEP)
        event = json.loads(socket.recv(timeout=5))
        assert (event["type"], event["status"]) == ("error", 400)
        assert "not the one recorded next" in event["error"]["message"]
    assert engine.errors == []


def test_a_body_too_deep_to_read_is_relayed_by_the_recorder(tmp_path: Path) -> None:
    with OrmockServer(seed=0) as upstream, RecorderServer(
            upstream.url, tmp_path, name="deep", log=lambda line: None) as recorder:
        with httpx.Client(base_url=recorder.url, timeout=10) as raw:
            error = error_of(raw.post("/v1/responses", content=DEEP,
                                    headers={"content-type": "application/json"}), 400)
            assert (error["code"], error["param"]) == ("invalid_json", "body")
        with connect(_ws(recorder.url), max_size=None) as socket:
            socket.send(DEEP)
            event = json.loads(socket.recv(timeout=5))
            assert (event["type"], event["error"]["code"]) == ("error", "invalid_json")


def _nested(depth: int) -> bytes:
    """A create body whose extra field nests ``depth`` levels (an unknown field is let be)."""
    return ('{"model": "m", "input": "hi", "extra": ' + '[' * (depth - 1) + ']' * (depth - 1)
            + '}').encode()


def test_a_body_nested_past_the_limit_is_refused_before_anything_keeps_it(
        tmp_path: Path) -> None:
    """Past 256 levels a body is a 400 everywhere a JSON body is read, so nothing keeps one
    that the code reading it later cannot walk: on a shared store a body nested ~970 deep was
    journaled and then made ``GET /_ormock/journal``, ``/checks`` and ``/verdict`` 500 for the
    whole namespace, and on memory ``/verdict``."""
    json_body = {"content-type": "application/json"}
    with OrmockServer(seed=0, store=f"sqlite:{tmp_path / 'ormock.db'}") as own, \
            httpx.Client(base_url=own.url, timeout=10) as raw:
        assert raw.post("/v1/responses", content=_nested(64), headers=json_body
                        ).status_code == 200  # deep, but within the limit
        for depth in (300, 970):
            for path in ("/v1/responses", "/v1/responses/compact",
                         "/v1/responses/input_tokens", "/v1/conversations"):
                error = error_of(raw.post(path, content=_nested(depth), headers=json_body), 400)
                assert (error["code"], error["param"]) == ("invalid_json", "body"), path
                assert "256 levels" in error["message"]
            with connect(_ws(own.url), max_size=None) as socket:
                socket.send('{"type": "response.create", ' + _nested(depth)[1:].decode())
                event = json.loads(socket.recv(timeout=5))
                assert (event["type"], event["error"]["param"]) == ("error", "message")
        for path in ("/_ormock/journal", "/_ormock/checks", "/_ormock/verdict"):
            assert raw.get(path).status_code == 200, path
        assert own.engine().errors == []


def test_a_namespace_cannot_be_named_v1(server: OrmockServer) -> None:
    """``/v1/_ormock/...`` would be its admin API and the default namespace's ``/v1`` path at
    once (where the default namespace replays cassettes, the replay took it)."""
    with httpx.Client(base_url=server.url, timeout=10) as raw:
        error = error_of(raw.post("/_ormock/namespaces", json={"name": "v1"}), 400)
        assert (error["code"], error["param"]) == ("invalid_namespace", "name")
        assert "'v1'" in error["message"]
        assert "v1" not in raw.get("/_ormock/namespaces").json()["data"]
        assert raw.post("/_ormock/namespaces", json={"name": "v1a"}).status_code == 201
        server.namespaces.drop("v1a")


def test_a_replayed_answer_waiting_for_its_headers_stops_when_the_client_leaves(
        server: OrmockServer, base_url: str) -> None:
    """A cassette's answer waits as its upstream did before the status line (30 s here); a
    client that gives up meanwhile ends it at once (``client gone``), as on a live answer."""
    name = base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]
    engine = server.namespaces.serve(name)
    text = (CASSETTES / "streamed-text.yaml").read_text()
    assert "headers_at: 17.424" in text
    with httpx.Client(base_url=f"{server.url}/{name}", timeout=10) as raw:
        loaded = raw.post("/_ormock/cassettes", headers={"content-type": "application/yaml"},
                          content=text.replace("headers_at: 17.424", "headers_at: 30000"))
        assert loaded.status_code == 201, loaded.text
        with pytest.raises(httpx.ReadTimeout):
            raw.post("/v1/responses", timeout=0.3, json={
                "model": "gpt-4.1-mini", "stream": True, "input": "Say something short."})
    [entry] = list(engine.journal)
    deadline = time.monotonic() + 5
    while entry.finished_at is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert entry.ended == "client gone" and entry.finished_at is not None


def test_a_binary_frame_to_a_replayed_websocket_session_is_closed_1003(
        server: OrmockServer, base_url: str) -> None:
    """As on a live connection: close 1003 with the reason, not a socket dropped with no
    close frame."""
    name = base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]
    root = f"{server.url}/{name}"
    with httpx.Client(base_url=root, timeout=10) as raw:
        loaded = raw.post("/_ormock/cassettes", headers={"content-type": "application/yaml"},
                          content=(CASSETTES / "websocket-session.yaml").read_text())
        assert loaded.status_code == 201, loaded.text
    with connect(_ws(root)) as socket:
        socket.send(b"\x00\x01")
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=5)
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (
        1003, "send response.create as a text frame")


def test_what_the_admin_api_loads_is_capped_and_the_refusal_says_how_to_make_room() -> None:
    """Scenarios of distinct names, faults and cassettes loaded through the admin API are
    bounded per namespace (``Limits.loaded_*``): past the bound a load is a 400 that loads
    nothing and says what to delete; a scenario loaded again under its name replaces it."""
    limits = Limits(loaded_scenarios=2, loaded_faults=3, loaded_cassettes=1)
    steps = [{"reply": {"items": [{"message": "hi"}]}}]
    yaml = {"content-type": "application/yaml"}
    cassette = (CASSETTES / "streamed-text.yaml").read_text()
    with OrmockServer(seed=0, limits=limits) as own, \
            httpx.Client(base_url=f"{own.url}/_ormock", timeout=10,
                         headers={"x-ormock-admin": "1"}) as admin:
        for name in ("one", "two", "one"):  # "one" again: replaced, not a third
            loaded = admin.post("/scenarios", json={"name": name, "steps": steps})
            assert loaded.status_code == 201, loaded.text
        error = error_of(admin.post("/scenarios", json={"name": "three",
                                                        "steps": steps}), 400)
        assert (error["code"], error["param"]) == ("too_many_scenarios", "body")
        assert "at most 2 scenarios" in error["message"]
        assert "DELETE /_ormock/scenarios/NAME" in error["message"]
        assert "--loaded-scenarios" in error["message"]
        assert sorted(s["name"] for s in admin.get("/scenarios").json()["data"]) == ["one", "two"]
        assert admin.delete("/scenarios/two").status_code == 200
        assert admin.post("/scenarios", json={"name": "three",
                                              "steps": steps}).status_code == 201

        assert admin.post("/faults", json=[{"http_error": 500}] * 2).status_code == 201
        error = error_of(admin.post("/faults", json=[{"http_error": 500}] * 2), 400)
        assert (error["code"], error["param"]) == ("too_many_faults", "body")
        assert "DELETE /_ormock/faults" in error["message"]
        assert len(admin.get("/faults").json()["faults"]) == 2  # nothing of the refused load
        assert admin.post("/faults", json={"http_error": 500}).status_code == 201

        assert admin.post("/cassettes", content=cassette, headers=yaml).status_code == 201
        error = error_of(admin.post("/cassettes", content=cassette, headers=yaml), 400)
        assert (error["code"], error["param"]) == ("too_many_cassettes", "body")
        assert len(admin.get("/cassettes").json()["data"]) == 1
        assert admin.delete("/cassettes").status_code == 200
        assert admin.post("/cassettes", content=cassette, headers=yaml).status_code == 201
