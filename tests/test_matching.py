"""Every matching rule and every step mode: in ``ScenarioSet.select`` and through the openai SDK."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from ormock import OrmockServer
from ormock.scenario import Miss, RequestView, ScenarioSet, Selection, load_scenario

Json = dict[str, Any]


def _step(match: Json, text: str = "matched", **extra: Any) -> Json:
    return {"match": match, "times": "forever", "reply": {"items": [{"message": text}]}, **extra}


def _set(*steps: Json, **top: Any) -> ScenarioSet:
    scenarios = ScenarioSet()
    scenarios.add(load_scenario({"name": "s", "steps": list(steps), **top}))
    return scenarios


def _view(**fields: Any) -> RequestView:
    fields.setdefault("model", "gpt-4o-mini")
    fields.setdefault("input_text", "hello")
    return RequestView(**fields)


def _chosen(scenarios: ScenarioSet, **fields: Any) -> int:
    """The index of the step that answers, or fail with the misses."""
    chosen = scenarios.select(_view(**fields))
    assert isinstance(chosen, Selection), [m.describe() for m in chosen]
    return chosen.step.index


def _misses(scenarios: ScenarioSet, **fields: Any) -> list[Miss]:
    chosen = scenarios.select(_view(**fields))
    assert isinstance(chosen, list), f"step {chosen.step.index} answered"
    return chosen


# (rule, match, a request that passes, a request that fails, the reason the miss gives)
RULES: list[tuple[str, Json, Json, Json, str]] = [
    ("model exact", {"model": "gpt-4o"}, {"model": "gpt-4o"}, {"model": "gpt-4o-mini"},
     "model 'gpt-4o-mini' does not match 'gpt-4o'"),
    ("model glob", {"model": "gpt-4o*"}, {"model": "gpt-4o-mini"}, {"model": "gpt-5"},
     "model 'gpt-5' does not match 'gpt-4o*'"),
    ("model regex", {"model_regex": "^gpt-[45]$"}, {"model": "gpt-5"}, {"model": "gpt-4o"},
     "model 'gpt-4o' does not match /^gpt-[45]$/"),
    ("input exact", {"input": "What time is it?"}, {"input_text": "What time is it?\n"},
     {"input_text": "What time is it now?"},
     "input 'What time is it now?' is not 'What time is it?'"),
    ("input contains", {"input_contains": "weather"}, {"input_text": "the weather in Paris"},
     {"input_text": "the time in Paris"}, "input 'the time in Paris' does not contain 'weather'"),
    ("input contains all of a list", {"input_contains": ["weather", "Paris"]},
     {"input_text": "weather in Paris?"}, {"input_text": "weather in Rome?"},
     "input 'weather in Rome?' does not contain 'Paris'"),
    ("input regex", {"input_regex": r"\bParis\b"}, {"input_text": "to Paris!"},
     {"input_text": "Parisian"}, r"input 'Parisian' does not match /\bParis\b/"),
    ("instructions contain", {"instructions_contains": "French"},
     {"instructions": "Answer in French."}, {"instructions": "Answer in German."},
     "instructions 'Answer in German.' do not contain 'French'"),
    ("instructions contain all of a list", {"instructions_contains": ["French", "brief"]},
     {"instructions": "Be brief, in French."}, {"instructions": "In French."},
     "instructions 'In French.' do not contain 'brief'"),
    ("tools offered", {"tools": ["get_weather"]}, {"tools": ["get_time", "get_weather"]},
     {"tools": ["get_time"]}, "tool 'get_weather' is not offered (offered: get_time)"),
    ("tools: none offered", {"tools": ["get_weather"]}, {"tools": ["get_weather"]},
     {"tools": []}, "tool 'get_weather' is not offered (offered: none)"),
    ("tools: [] means no tools", {"tools": []}, {"tools": []}, {"tools": ["get_time"]},
     "tools ['get_time'] were offered; the step wants none"),
    ("tool_choice string", {"tool_choice": "required"}, {"tool_choice": "required"},
     {"tool_choice": "auto"}, "tool_choice is 'auto', not 'required'"),
    ("tool_choice object", {"tool_choice": {"type": "function", "name": "f"}},
     {"tool_choice": {"type": "function", "name": "f"}}, {"tool_choice": "required"},
     "tool_choice is 'required', not {'type': 'function', 'name': 'f'}"),
    ("function_call_output true", {"function_call_output": True}, {"call_outputs": ["c1"]},
     {"call_outputs": []}, "the input has no function_call_output"),
    ("function_call_output false", {"function_call_output": False}, {"call_outputs": []},
     {"call_outputs": ["c1", "c2"]}, "the input has function_call_output for c1, c2"),
    ("function_call_output call ids", {"function_call_output": ["c1", "c2"]},
     {"call_outputs": ["c2", "c1"]}, {"call_outputs": ["c1"]},
     "no function_call_output for call_id 'c2'"),
    ("function_call_output one call id", {"function_call_output": "c1"},
     {"call_outputs": ["c1"]}, {"call_outputs": ["c9"]},
     "no function_call_output for call_id 'c1'"),
    ("previous_response_id true", {"previous_response_id": True},
     {"previous_response_id": "resp_1"}, {}, "the request has no previous_response_id"),
    ("previous_response_id false", {"previous_response_id": False}, {},
     {"previous_response_id": "resp_1"}, "the request continues 'resp_1'"),
    ("previous_response_id literal", {"previous_response_id": "resp_1"},
     {"previous_response_id": "resp_1"}, {"previous_response_id": "resp_2"},
     "previous_response_id 'resp_2' is not 'resp_1'"),
    ("header glob, name in any case", {"headers": {"X-Tenant": "acme-*"}},
     {"headers": {"x-tenant": "acme-42"}}, {"headers": {"x-tenant": "globex-1"}},
     "header 'X-Tenant' is 'globex-1', not 'acme-*'"),
    ("header missing", {"headers": {"x-tenant": "*"}}, {"headers": {"x-tenant": ""}},
     {"headers": {}}, "header 'x-tenant' is missing"),
    ("metadata", {"metadata": {"suite": "smoke"}}, {"metadata": {"suite": "smoke", "x": "y"}},
     {"metadata": {"suite": "full"}}, "metadata 'suite' is 'full', not 'smoke'"),
    ("stream true", {"stream": True}, {"stream": True}, {"stream": False},
     "the request does not stream"),
    ("stream false", {"stream": False}, {"stream": False}, {"stream": True},
     "the request streams"),
]


@pytest.mark.parametrize(("match", "passing", "failing", "reason"),
                         [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_each_rule_passes_and_explains_a_miss(
    match: Json, passing: Json, failing: Json, reason: str
) -> None:
    scenarios = _set(_step(match))
    assert _chosen(scenarios, **passing) == 1
    (miss,) = _misses(scenarios, **failing)
    assert miss.reasons == [reason]
    assert miss.describe() == f"scenario 's' step 1 (<scenario>): {reason}"


def test_every_registered_check_is_tested() -> None:
    from ormock.scenario import CHECKS

    tested = {key for _, match, *_ in RULES for key in match}
    assert tested == set(CHECKS)


def test_a_step_with_no_match_takes_anything() -> None:
    scenarios = _set({"reply": {"items": [{"message": "hi"}]}})
    assert _chosen(scenarios, model="anything", input_text="") == 1


def test_all_checks_of_a_step_must_pass_and_each_failure_is_named() -> None:
    scenarios = _set(_step({"model": "gpt-5", "input_contains": "weather", "stream": True}))
    (miss,) = _misses(scenarios, model="gpt-4o", input_text="time", stream=True)
    assert miss.reasons == ["model 'gpt-4o' does not match 'gpt-5'",
                            "input 'time' does not contain 'weather'"]


def test_previous_response_id_step_n_follows_the_response_that_step_produced() -> None:
    scenarios = _set(
        _step({"previous_response_id": False}, "first"),
        _step({"previous_response_id": "step:1"}, "second"),
    )
    (_, miss) = _misses(scenarios, previous_response_id="resp_a")
    assert miss.reasons == ["step 1 has not answered yet, so nothing can continue it"]
    chosen = scenarios.select(_view())
    assert isinstance(chosen, Selection) and chosen.step.index == 1
    scenarios.answered(chosen, "resp_a")
    assert _chosen(scenarios, previous_response_id="resp_a") == 2
    (_, miss) = _misses(scenarios, previous_response_id="resp_b")
    assert miss.reasons == ["previous_response_id 'resp_b' is not step 1's response 'resp_a'"]


def test_only_a_step_some_step_n_names_has_its_response_remembered() -> None:
    scenarios = _set(
        _step({"previous_response_id": False}, "first"),
        _step({"previous_response_id": "step:1"}, "second"),
        _step({}, "third"),
    )
    first, second, third = (Selection(scenarios.scenarios[0], step)
                            for step in scenarios.scenarios[0].steps)
    assert (first.continued, second.continued, third.continued) == (True, False, False)
    for selection in (first, second, third):
        scenarios.answered(selection, f"resp_{selection.step.index}")
    assert scenarios.produced == {("s", 1): "resp_1"}


def test_a_first_step_that_answers_anything_is_the_scenarios_free_step() -> None:
    assert _set(_step({}), _step({"model": "m"})).scenarios[0].free is not None
    assert _set(_step({"model": "m"}), _step({})).scenarios[0].free is None
    assert _set(_step({}, times=2)).scenarios[0].free is None
    assert _set(_step({}), order="best").scenarios[0].free is None
    assert _set(_step({"nth": 2})).scenarios[0].free is None
    free = _set(_step({}), _step({}))
    assert [_chosen(free) for _ in range(3)] == [1, 1, 1]
    assert free.used(free.scenarios[0], free.scenarios[0].steps[0]) == 3  # each use counted


def test_nth_answers_only_the_nth_request_that_passes_its_checks() -> None:
    scenarios = _set(
        {"match": {"nth": 2, "input_contains": "retry"}, "reply": {"items": [{"message": "2"}]}},
        _step({}, "other"),
    )
    assert _chosen(scenarios, input_text="unrelated") == 2  # does not count: checks fail
    assert _chosen(scenarios, input_text="retry 1") == 2
    assert _chosen(scenarios, input_text="retry 2") == 1
    assert _chosen(scenarios, input_text="retry 3") == 2


def test_nth_miss_says_which_request_it_was() -> None:
    scenarios = _set({"match": {"nth": 3}, "reply": {"items": [{"message": "3"}]}})
    (miss,) = _misses(scenarios)
    assert miss.reasons == ["this is matching request #1; the step answers request #3 (nth: 3)"]


@pytest.mark.parametrize(("times", "answers"), [(None, 1), (1, 1), (3, 3), ("forever", 50)])
def test_times(times: int | str | None, answers: int) -> None:
    step: Json = {"reply": {"items": [{"message": "hi"}]}}
    if times is not None:
        step["times"] = times
    scenarios = _set(step)
    for _ in range(answers):
        assert _chosen(scenarios) == 1
    if times == "forever":
        assert scenarios.unused() == []
        return
    (miss,) = _misses(scenarios)
    plural = "" if answers == 1 else "s"
    assert miss.reasons == [f"already used {answers} time{plural} (times: {answers})"]


def test_unused_lists_steps_used_fewer_times_than_they_expect() -> None:
    scenarios = _set(
        {"times": 2, "match": {"input": "a"}, "reply": {"items": [{"message": "a"}]}},
        {"times": "forever", "match": {"input": "b"}, "reply": {"items": [{"message": "b"}]}},
        {"match": {"input": "c"}, "reply": {"items": [{"message": "c"}]}},
    )
    assert [(step.index, used) for _, step, used in scenarios.unused()] == [(1, 0), (2, 0),
                                                                           (3, 0)]
    _chosen(scenarios, input_text="a")
    _chosen(scenarios, input_text="b")
    assert [(step.index, used) for _, step, used in scenarios.unused()] == [(1, 1), (3, 0)]


def test_order_first_takes_the_first_step_that_matches() -> None:
    scenarios = _set(_step({"input_contains": "weather"}, "broad"),
                     _step({"input_contains": "weather", "tools": ["get_weather"]}, "narrow"))
    assert _chosen(scenarios, input_text="weather", tools=["get_weather"]) == 1


def test_order_best_takes_the_step_with_most_checks_then_the_earliest() -> None:
    scenarios = _set(
        _step({"input_contains": "weather"}, "broad"),
        _step({"input_contains": "weather", "tools": ["get_weather"]}, "narrow"),
        _step({"input_contains": "weather", "stream": True}, "narrow too"),
        order="best",
    )
    assert _chosen(scenarios, input_text="weather", tools=["get_weather"]) == 2
    assert _chosen(scenarios, input_text="weather", stream=True) == 3
    assert _chosen(scenarios, input_text="weather", tools=["get_weather"], stream=True) == 2
    assert _chosen(scenarios, input_text="weather") == 1


def test_order_best_counts_nth_as_a_check() -> None:
    scenarios = _set(_step({"input_contains": "weather"}, "broad"),
                     {"match": {"nth": 1}, "reply": {"items": [{"message": "x"}]}},
                     order="best")
    assert _chosen(scenarios, input_text="weather") == 1  # a tie: the earlier one
    scenarios = _set(_step({}, "anything"),
                     {"match": {"input_contains": "w", "nth": 1},
                      "reply": {"items": [{"message": "x"}]}},
                     order="best")
    assert _chosen(scenarios, input_text="w") == 2


def test_order_sequence_goes_step_by_step_and_names_the_step_it_waits_for() -> None:
    scenarios = _set(
        {"times": 2, "match": {"input_contains": "one"}, "reply": {"items": [{"message": "1"}]}},
        {"match": {"input_contains": "two"}, "reply": {"items": [{"message": "2"}]}},
        order="sequence",
    )
    (miss,) = _misses(scenarios, input_text="two")
    assert miss.step.index == 1 and miss.reasons == ["input 'two' does not contain 'one'"]
    assert _chosen(scenarios, input_text="one") == 1
    assert _chosen(scenarios, input_text="one") == 1
    (miss,) = _misses(scenarios, input_text="one")
    assert miss.step.index == 2
    assert _chosen(scenarios, input_text="two") == 2
    (miss,) = _misses(scenarios, input_text="two")
    assert miss.reasons == ["already used 1 time (times: 1)"]


def test_misses_are_sorted_closest_first_across_scenarios() -> None:
    scenarios = ScenarioSet()
    scenarios.add(load_scenario({"name": "far", "steps": [
        _step({"model": "gpt-5", "input_contains": "x", "stream": True})]}))
    scenarios.add(load_scenario({"name": "near", "steps": [_step({"model": "gpt-5"})]}))
    misses = _misses(scenarios)
    assert [(m.scenario.name, len(m.reasons)) for m in misses] == [("near", 1), ("far", 3)]


def test_scenarios_are_tried_in_load_order_and_a_reload_starts_over() -> None:
    scenarios = ScenarioSet()
    scenarios.add(load_scenario({"name": "a", "steps": [_step({"input": "x"}, "a")]}))
    scenarios.add(load_scenario({"name": "b", "steps": [_step({}, "b")]}))
    chosen = scenarios.select(_view(input_text="x"))
    assert isinstance(chosen, Selection) and chosen.scenario.name == "a"
    chosen = scenarios.select(_view(input_text="y"))
    assert isinstance(chosen, Selection) and chosen.scenario.name == "b"
    once = {"name": "a", "steps": [{"reply": {"items": [{"message": "a"}]}}]}
    scenarios.add(load_scenario(once))
    assert [s.name for s in scenarios.scenarios] == ["b", "a"]
    b = scenarios.scenarios[0]
    assert scenarios.used(b, b.steps[0]) == 1
    assert scenarios.used(scenarios.scenarios[1], scenarios.scenarios[1].steps[0]) == 0
    scenarios.remove("b")
    assert _chosen(scenarios) == 1
    assert _misses(scenarios)[0].reasons == ["already used 1 time (times: 1)"]


def test_strict_is_any_loaded_scenario_strict() -> None:
    lax = load_scenario({"name": "lax", "strict": False, "steps": [_step({})]})
    scenarios = ScenarioSet([lax])
    assert not scenarios.strict
    scenarios.add(load_scenario({"name": "tight", "steps": [_step({})]}))
    assert scenarios.strict


def test_bad_regex_is_refused_at_load_with_its_line() -> None:
    from ormock.scenario import ScenarioError

    with pytest.raises(ScenarioError) as caught:
        load_scenario("name: s\nsteps:\n  - match:\n      input_regex: '(unclosed'\n"
                      "    reply: {items: [{message: x}]}\n")
    assert str(caught.value).startswith("<scenario>:4: steps[0].match.input_regex: not a valid "
                                        "regular expression: missing ), unterminated subpattern")


# -- end to end, through the openai SDK ----------------------------------------------------------

WEATHER = {"type": "function", "name": "get_weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
TIME = {"type": "function", "name": "get_time",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
CALL = {"type": "function_call", "call_id": "call_1", "name": "get_weather",
        "arguments": '{"city":"Paris"}'}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "18C"}

# (rule, match, what a passing request adds, what a failing one adds, the reason in the 400)
E2E: list[tuple[str, Json, Json, Json, str]] = [
    ("model glob", {"model": "gpt-4o*"}, {"model": "gpt-4o-mini"}, {"model": "gpt-5"},
     "model 'gpt-5' does not match 'gpt-4o*'"),
    ("model regex", {"model_regex": "^gpt-5$"}, {"model": "gpt-5"}, {},
     "model 'gpt-4o-mini' does not match /^gpt-5$/"),
    ("input exact", {"input": "hello"}, {}, {"input": "hello!"}, "input 'hello!' is not 'hello'"),
    ("input contains", {"input_contains": ["Paris", "weather"]},
     {"input": [{"role": "user", "content": [{"type": "input_text",
                                              "text": "weather in Paris?"}]}]},
     {"input": "weather in Rome?"}, "input 'weather in Rome?' does not contain 'Paris'"),
    ("input regex", {"input_regex": "^hel+o$"}, {}, {"input": "help"},
     "input 'help' does not match /^hel+o$/"),
    ("instructions", {"instructions_contains": "French"},
     {"instructions": "Answer in French."}, {},
     "instructions '' do not contain 'French'"),
    ("tools", {"tools": ["get_weather", "get_time"]}, {"tools": [TIME, WEATHER]},
     {"tools": [WEATHER]}, "tool 'get_time' is not offered (offered: get_weather)"),
    ("no tools", {"tools": []}, {}, {"tools": [TIME]},
     "tools ['get_time'] were offered; the step wants none"),
    ("tool_choice", {"tool_choice": "required"}, {"tools": [TIME], "tool_choice": "required"},
     {"tools": [TIME]}, "tool_choice is 'auto', not 'required'"),
    ("function_call_output", {"function_call_output": ["call_1"]},
     {"input": [{"role": "user", "content": "weather?"}, CALL, OUTPUT]}, {},
     "no function_call_output for call_id 'call_1'"),
    ("no function_call_output", {"function_call_output": False}, {},
     {"input": [CALL, OUTPUT]}, "the input has function_call_output for call_1"),
    ("headers", {"headers": {"X-Tenant": "acme-*"}},
     {"extra_headers": {"x-tenant": "acme-7"}}, {"extra_headers": {"X-TENANT": "other"}},
     "header 'X-Tenant' is 'other', not 'acme-*'"),
    ("metadata", {"metadata": {"suite": "smoke"}}, {"metadata": {"suite": "smoke"}},
     {"metadata": {"suite": "full"}}, "metadata 'suite' is 'full', not 'smoke'"),
    ("stream", {"stream": True}, {"stream": True}, {}, "the request does not stream"),
]


def namespace_of(base_url: str) -> str:
    return base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]


def _text(client: openai.OpenAI, **request: Any) -> str:
    request = {"model": "gpt-4o-mini", "input": "hello", **request}
    if request.get("stream"):
        events = list(client.responses.create(**request))
        final = events[-1]
        assert final.type == "response.completed"
        return str(final.response.output_text)
    return str(client.responses.create(**request).output_text)


@pytest.mark.parametrize(("match", "passing", "failing", "reason"),
                         [r[1:] for r in E2E], ids=[r[0] for r in E2E])
def test_each_rule_through_the_sdk(
    server: OrmockServer, base_url: str, client: openai.OpenAI,
    match: Json, passing: Json, failing: Json, reason: str,
) -> None:
    engine = server.engine(namespace_of(base_url))
    engine.use({"name": "rule", "steps": [_step(match, "matched")]})
    assert _text(client, **passing) == "matched"
    with pytest.raises(openai.BadRequestError) as caught:
        _text(client, **failing)
    assert caught.value.code == "no_matching_scenario"
    assert f"Closest: scenario 'rule' step 1 (<scenario>): {reason}." in caught.value.message
    assert [e.scenario for e in engine.journal] == ["rule", None]
    assert engine.journal[1].status == 400


def test_agent_loop_in_a_few_lines(server: OrmockServer, base_url: str,
                                   client: openai.OpenAI) -> None:
    engine = server.engine(namespace_of(base_url))
    engine.use(load_scenario("""
