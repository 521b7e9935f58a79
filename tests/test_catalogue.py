"""Every built-in scenario through the real openai SDK, streamed and not, chosen by the header
``X-Ormock-Scenario`` and by the model ``ormock:NAME``; and the Agents SDK on ``tool-roundtrip``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import openai
import pytest
import yaml
from agent_runs import run_agent

from ormock import Engine, OrmockServer, Reply, check_stream
from ormock.protocol.tokens import count_tokens
from ormock.scenario import catalogue, find_scenario, load_scenario
from ormock.scenario.catalogue import load_file

Json = dict[str, Any]
ISSUE_ENTRIES = {"text", "tool-call", "parallel-tool-calls", "tool-roundtrip", "reasoning",
                 "refusal", "annotations", "json-output", "vendor-item", "long-text"}
WEATHER = {"type": "function", "name": "get_weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
TIME = {"type": "function", "name": "get_time",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


def namespace_of(base_url: str) -> str:
    return base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]


@pytest.fixture
def engine(server: OrmockServer, base_url: str) -> Engine:
    """The test's engine, with pacing off (long-text would take seconds otherwise)."""
    fake = server.engine(namespace_of(base_url))
    fake.speed = 0
    return fake


@pytest.fixture(params=["header", "model"])
def how(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=[False, True], ids=["json", "stream"])
def stream(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


class Answer:
    """A response and, when streamed, its events (checked to fold to the same response)."""

    def __init__(self, client: openai.OpenAI, name: str, how: str, stream: bool,
                 **request: Any) -> None:
        if how == "header":
            request.setdefault("model", "gpt-4o-mini")
            request["extra_headers"] = {"X-Ormock-Scenario": name}
        else:
            request["model"] = f"ormock:{name}"
        request.setdefault("input", "Hello")
        self.events: list[Any] = []
        if stream:
            self.events = list(client.responses.create(stream=True, **request))
            assert [e.sequence_number for e in self.events] == list(range(len(self.events)))
            assert self.events[0].type == "response.created"
            assert self.events[-1].type == "response.completed"
            self.response = self.events[-1].response
        else:
            self.response = client.responses.create(**request)
        assert self.response.status == "completed"
        assert self.response.model == request["model"]

    def deltas(self, kind: str = "response.output_text.delta") -> list[str]:
        return [e.delta for e in self.events if e.type == kind]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


def test_the_catalogue_has_every_entry_of_the_issue_each_described_in_one_line() -> None:
    entries = catalogue()
    assert set(entries) >= ISSUE_ENTRIES
    for name, path in entries.items():
        scenario = load_file(path)
        assert scenario.name == name == path.stem
        assert scenario.description and "\n" not in scenario.description
        assert scenario.description.endswith(".")


def test_every_catalogue_file_validates_against_the_shipped_schema() -> None:
    from pathlib import Path

    shipped = Path(__file__).resolve().parent.parent / "ormock" / "scenario" / (
        "scenario.schema.json")
    validator = jsonschema.Draft202012Validator(json.loads(shipped.read_text()))
    for path in catalogue().values():
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
        assert not errors, (path.name, errors)


def _plain_entries() -> Iterator[str]:
    """Entries that keep the protocol (fault scenarios are tested with the faults)."""
    for name, path in catalogue().items():
        steps = load_file(path).steps
        if not any(s.reply.faults or s.reply.breaks for s in steps):
            yield name


@pytest.mark.parametrize("name", sorted(_plain_entries()))
def test_every_plain_entry_sends_a_valid_stream(name: str, engine: Engine,
                                                http: httpx.Client) -> None:
    body = http.post("/responses", json={"model": "m", "input": "Hi", "stream": True},
                     headers={"X-Ormock-Scenario": name})
    assert body.status_code == 200
    report = check_stream(body.content, profile=find_scenario(name).profile)
    assert report.ok, report.violations
    plain = http.post("/responses", json={"model": "m", "input": "Hi"},
                      headers={"X-Ormock-Scenario": name}).json()
    assert report.response is not None

    def content(output: list[Json]) -> list[Json]:
        return [{k: v for k, v in item.items() if k not in ("id", "call_id")} for item in output]

    # the same request gets the same content (under new ids)
    assert content(plain["output"]) == content(report.response["output"])
    assert [(e.scenario, e.step) for e in engine.journal] == [(name, 1), (name, 1)]


def test_text(client: openai.OpenAI, engine: Engine, how: str, stream: bool) -> None:
    answer = Answer(client, "text", how, stream)
    text = answer.response.output_text
    assert text.startswith("Hello! ") and text.endswith(".") and len(text.split()) >= 4
    if stream:
        deltas = answer.deltas()
        assert "".join(deltas) == text and deltas[0] == "Hello!"
        assert all(d.startswith(" ") for d in deltas[1:])  # word by word


def test_tool_call(client: openai.OpenAI, engine: Engine, how: str, stream: bool) -> None:
    answer = Answer(client, "tool-call", how, stream, tools=[WEATHER])
    (call,) = answer.response.output
    assert call.type == "function_call" and call.name == "get_weather"
    assert json.loads(call.arguments) == {"location": "Paris", "unit": "celsius"}
    assert call.call_id.startswith("call_")
    if stream:
        args = "".join(answer.deltas("response.function_call_arguments.delta"))
        assert args == call.arguments
        (done,) = answer.of("response.function_call_arguments.done")
        assert done.arguments == call.arguments


def test_parallel_tool_calls(client: openai.OpenAI, engine: Engine, how: str,
                             stream: bool) -> None:
    answer = Answer(client, "parallel-tool-calls", how, stream, tools=[WEATHER])
    calls = answer.response.output
    assert [c.type for c in calls] == ["function_call", "function_call"]
    assert [json.loads(c.arguments) for c in calls] == [{"location": "Paris"},
                                                        {"location": "Tokyo"}]
    assert len({c.call_id for c in calls}) == 2
    if stream:
        assert [e.output_index for e in answer.of("response.output_item.added")] == [0, 1]


def _outputs(calls: list[Any]) -> list[Json]:
    results = {"get_weather": "18C and mild", "get_time": "09:00"}
    return [{"type": "function_call_output", "call_id": c.call_id, "output": results[c.name]}
            for c in calls]


def test_tool_roundtrip(client: openai.OpenAI, engine: Engine, how: str, stream: bool) -> None:
    question = [{"role": "user", "content": "Weather and time in Paris?"}]
    first = Answer(client, "tool-roundtrip", how, stream, tools=[WEATHER, TIME], input=question)
    calls = first.response.output
    assert [(c.type, c.name, json.loads(c.arguments)) for c in calls] == [
        ("function_call", "get_weather", {"city": "Paris"}),
        ("function_call", "get_time", {"city": "Paris"}),
    ]
    history = [*question,
               *({"type": "function_call", "call_id": c.call_id, "name": c.name,
                  "arguments": c.arguments} for c in calls),
               *_outputs(calls)]
    answer = Answer(client, "tool-roundtrip", how, stream, tools=[WEATHER, TIME], input=history)
    assert answer.response.output_text == "Here is what I found. 18C and mild 09:00"
    chained = Answer(client, "tool-roundtrip", how, stream, tools=[WEATHER, TIME],
                     previous_response_id=first.response.id, input=_outputs(calls))
    assert chained.response.output_text == answer.response.output_text
    assert [e.step for e in engine.journal] == [1, 2, 2]


def test_reasoning(base_url: str, engine: Engine, how: str, stream: bool) -> None:
    # a lenient client: the openai SDK names the reasoning text delta differently (see below)
    with openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0) as lenient:
        answer = Answer(lenient, "reasoning", how, stream)
    reasoning, message = answer.response.output
    assert reasoning.type == "reasoning"
    assert [s.text for s in reasoning.summary] == [
        "The user wants a short answer; I will check the facts first."]
    assert [c.text for c in reasoning.content or []] == ["Paris is the capital of France."]
    assert message.type == "message"
    assert answer.response.output_text == "The capital of France is Paris."
    usage = answer.response.usage
    assert usage is not None and usage.output_tokens_details.reasoning_tokens > 0
    if stream:
        summary = "".join(answer.deltas("response.reasoning_summary_text.delta"))
        assert summary == reasoning.summary[0].text
        assert "".join(answer.deltas("response.reasoning.delta")) == (
            "Paris is the capital of France.")


