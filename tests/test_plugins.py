"""The plugin API, with the first-party ``context_limit`` plugin over a real server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from ormock import OrmockServer, plugins
from ormock.plugins import PluginError, load_plugins
from ormock.scenario import CHECKS, ScenarioError, load_scenario


@pytest.fixture(autouse=True)
def _registry_restored() -> Iterator[None]:
    """Plugins register for the whole process: undo it so other tests see the built-ins."""
    checks, loaded = dict(CHECKS), dict(plugins._loaded)
    yield
    CHECKS.clear()
    CHECKS.update(checks)
    plugins._loaded.clear()
    plugins._loaded.update(loaded)


PLUGIN = str(Path(__file__).resolve().parent.parent / "plugins" / "context_limit" / "__init__.py")


def test_context_limit_plugin_end_to_end() -> None:
    with OrmockServer(plugins=[PLUGIN], scenarios=["context-limit"]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        assert client.responses.create(model="m", input="short").output_text == (
            "That fits in my context window."
        )
        with pytest.raises(openai.BadRequestError) as raised:
            client.responses.create(model="m", input="word " * 300)
        body = raised.value.body
        assert isinstance(body, dict)
        assert body["code"] == "context_length_exceeded" and body["param"] == "input"


def test_a_plugins_scenarios_are_named_only_on_the_servers_given_it() -> None:
    with OrmockServer(plugins=[PLUGIN], speed=0) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        assert client.responses.create(model="ormock:context-limit", input="short").output_text
    with OrmockServer(speed=0) as other:  # the same process, no plugin: not its folder
        client = openai.OpenAI(base_url=other.base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError) as raised:
            client.responses.create(model="ormock:context-limit", input="short")
        body = raised.value.body
        assert isinstance(body, dict) and body["code"] == "unknown_scenario"
        assert "context-limit" not in body["message"].split("Available:")[1]


def test_a_registered_check_is_part_of_the_schema_and_checked_at_load() -> None:
    load_plugins([PLUGIN])
    scenario = load_scenario({"name": "x", "steps": [
        {"match": {"input_tokens_over": 3}, "reply": {"items": [{"message": "long"}]}}]})
    assert scenario.steps[0].checks[0].key == "input_tokens_over"
    with pytest.raises(ScenarioError, match="whole number of tokens"):
        load_scenario({"name": "x", "steps": [
            {"match": {"input_tokens_over": "many"}, "reply": {}}]})


def test_plugins_that_cannot_load_say_why(tmp_path: Path) -> None:
    with pytest.raises(PluginError, match="not found"):
        load_plugins([str(tmp_path / "missing.py")])
    bare = tmp_path / "bare.py"
    bare.write_text("X = 1\n")
    with pytest.raises(PluginError, match=r"no register\(registry\)"):
        load_plugins([str(bare)])
    with pytest.raises(PluginError, match="failed to import"):
        load_plugins(["ormock_no_such_plugin_module"])
