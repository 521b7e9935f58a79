"""Running an openai-agents loop against a fake: one helper for every test that does it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import openai


def run_agent(
    base_url: str,
    tools: Sequence[Any],
    prompt: str,
    *,
    model: str = "gpt-4o-mini",
    instructions: str = "Answer questions about the weather.",
    streamed: bool = False,
    chained: bool = False,
    **client_options: Any,
) -> Any:
    """Run an Agent with ``tools`` on ``prompt`` (``Runner.run``, or ``Runner.run_streamed``
    read to the end) with an openai client pointed at ``base_url``; its final output.
    ``chained``: each turn after the first sends only its new items, with the
    ``previous_response_id`` of the turn before (``auto_previous_response_id``)."""
    import agents

    agents.set_tracing_disabled(True)
    client_options.setdefault("max_retries", 0)
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", **client_options)
    agent = agents.Agent(
        name="agent", instructions=instructions, tools=list(tools),
        model=agents.OpenAIResponsesModel(model=model, openai_client=client),
    )

    async def go() -> Any:
        async with client:
            if not streamed:
                return (await agents.Runner.run(
                    agent, prompt, auto_previous_response_id=chained)).final_output
            result = agents.Runner.run_streamed(agent, prompt,
                                                auto_previous_response_id=chained)
            async for _ in result.stream_events():
                pass
            return result.final_output

    return asyncio.run(go())