def test_refusal(client: openai.OpenAI, engine: Engine, how: str, stream: bool) -> None:
    answer = Answer(client, "refusal", how, stream)
    (message,) = answer.response.output
    assert message.type == "message"
    (part,) = message.content
    assert part.type == "refusal" and part.refusal == "I'm sorry, but I can't help with that."
    assert answer.response.output_text == ""
    if stream:
        assert "".join(answer.deltas("response.refusal.delta")) == part.refusal
        (done,) = answer.of("response.refusal.done")
        assert done.refusal == part.refusal


def test_annotations(client: openai.OpenAI, engine: Engine, how: str, stream: bool) -> None:
    answer = Answer(client, "annotations", how, stream)
    (message,) = answer.response.output
    assert message.type == "message"
    (part,) = message.content
    assert part.type == "output_text"
    text = part.text
    cited = [(text[a.start_index:a.end_index], a.url, a.title) for a in part.annotations]
    assert cited == [
        ("330 metres tall", "https://en.wikipedia.org/wiki/Eiffel_Tower",
         "Eiffel Tower - Wikipedia"),
        ("completed in 1889", "https://www.toureiffel.paris/en/the-monument/history",
         "History of the Eiffel Tower"),
    ]
    if stream:
        added = answer.of("response.output_text.annotation.added")
        assert [e.annotation_index for e in added] == [0, 1]
        assert [e.annotation.start_index for e in added] == [
            a.start_index for a in part.annotations]


