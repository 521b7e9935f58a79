"""An openai-agents loop whose turns alternate between two ``ormock serve`` replicas on one
redis-server completes: the turn after the tool call continues, by ``previous_response_id``, a
response the other replica made and stored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from agent_runs import run_agent
from stores import RedisServer, serve

agents = pytest.importorskip("agents")


class Alternating:
    """A request hook of the SDK's own HTTP client (``openai.DefaultAsyncHttpxClient``, whatever
    HTTP library the installed SDK is built on): sends each request to the next of ``ports`` in
    turn (whatever port its URL names), and remembers which port got which request body."""

    def __init__(self, ports: list[int]) -> None:
        self.ports, self.sent = ports, list[tuple[int, dict[str, object]]]()

    async def __call__(self, request: Any) -> None:
        port = self.ports[len(self.sent) % len(self.ports)]
        self.sent.append((port, json.loads(request.content or b"{}")))
        request.url = request.url.copy_with(port=port)

    def client(self) -> Any:
        return openai.DefaultAsyncHttpxClient(timeout=10, event_hooks={"request": [self]})


@pytest.fixture
def ports(redis_server: RedisServer) -> Iterator[tuple[str, list[int]]]:
    url = redis_server.fresh_url()
    with serve("--store", url) as first, serve("--store", url) as second:
        yield first.base_url, [httpx.URL(first.base_url).port or 0,
                               httpx.URL(second.base_url).port or 0]


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "streamed"])
def test_an_agent_loop_whose_turns_alternate_replicas_completes(
        ports: tuple[str, list[int]], streamed: bool) -> None:
    base_url, both = ports
    calls: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """Get the weather for a city."""
        calls.append(city)
        return f"It is 18 degrees in {city}."

    transport = Alternating(both)
    final = run_agent(base_url, [get_weather], "What is the weather in Lisbon?",
                      streamed=streamed, chained=True,
                      http_client=transport.client())
    assert calls == ["Lisbon"]
    assert isinstance(final, str) and "It is 18 degrees in Lisbon." in final
    # two turns, one on each replica; the second sent only the tool's output and continued
    # the first turn's response, which the other replica stored
    assert [port for port, _ in transport.sent] == both
    second = transport.sent[1][1]
    assert isinstance(second.get("previous_response_id"), str)
    items = second["input"]
    assert isinstance(items, list) and [item["type"] for item in items] == ["function_call_output"]
