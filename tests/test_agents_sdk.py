"""An openai-agents loop (Runner with a function tool) runs to completion on the bare server."""

from __future__ import annotations

import pytest
from agent_runs import run_agent

agents = pytest.importorskip("agents")


def test_runner_calls_the_tool_then_answers(base_url: str) -> None:
    calls: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """Get the weather for a city."""
        calls.append(city)
        return f"It is 18 degrees in {city}."

    final = run_agent(base_url, [get_weather], "What is the weather in Lisbon?")
    assert calls == ["Lisbon"]
    assert isinstance(final, str) and "It is 18 degrees in Lisbon." in final


def test_streamed_runner(base_url: str) -> None:
    @agents.function_tool
    def lookup(term: str) -> str:
        """Look a term up."""
        return f"{term}: found"

    final = run_agent(base_url, [lookup], "Please lookup ducks.", model="m",
                      instructions="Use the lookup tool.", streamed=True)
    assert ": found" in str(final)