def test_json_output(client: openai.OpenAI, engine: Engine, how: str, stream: bool) -> None:
    answer = Answer(client, "json-output", how, stream)
    assert json.loads(answer.response.output_text) == {
        "city": "Paris", "temperature_c": 18, "conditions": ["cloudy", "mild"]}
    if stream:
        deltas = answer.deltas()
        assert all(len(d) == 8 for d in deltas[:-1]) and 0 < len(deltas[-1]) <= 8


def test_vendor_item(base_url: str, engine: Engine, how: str, stream: bool) -> None:
    # the SDK's strict validation knows no vendor items: a lenient client, as real users have
    with openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0) as lenient:
        answer = Answer(lenient, "vendor-item", how, stream)
    vendor, message = answer.response.output
    assert vendor.type == "acme:web_search_call"
    fields = vendor.model_dump()
    assert fields["query"] == "weather in Paris" and fields["results"] == 3
    assert fields["status"] == "completed" and fields["id"]
    assert message.type == "message"
    assert answer.response.output_text == (
        "According to the search results, it is mild in Paris today.")
    if stream:
        added, done = answer.of("response.output_item.added")[0], answer.of(
            "response.output_item.done")[0]
        assert added.item.type == done.item.type == "acme:web_search_call"
        assert added.item.status == "in_progress" and done.item.status == "completed"


def test_long_text(client: openai.OpenAI, engine: Engine, how: str, stream: bool) -> None:
    answer = Answer(client, "long-text", how, stream)
    text = answer.response.output_text
    assert 1500 <= count_tokens(text) <= 8000  # about two thousand tokens
    usage = answer.response.usage
    assert usage is not None and usage.output_tokens == count_tokens(text)
    if stream:
        deltas = answer.deltas()
        assert "".join(deltas) == text
        assert all(count_tokens(d) <= 4 for d in deltas) and len(deltas) >= 400
    assert {e["offset_ms"] for e in engine.journal[0].events} == {0.0}  # speed 0


def test_long_text_pacing_is_planned_at_200_tokens_per_second() -> None:
    fake = Engine()
    fake.use("long-text")
    reply = fake.respond({"model": "m", "input": "Hello", "stream": True}, {})
    assert isinstance(reply, Reply) and reply.pacing is not None
    delays = reply.pacing.delays(reply.events, reply.seed)
    assert 0.3 * 0.8 <= delays[0] <= 0.3 * 1.2
    tokens = sum(count_tokens(e["delta"]) for e in reply.events if e["type"].endswith(".delta"))
    assert 0.8 * tokens / 200 <= sum(delays[1:]) <= 1.2 * tokens / 200
    assert reply.json_delay() == pytest.approx(sum(delays))
    offsets = [e["offset_ms"] for e in fake.journal[0].events]
    assert offsets == sorted(offsets) and offsets[-1] == pytest.approx(sum(delays) * 1000)
    assert offsets[-1] > 10_000  # seconds of streaming that no test waits for


def test_agents_runner_completes_a_two_tool_loop(base_url: str) -> None:
    agents = pytest.importorskip("agents")
    calls: list[tuple[str, str]] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """Get the weather in a city."""
        calls.append(("get_weather", city))
        return f"18C and mild in {city}"

    @agents.function_tool
    def get_time(city: str) -> str:
        """Get the local time in a city."""
        calls.append(("get_time", city))
        return f"09:00 in {city}"

    final = str(run_agent(base_url, [get_weather, get_time],
                          "What is the weather and time in Paris?",
                          model="ormock:tool-roundtrip",
                          instructions="Use the tools, then answer."))
    assert sorted(calls) == [("get_time", "Paris"), ("get_weather", "Paris")]
    assert "18C and mild in Paris" in final and "09:00 in Paris" in final


