"""The hosted tools of the Agents SDK (``WebSearchTool``, ``FileSearchTool``,
``CodeInterpreterTool``, ``ImageGenerationTool``, ``HostedMCPTool``) against the embedded
default under the openai profile: the model's turn runs the tool and answers in one response,
so the run's items are the call, then the message its final output is."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import agents
import openai
import pytest

from ormock import OrmockServer

CASES: dict[str, tuple[Any, str, str]] = {
    "web_search": (agents.WebSearchTool(), "Search the web for the tallest tower.",
                   "web_search_call"),
    "file_search": (agents.FileSearchTool(vector_store_ids=["vs_1"]),
                    "What do the documents say about towers?", "file_search_call"),
    "code_interpreter": (agents.CodeInterpreterTool(tool_config={
        "type": "code_interpreter", "container": {"type": "auto"}}),
        "Calculate the mean with python.", "code_interpreter_call"),
    "image_generation": (agents.ImageGenerationTool(tool_config={
        "type": "image_generation", "partial_images": 1}), "Draw a picture of a tower.",
        "image_generation_call"),
    "mcp": (agents.HostedMCPTool(tool_config={
        "type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.example.com",
        "require_approval": "never"}), "Ask deepwiki about towers.", "mcp_call"),
}


@pytest.fixture(scope="module")
def server() -> Iterator[OrmockServer]:
    with OrmockServer(seed=0, self_check=True, profile="openai") as running:
        yield running


def run(base_url: str, tool: Any, prompt: str, streamed: bool) -> Any:
    agents.set_tracing_disabled(True)
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    agent = agents.Agent(name="agent", instructions="Use your tools.", tools=[tool],
                         model=agents.OpenAIResponsesModel(model="gpt-5",
                                                           openai_client=client))

    async def go() -> Any:
        async with client:
            if not streamed:
                return await agents.Runner.run(agent, prompt)
            result = agents.Runner.run_streamed(agent, prompt)
            async for _ in result.stream_events():
                pass
            return result

    return asyncio.run(go())


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hosted_tool_runs_within_the_agents_turn(server: OrmockServer, name: str,
                                                   streamed: bool) -> None:
    tool, prompt, call_type = CASES[name]
    result = run(server.base_url, tool, prompt, streamed)
    raw = [getattr(item.raw_item, "type", None) for item in result.new_items]
    assert call_type in raw and raw[-1] == "message"
    assert isinstance(result.final_output, str) and result.final_output
    assert len(result.raw_responses) == 1  # the provider ran it: one model turn
