"""An openai-agents loop (Runner with a function tool) runs to completion on the bare server."""

from __future__ import annotations

import asyncio

import openai
import pytest

agents = pytest.importorskip("agents")


def test_runner_calls_the_tool_then_answers(base_url: str) -> None:
    agents.set_tracing_disabled(True)
    calls: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """Get the weather for a city."""
        calls.append(city)
        return f"It is 18 degrees in {city}."

    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    agent = agents.Agent(
        name="weather",
        instructions="Answer questions about the weather.",
        tools=[get_weather],
        model=agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
    )

    async def run() -> object:
        async with client:
            return await agents.Runner.run(agent, "What is the weather in Lisbon?")

    result = asyncio.run(run())
    assert calls == ["Lisbon"]
    final = result.final_output  # type: ignore[attr-defined]
    assert isinstance(final, str) and "It is 18 degrees in Lisbon." in final


def test_streamed_runner(base_url: str) -> None:
    agents.set_tracing_disabled(True)

    @agents.function_tool
    def lookup(term: str) -> str:
        """Look a term up."""
        return f"{term}: found"

    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    agent = agents.Agent(
        name="lookup",
        instructions="Use the lookup tool.",
        tools=[lookup],
        model=agents.OpenAIResponsesModel(model="m", openai_client=client),
    )

    async def run() -> str:
        async with client:
            streamed = agents.Runner.run_streamed(agent, "Please lookup ducks.")
            async for _ in streamed.stream_events():
                pass
            return str(streamed.final_output)

    assert ": found" in asyncio.run(run())