# -- how a reply is chosen ----------------------------------------------------------------------


def test_unknown_name_suggests_the_near_miss(client: openai.OpenAI, engine: Engine,
                                             how: str) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        Answer(client, "tool-cal", how, False)
    assert caught.value.code == "unknown_scenario"
    assert "no scenario named 'tool-cal' (did you mean 'tool-call'?)" in caught.value.message
    assert "`ormock scenarios` lists them" in caught.value.message


def test_the_header_wins_over_the_model_name(client: openai.OpenAI, engine: Engine) -> None:
    response = client.responses.create(model="ormock:refusal", input="Hi",
                                       extra_headers={"X-Ormock-Scenario": "json-output"})
    assert json.loads(response.output_text)["city"] == "Paris"


def test_loaded_scenarios_come_before_the_header(client: openai.OpenAI, engine: Engine) -> None:
    engine.use({"name": "mine", "steps": [
        {"match": {"input": "mine"}, "reply": {"items": [{"message": "loaded"}]}}]})
    header = {"X-Ormock-Scenario": "json-output"}
    assert client.responses.create(model="m", input="mine", extra_headers=header
                                   ).output_text == "loaded"
    # the loaded scenario misses (it is strict): the named one still answers
    assert json.loads(client.responses.create(model="m", input="other", extra_headers=header
                                              ).output_text)["city"] == "Paris"
    with pytest.raises(openai.BadRequestError, match="Closest: scenario 'mine' step 1"):
        client.responses.create(model="m", input="other")
    assert [e.scenario for e in engine.journal] == ["mine", "json-output", None]


def test_a_named_scenario_must_match_even_when_not_strict(client: openai.OpenAI,
                                                          engine: Engine) -> None:
    engine.use({"name": "mine", "strict": False, "steps": [
        {"times": "forever", "match": {"stream": False},
         "reply": {"items": [{"message": "mine"}]}}]})
    assert client.responses.create(model="ormock:mine", input="Hi").output_text == "mine"
    events = list(client.responses.create(model="m", input="Hi", stream=True))
    assert events[-1].type == "response.completed"  # not strict: the default answers
    with pytest.raises(openai.BadRequestError) as caught:  # asked for by name: no fallback
        list(client.responses.create(model="ormock:mine", input="Hi", stream=True))
    assert "Closest: scenario 'mine' step 1 (<scenario>): the request streams." in (
        caught.value.message)
    assert [e.scenario for e in engine.journal] == ["mine", None, None]


def test_without_scenarios_the_embedded_default_answers(client: openai.OpenAI,
                                                        engine: Engine) -> None:
    response = client.responses.create(model="gpt-4o-mini", input="Hi")
    assert response.status == "completed" and response.output_text
    assert engine.journal[0].scenario is None


def test_find_scenario_by_name_and_path(tmp_path: Any) -> None:
    assert find_scenario("text").name == "text"
    assert find_scenario(str(catalogue()["refusal"])).name == "refusal"
    own = tmp_path / "text.yaml"
    own.write_text("name: my-text\nsteps:\n  - reply: {}\n")
    assert find_scenario("text", (tmp_path,)).name == "my-text"  # a folder comes first
    assert load_scenario(catalogue()["text"]).seed == 1


def test_a_named_file_whose_name_differs_from_its_stem_can_chain(tmp_path: Any) -> None:
    (tmp_path / "chain.yaml").write_text(
        "name: my-chain\nsteps:\n"
        "  - match: {previous_response_id: false}\n    reply: {items: [{message: one}]}\n"
        "  - match: {previous_response_id: 'step:1'}\n    reply: {items: [{message: two}]}\n")
    fake = Engine(scenario_dirs=(tmp_path,))
    header = {"x-ormock-scenario": "chain"}
    first = fake.respond({"model": "m", "input": "x"}, header)
    assert isinstance(first, Reply)
    second = fake.respond({"model": "m", "input": "y",
                           "previous_response_id": first.response["id"]}, header)
    assert isinstance(second, Reply)
    assert second.response["output"][0]["content"][0]["text"] == "two"
