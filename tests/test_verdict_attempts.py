"""The verdict recognises a retry by what makes two requests the same attempt (the same input,
tools and previous response), with the fields a client changes per attempt left out
(``client_metadata``, ``prompt_cache_key``; ``Rules.per_attempt``): on hand-made journals, the
admin API and the command line, and on real retries over HTTP and WebSocket."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from ormock import OrmockServer
from ormock.cli import main
from ormock.engine.verdict import PER_ATTEMPT, Rules, judge, rules_from

KEY = "sk-" + "test"
Json = dict[str, Any]
BODY: Json = {"model": "gpt-5", "input": "Hi", "tools": [], "prompt_cache_key": "thread-1",
              "client_metadata": {"x-codex-ws-stream-request-start-ms": "1000"}}
_names = itertools.count()


def entry(at: float, status: int, body: Json, finished_at: float | None = None) -> Json:
    return {"method": "POST", "path": "/v1/responses", "headers": {}, "body": body, "at": at,
            "status": status, "stream": True, "response_id": None,
            "response_status": "completed" if status == 200 else None,
            "error": None if status == 200 else {"code": "server_error"}, "faults": [],
            "reply_headers": {}, "ended": "whole", "output_ids": [],
            "finished_at": finished_at if finished_at is not None else at, "events": []}


def turn(at: float, status: int, body: Json, *, response_id: str | None = None,
         output_ids: tuple[str, ...] = (), ended: str = "whole") -> Json:
    """An entry with its response and the ids it sent."""
    return {**entry(at, status, body), "response_id": response_id,
            "output_ids": list(output_ids), "ended": ended,
            "response_status": "completed" if status == 200 and ended == "whole" else
            ("in_progress" if status == 200 else None)}


def test_a_chained_attempt_and_its_whole_retry_are_one_request() -> None:
    # Codex over WebSocket: a warm-up, the turn chained to it (a 500), then the turn sent
    # whole on a new connection: the warm-up's input and the turn's own, no parent
    system = {"type": "message", "id": "msg_1", "role": "developer", "content": "Be brief."}
    user = {"type": "message", "id": "msg_2", "role": "user", "content": "Say hi"}
    warm = turn(0.0, 200, {**BODY, "input": [system], "generate": False}, response_id="r1")
    chained = turn(0.1, 500, {**BODY, "input": [user], "previous_response_id": "r1"})
    whole = turn(0.5, 200, {**BODY, "input": [system, user]}, response_id="r2")
    assert codes([warm, chained, whole]) == []
    other = turn(0.5, 200, {**BODY, "input": [system, {**user, "content": "Bye"}]})
    assert codes([warm, chained, other]) == [("gave-up-too-early", (2,))]
    # an output item sent back whole is read by its ids, as the chain holds it
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f",
            "arguments": "{}"}
    result = {"type": "function_call_output", "call_id": "call_1", "output": "ok"}
    first = turn(0.0, 200, {**BODY, "input": [user]}, response_id="r1",
                 output_ids=("fc_1", "call_1"))
    chained = turn(0.1, 500, {**BODY, "input": [result], "previous_response_id": "r1"})
    whole = turn(0.5, 200, {**BODY, "input": [user, call, result]}, response_id="r2")
    assert codes([first, chained, whole]) == []


def test_ids_a_retry_sent_again_are_not_from_the_broken_stream() -> None:
    # a stream stalled after sending its call; the retry sent the same call id, whole
    stalled = turn(0.0, 200, BODY, response_id="r1", output_ids=("fc_1", "call_echo"),
                   ended="stalled")
    retried = turn(1.0, 200, BODY, response_id="r2", output_ids=("fc_2", "call_echo"))
    result = {**BODY, "input": [{"type": "function_call_output", "call_id": "call_echo",
                                 "output": "hi"}]}
    assert codes([stalled, retried, turn(1.5, 200, result)]) == []
    assert ("accepted-broken-stream", (1, 2)) in codes([stalled, turn(1.5, 200, result)])


def attempt(at: float, status: int, started: str, cache_key: str = "thread-1") -> Json:
    return entry(at, status, {**BODY, "prompt_cache_key": cache_key, "client_metadata": {
        "x-codex-ws-stream-request-start-ms": started}})


def codes(journal: Any, **options: Any) -> list[tuple[str, tuple[int, ...]]]:
    return [(f.code, f.requests) for f in judge(journal, **options).findings]


def test_a_retry_with_new_per_attempt_fields_is_a_retry() -> None:
    journal = [attempt(0.0, 500, "1000"), attempt(0.4, 200, "1400", cache_key="thread-2")]
    assert codes(journal) == []
    # with no per-attempt field, the second looks like another request: the 500 was given up
    assert codes(journal, rules=Rules(per_attempt=())) == [("gave-up-too-early", (1,))]
    # a retry storm is seen through the per-attempt fields too
    storm = [attempt(i * 0.001, 500, str(i)) for i in range(8)]
    assert ("retry-storm", tuple(range(1, 9))) in codes(storm)


def test_another_input_tools_or_previous_response_is_another_request() -> None:
    for change in ({"input": "Bye"}, {"tools": [{"type": "function", "name": "f"}]},
                   {"previous_response_id": "resp_1"}):
        journal = [attempt(0.0, 500, "1"), entry(0.4, 200, {**BODY, **change})]
        assert codes(journal) == [("gave-up-too-early", (1,))], change


def test_per_attempt_is_a_rule_like_the_others() -> None:
    assert Rules().per_attempt == PER_ATTEMPT == ("client_metadata", "prompt_cache_key")
    assert rules_from({"per_attempt": "client_metadata, user"}).per_attempt == (
        "client_metadata", "user")
    assert rules_from({"per_attempt": ""}).per_attempt == ()
    with pytest.raises(ValueError, match="per_attempt must be a tuple of field names"):
        Rules(per_attempt="client_metadata")  # type: ignore[arg-type]


def opened(server: OrmockServer) -> tuple[str, str]:
    name = f"attempts{next(_names)}"
    server.namespaces.open(name)
    return name, f"{server.url}/{name}/v1"


def verdict(server: OrmockServer, name: str, **query: str) -> Json:
    answer = httpx.get(f"{server.url}/{name}/_ormock/verdict", params=query, timeout=10)
    assert answer.status_code == 200, answer.text
    found: Json = answer.json()
    return found


def test_a_retried_500_over_http_with_a_changed_client_metadata(server: OrmockServer,
                                                               tmp_path: Path) -> None:
    name, base = opened(server)
    server.engine(name).inject({"http_error": 500, "when": {"first": 1}})
    with httpx.Client(base_url=base, timeout=10,
                      headers={"Authorization": f"Bearer {KEY}"}) as http:
        for started in ("1000", "1400"):  # as Codex retries: a new start time in its metadata
            answer = http.post("/responses", json={
                **BODY, "client_metadata": {"x-codex-ws-stream-request-start-ms": started}})
            time.sleep(0.2)  # its backoff
    assert answer.status_code == 200
    found = verdict(server, name)
    assert found["ok"] and found["findings"] == [] and found["faults"] == 1, found["report"]
    assert verdict(server, name, per_attempt="")["findings"][0]["code"] == "gave-up-too-early"
    # the command line reads the same rule
    saved = tmp_path / "journal.json"
    saved.write_text(httpx.get(f"{server.url}/{name}/_ormock/journal", timeout=10).text)
    assert main(["verdict", str(saved)]) == 0
    assert main(["verdict", str(saved), "--per-attempt", ""]) == 1
    assert main(["verdict", "--url", server.url, "--namespace", name]) == 0


def test_a_retried_500_over_websocket_with_a_changed_client_metadata(
        server: OrmockServer) -> None:
    name, base = opened(server)
    server.engine(name).inject({"http_error": 500, "when": {"first": 1}})
    with openai.OpenAI(base_url=base, api_key=KEY, max_retries=0) as client, \
            client.responses.connect() as connection:
        for started in ("1000", "1400"):
            # sent as Codex sends it: client_metadata is not a parameter of the SDK's own
            connection.send_raw(json.dumps({
                "type": "response.create", "model": "gpt-5", "input": "Hi", "store": False,
                "prompt_cache_key": "thread-1",
                "client_metadata": {"x-codex-ws-stream-request-start-ms": started}}))
            last = None
            for event in connection:
                last = event
                if event.type in ("response.completed", "error"):
                    break
            time.sleep(0.2)
    assert last is not None and last.type == "response.completed"
    found = verdict(server, name)
    assert found["ok"], found["report"]
    assert [f["code"] for f in verdict(server, name, per_attempt="")["findings"]] == [
        "gave-up-too-early"]
    entries = json.loads(httpx.get(f"{server.url}/{name}/_ormock/journal", timeout=10).text)
    assert [e["status"] for e in entries["data"]] == [500, 200]


def test_a_failed_warm_up_need_not_be_retried() -> None:
    system = {"type": "message", "id": "msg_1", "role": "developer", "content": "Be brief."}
    warm = turn(0.0, 500, {**BODY, "input": [system], "generate": False})
    whole = turn(0.5, 200, {**BODY, "input": [system]}, response_id="r2")
    assert codes([warm, whole]) == []
    assert codes([turn(0.0, 500, {**BODY, "input": [system]})]) == [("gave-up-too-early", (1,))]
