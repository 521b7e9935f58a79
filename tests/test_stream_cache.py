"""The stream cache: a repeated content is issued from its first build, byte for byte."""

from __future__ import annotations

from typing import Any

import httpx

from ormock import OrmockServer, check_stream
from ormock.engine.core import Engine
from ormock.engine.reply import Reply

TOOLS = [{"type": "function", "name": "get_weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
REQUESTS: list[dict[str, Any]] = [
    {"model": "m", "input": "hello", "stream": True},
    {"model": "m", "input": "hello", "stream": True},  # a repeat: from the cache
    {"model": "m", "input": "hello"},  # the same content, as JSON
    {"model": "m", "input": "Weather in Oslo?", "tools": TOOLS},
    {"model": "m", "input": "Weather in Oslo?", "tools": TOOLS, "stream": True},
    {"model": "m", "input": "Think.", "reasoning": {"effort": "low"}, "stream": True},
]


def _fresh_bytes() -> list[bytes]:
    """What building every reply from scratch gives (the engine's Python path)."""
    engine = Engine(seed=3)
    out = []
    for body in REQUESTS:
        reply = engine.respond(body, {})
        assert isinstance(reply, Reply) and reply.summary is None
        out.append(reply.sse_body() if body.get("stream") else reply.json_body())
    return out


def test_cached_replies_are_byte_for_byte_fresh_builds() -> None:
    with OrmockServer(seed=3) as server, httpx.Client(base_url=server.base_url) as raw:
        served = [raw.post("/responses", json=body).content for body in REQUESTS]
        journal = server.engine().journal
    assert served == _fresh_bytes()
    assert journal[1].events == journal[0].events  # the summary of a cached reply
    assert journal[1].response_id != journal[0].response_id
    assert journal[4].output_ids and journal[4].output_ids != journal[3].output_ids
    for body in served[:2]:
        assert check_stream(body).ok


def test_a_cached_reply_can_be_continued() -> None:
    with OrmockServer() as server, httpx.Client(base_url=server.base_url) as raw:
        for _ in range(2):
            first = raw.post("/responses", json={"model": "m", "input": "Weather in Rome?",
                                                 "tools": TOOLS}).json()
        call = first["output"][0]
        follow = raw.post("/responses", json={
            "model": "m", "previous_response_id": first["id"], "tools": TOOLS,
            "input": [{"type": "function_call_output", "call_id": call["call_id"],
                       "output": "sunny"}]})
        assert follow.status_code == 200, follow.text
        assert "sunny" in follow.json()["output"][0]["content"][0]["text"]
        assert raw.get(f"/responses/{first['id']}").json() == first


def test_a_cached_stream_stores_its_own_response() -> None:
    body = {"model": "m", "input": "stream me", "stream": True}
    with OrmockServer() as server, httpx.Client(base_url=server.base_url) as raw:
        raw.post("/responses", json=body)
        again = check_stream(raw.post("/responses", json=body).content).response
        assert again is not None
        stored = raw.get(f"/responses/{again['id']}").json()
        assert stored == again