name: weather-agent
order: sequence
steps:
  - match: {input_contains: weather, tools: [get_weather]}
    reply:
      items:
        - function_call: {name: get_weather, arguments: {city: Paris}, call_id: call_paris}
  - match: {function_call_output: [call_paris], previous_response_id: "step:1"}
    reply:
      items:
        - message: "It is {{ request.tool_outputs }} in Paris."
"""))
    first = client.responses.create(model="gpt-4o-mini", input="What is the weather in Paris?",
                                    tools=[WEATHER])  # type: ignore[list-item]
    (call,) = first.output
    assert call.type == "function_call" and call.call_id == "call_paris"
    assert call.name == "get_weather" and call.arguments == '{"city":"Paris"}'
    second = client.responses.create(
        model="gpt-4o-mini", previous_response_id=first.id, tools=[WEATHER],  # type: ignore[list-item]
        input=[{"type": "function_call_output", "call_id": "call_paris", "output": "18C"}],
    )
    assert second.output_text == "It is 18C in Paris."
    assert second.previous_response_id == first.id
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o-mini", previous_response_id=second.id,
                                input="and tomorrow?")
    assert "scenario 'weather-agent' step 2 (<scenario>:9): " in caught.value.message
    assert "already used 1 time (times: 1)" in caught.value.message
    assert engine.scenarios.unused() == []
    assert [(e.scenario, e.step) for e in engine.journal] == [
        ("weather-agent", 1), ("weather-agent", 2), (None, None)]


def test_previous_response_id_of_another_step_is_refused(
    server: OrmockServer, base_url: str, client: openai.OpenAI
) -> None:
    engine = server.engine(namespace_of(base_url))
    engine.use({"name": "chain", "steps": [
        _step({"input": "one", "previous_response_id": False}, "1"),
        _step({"input": "two", "previous_response_id": False}, "2"),
        _step({"previous_response_id": "step:1"}, "after 1"),
    ]})
    one = client.responses.create(model="m", input="one")
    two = client.responses.create(model="m", input="two")
    assert client.responses.create(model="m", input="x", previous_response_id=one.id
                                   ).output_text == "after 1"
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="m", input="x", previous_response_id=two.id)
    assert (f"Closest: scenario 'chain' step 3 (<scenario>): previous_response_id {two.id!r} is "
            f"not step 1's response {one.id!r}.") in caught.value.message


def test_previous_response_id_and_tool_outputs_present_through_the_sdk(
    server: OrmockServer, base_url: str, client: openai.OpenAI
) -> None:
    engine = server.engine(namespace_of(base_url))
    engine.use({"name": "chain", "steps": [
        _step({"previous_response_id": False}, "fresh"),
        {"times": "forever", "match": {"input": "call"}, "reply": {"items": [
            {"function_call": {"name": "get_weather", "call_id": "call_1"}}]}},
        _step({"previous_response_id": True, "function_call_output": True}, "outputs"),
        _step({"previous_response_id": True}, "continued"),
    ]})
    first = client.responses.create(model="m", input="hi")
    second = client.responses.create(model="m", input="more", previous_response_id=first.id)
    call = client.responses.create(model="m", input="call", previous_response_id=second.id)
    third = client.responses.create(model="m", previous_response_id=call.id,
                                    input=[OUTPUT])  # type: ignore[list-item]
    assert [first.output_text, second.output_text, third.output_text] == [
        "fresh", "continued", "outputs"]
    engine.use({"name": "exact", "steps": [_step({"previous_response_id": second.id}, "2nd")]})
    assert client.responses.create(model="m", input="x", previous_response_id=second.id
                                   ).output_text == "continued"  # "chain" was loaded first
    engine.scenarios.remove("chain")
    assert client.responses.create(model="m", input="x", previous_response_id=second.id
                                   ).output_text == "2nd"
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="m", input="x", previous_response_id=first.id)
    assert f"previous_response_id {first.id!r} is not {second.id!r}" in caught.value.message


def test_step_modes_through_the_sdk(server: OrmockServer, base_url: str,
                                    client: openai.OpenAI) -> None:
    engine = server.engine(namespace_of(base_url))
    engine.use({"name": "modes", "steps": [
        {"times": 2, "match": {"input": "twice"}, "reply": {"items": [{"message": "t"}]}},
        {"match": {"input": "nth", "nth": 2}, "reply": {"items": [{"message": "second"}]}},
        {"times": "forever", "reply": {"items": [{"message": "fallback"}]}},
    ]})
    answers = [_text(client, input=i) for i in ("twice", "twice", "twice", "nth", "nth", "nth")]
    assert answers == ["t", "t", "fallback", "fallback", "second", "fallback"]
    assert engine.scenarios.unused() == []


def test_sequence_through_the_sdk(server: OrmockServer, base_url: str,
                                  client: openai.OpenAI) -> None:
    engine = server.engine(namespace_of(base_url))
    engine.use({"name": "seq", "order": "sequence", "steps": [
        _step({}, "any", times=1), {"reply": {"items": [{"message": "two"}]}},
    ]})
    assert [_text(client), _text(client)] == ["any", "two"]


def test_best_through_the_sdk(server: OrmockServer, base_url: str,
                              client: openai.OpenAI) -> None:
    server.engine(namespace_of(base_url)).use({"name": "best", "order": "best", "steps": [
        _step({"model": "gpt-*"}, "broad"),
        _step({"model": "gpt-*", "tools": ["get_time"]}, "narrow"),
    ]})
    assert _text(client) == "broad"
    assert _text(client, tools=[TIME]) == "narrow"


SCENARIO_FILE = """\
name: travel
description: the near miss names this file and line
steps:
  - name: weather
    match:
      model: gpt-4o-mini
      input_contains: weather
      tools: [get_weather]
    reply: {items: [{message: sunny}]}
  - name: flights
    match:
      model: gpt-5
      input_contains: flight
      tools: [book]
    reply: {items: [{message: booked}]}
"""


def test_near_miss_names_the_closest_step_with_file_line_and_each_failed_check(
    server: OrmockServer, base_url: str, client: openai.OpenAI, tmp_path: Path
) -> None:
    path = tmp_path / "travel.yaml"
    path.write_text(SCENARIO_FILE)
    server.engine(namespace_of(base_url)).use(str(path))
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o", input="book a flight to Rome")
    error = caught.value
    assert error.status_code == 400 and error.code == "no_matching_scenario"
    assert error.param == "input"
    assert error.body["message"] == (  # type: ignore[index]
        f"No scenario step matches this request. Closest: scenario 'travel' step 2 (flights) "
        f"({path}:10): model 'gpt-4o' does not match 'gpt-5'; tool 'book' is not offered "
        "(offered: none). 1 other step did not match either. Change the request or the "
        "scenario, or load it with strict: false to fall back to the default reply."
    )


def test_strict_false_falls_back_to_the_default_reply(
    server: OrmockServer, base_url: str, client: openai.OpenAI
) -> None:
    engine = server.engine(namespace_of(base_url))
    engine.use({"name": "lax", "strict": False,
                "steps": [_step({"input_contains": "weather"}, "sunny")]})
    assert _text(client, input="the weather?") == "sunny"
    default = client.responses.create(model="gpt-4o-mini", input="something else")
    assert default.status == "completed" and default.output_text not in ("", "sunny")
    assert [e.scenario for e in engine.journal] == ["lax", None]
    assert engine.journal[1].status == 200


def test_a_registered_check_can_be_used_in_a_scenario() -> None:
    from ormock.scenario import CHECKS, register_check, scenario_schema

    @register_check("input_startswith")
    def _starts(view: RequestView, prefix: str, _: Any) -> str | None:
        if view.input_text.startswith(prefix):
            return None
        return f"input does not start with {prefix!r}"

    try:
        assert "input_startswith" in scenario_schema()["properties"]["steps"]["items"][
            "properties"]["match"]["properties"]
        scenarios = _set(_step({"input_startswith": "Hey"}))
        assert _chosen(scenarios, input_text="Hey you") == 1
        assert _misses(scenarios, input_text="Hi")[0].reasons == [
            "input does not start with 'Hey'"]
    finally:
        del CHECKS["input_startswith"]
    assert "input_startswith" not in scenario_schema()["properties"]["steps"]["items"][
        "properties"]["match"]["properties"]



def test_finding4_secret_not_in_near_miss_answer(server: OrmockServer, base_url: str) -> None:
    engine = server.engine(namespace_of(base_url))
    cases = [("Authorization", "Bearer sk-test-*", "Bearer sk-secret-XYZ",
              "'Bearer sk-\u2026' (masked, 20 chars)"),
             ("x-goog-api-key", "AIza-test-*", "AIzaSecretGoog123",
              "'AIz\u2026' (masked, 17 chars)"),
             ("Cookie", "session=test-*", "session=cookie-secret-456",
              "'ses\u2026' (masked, 25 chars)")]
    with httpx.Client(base_url=base_url, timeout=10) as http:
        for name, pattern, value, shown in cases:
            engine.use({"name": "auth", "steps": [_step({"headers": {name: pattern}})]})
            answer = http.post("/responses", json={"model": "m", "input": "hi"},
                               headers={name: value})
            assert answer.status_code == 400, answer.text
            assert answer.json()["error"]["code"] == "no_matching_scenario"
            assert value not in answer.text and value[4:] not in answer.text
            assert (f"header {name!r} is {shown}, not {pattern!r}"
                    in answer.json()["error"]["message"])


def test_a_view_is_made_only_when_a_step_has_checks() -> None:
    made: list[RequestView] = []

    def look() -> RequestView:
        made.append(_view(input_text="hello"))
        return made[-1]

    free = ScenarioSet()
    free.add(load_scenario({"name": "free", "steps": [
        {"times": "forever", "reply": {"items": [{"message": "hi"}]}}]}))
    assert isinstance(free.select(look), Selection) and made == []
    checked = ScenarioSet()
    checked.add(load_scenario({"name": "checked", "steps": [
        {"match": {"input_contains": "bye"}, "reply": {"items": [{"message": "no"}]}},
        {"match": {"input_contains": "hello"}, "reply": {"items": [{"message": "yes"}]}}]}))
    chosen = checked.select(look)
    # asked by each step with checks (``choose`` keeps the first view it makes)
    assert isinstance(chosen, Selection) and chosen.step.index == 2 and len(made) == 2
