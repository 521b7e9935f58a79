"""The scenario format: every key, one clear message per mistake (file, line, key), literal replies
sent exactly, pacing, the shipped JSON Schema, and the examples of docs/scenarios.md."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import openai
import pytest
import yaml

from ormock import Engine, OrmockServer, Reply, check_stream
from ormock.protocol.tokens import count_tokens
from ormock.scenario import Scenario, ScenarioError, load_scenario, scenario_schema
from ormock.scenario.schema import schema_text

Json = dict[str, Any]
ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "scenarios.md"
SCHEMA_FILE = ROOT / "ormock" / "scenario" / "scenario.schema.json"


def namespace_of(base_url: str) -> str:
    return base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]


def _respond(scenario: Scenario | Json | str, body: Json | None = None, **engine: Any
             ) -> Reply:
    fake = Engine(**engine)
    fake.use(load_scenario(scenario) if isinstance(scenario, str) else scenario)
    reply = fake.respond(body or {"model": "m", "input": "hi", "stream": True}, {})
    assert isinstance(reply, Reply)
    return reply


def _reply(reply: Json, **engine: Any) -> Reply:
    return _respond({"name": "r", "steps": [{"reply": reply}]}, **engine)


def _error(text: str, tmp_path: Path) -> str:
    """The one message a scenario file with a mistake gets."""
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert caught.value.file == str(path)
    return str(caught.value).replace(str(path), "bad.yaml")


def _documented(message: str) -> str:
    """``message`` as docs/scenarios.md shows it (so the docs cannot drift)."""
    assert message in DOCS.read_text(), f"docs/scenarios.md does not show: {message}"
    return message


# -- loading ---------------------------------------------------------------------------------

HELLO = "name: hello\nsteps:\n  - reply:\n      items:\n        - message: Hi\n"


def test_a_scenario_loads_from_a_path_text_or_mapping(tmp_path: Path) -> None:
    path = tmp_path / "hello.yaml"
    path.write_text(HELLO)
    from_path, from_str_path = load_scenario(path), load_scenario(str(path))
    from_text = load_scenario(HELLO)
    from_mapping = load_scenario(yaml.safe_load(HELLO))
    assert from_path.source == from_str_path.source == str(path)
    assert from_text.source is None and from_mapping.source is None
    for scenario in (from_path, from_text, from_mapping):
        assert scenario.name == "hello" and len(scenario.steps) == 1
    assert from_path.where(from_path.steps[0]) == f"{path}:3"
    assert from_mapping.where(from_mapping.steps[0]) == "<scenario>"


def test_defaults() -> None:
    scenario = load_scenario({"name": "d", "steps": [{"reply": {}}]})
    assert (scenario.description, scenario.seed, scenario.order, scenario.strict) == (
        "", 0, "first", True)
    (step,) = scenario.steps
    assert (step.index, step.times, step.nth, step.name, step.checks) == (1, 1, None, None, [])
    reply = step.reply
    assert (reply.status, reply.usage, reply.chunking, reply.pacing, reply.breaks) == (
        "completed", "auto", "words", None, frozenset())
    assert reply.items == [{"message": "OK"}]


def test_name_may_come_from_the_caller() -> None:
    assert load_scenario({"steps": [{"reply": {}}]}, name="given").name == "given"
    assert load_scenario({"name": "own", "steps": [{"reply": {}}]}, name="given").name == "own"


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(tmp_path / "nope.yaml")
    assert str(caught.value) == (
        f"{tmp_path / 'nope.yaml'}: cannot read the scenario file (No such file or directory)")


def test_a_file_that_is_no_regular_file_or_too_large_is_named_unread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A link to /dev/zero in a folder of cassettes grew the server's memory until it died; a
    pipe's read waited for ever; ``ormock check`` did both before its reader was asked."""
    from ormock.cassette import CassetteError, load
    from ormock.commands.check import check_files
    from ormock.scenario import source

    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")
    pipe = tmp_path / "pipe.yaml"
    os.mkfifo(pipe)
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    unread = "cannot read the scenario file (not a regular file: a folder, a device or a pipe)"
    for path in (zero, pipe, folder):
        with pytest.raises(ScenarioError, match=re.escape(f"{path}: {unread}; give a YAML")):
            load_scenario(path)
        with pytest.raises(CassetteError, match=re.escape(f"{path}: cannot read the cassette")):
            load(path)
        (result,) = check_files([str(path)], argparse.Namespace())
        assert result["error"].startswith(f"{path}: {unread}")
    big = tmp_path / "big.yaml"
    big.write_text(HELLO + "#" * 100)
    monkeypatch.setattr(source, "MAX_FILE_BYTES", len(HELLO))
    with pytest.raises(ScenarioError, match=r"big.yaml: cannot read the scenario file \(larger "
                       r"than 0 MiB\); split it into smaller files"):
        load_scenario(big)


def test_yaml_is_read_with_the_safe_loader(tmp_path: Path) -> None:
    text = "name: !!python/object/apply:os.system ['echo pwned']\nsteps: []\n"
    message = _error(text, tmp_path)
    assert message == ("bad.yaml:1: name: the YAML tag '!!python/object/apply:os.system' is not "
                       "allowed: ormock reads plain YAML, never a Python object or any other "
                       "tag; write the value without it")


@pytest.mark.parametrize(("value", "message"), [
    ("2001-13-45", "bad.yaml:3: steps[0].reply.items[0].message: YAML cannot read "
     "'2001-13-45' as a date (month must be in 1..12); put it in quotes to keep it as text"),
    ("9" * 5000, "bad.yaml:3: steps[0].reply.items[0].message: YAML cannot read '" + "9" * 40
     + "...' as a number (Exceeds the limit (4300 digits) for integer string conversion: "
     "value has 5000 digits); put it in quotes to keep it as text"),
])
def test_a_scalar_yaml_cannot_build_is_named_at_its_line(tmp_path: Path, value: str,
                                                         message: str) -> None:
    """A date that does not exist or an integer past Python's digit limit: PyYAML's
    constructors raise a bare ValueError, which once escaped `ormock check` as a traceback."""
    text = f"name: x\nsteps:\n  - reply: {{items: [{{message: {value}}}]}}\n"
    assert _error(text, tmp_path) == message
    with pytest.raises(ScenarioError, match=r"^<scenario>:3: steps\[0\]\.reply\.items\[0\]"):
        Engine().use(text)


def alias_bomb(levels: int = 9) -> str:
    """A "billion laughs": each anchor a list of nine aliases of the one before."""
    rows = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(rows) + "\n"


@pytest.fixture
def never_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if the loader walks a document at all: the bounds must refuse it while composing."""
    from ormock.scenario import source

    def walk(*args: Any) -> None:
        del args  # a traceback would print the nodes, expanding every alias
        raise AssertionError("the expanded document was walked")

    monkeypatch.setattr(source, "_walk", walk)


@pytest.mark.usefixtures("never_walked")
def test_finding3_alias_bomb_is_refused_fast(tmp_path: Path) -> None:
    assert _error(alias_bomb(), tmp_path) == (
        "bad.yaml:6: the document grows past 100000 nodes here (aliases count every time they "
        "are used); write it without so many nested aliases")


@pytest.mark.usefixtures("never_walked")
def test_finding3_alias_bomb_is_refused_as_text_too() -> None:
    from ormock.scenario.source import safe_document

    with pytest.raises(ScenarioError, match=r"^<scenario>:6: the document grows past 100000"):
        load_scenario(alias_bomb())
    with pytest.raises(ScenarioError, match=r"^<scenario>:6: the document grows past 100000"):
        Engine().use(alias_bomb())
    with pytest.raises(ScenarioError, match=r"^body:6: the document grows past 100000"):
        safe_document(alias_bomb(), "body")


@pytest.mark.usefixtures("never_walked")
@pytest.mark.parametrize(("text", "message"), [
    ("a: &x 1\nb: [" + ", ".join(["*x"] * 10_001) + "]\n",
     "bad.yaml:2: more than 10000 aliases; repeat less, or write the parts out"),
    ("a: &x [*x]\n",
     "bad.yaml:1: the alias *x is used inside its own anchor; a scenario cannot refer to itself"),
    ("a: &x " + "[" * 40 + "]" * 40 + "\nb: " + "[" * 40 + "*x" + "]" * 40 + "\n",
     "bad.yaml:2: this alias nests the document deeper than 64 levels; flatten the aliased part"),
])
def test_finding3_aliases_are_bounded(tmp_path: Path, text: str, message: str) -> None:
    assert _error(text, tmp_path) == message


def test_finding3_a_mapping_with_shared_lists_is_bounded() -> None:
    laughs: list[Any] = ["lol"] * 9
    for _ in range(5):  # half a million values, from six small lists
        laughs = [laughs] * 9
    vendor = {"vendor_item": {"type": "acme:x", "fields": {"lol": laughs}}}
    with pytest.raises(ScenarioError, match=r"^steps\[0\]\.reply\.items\[0\]\.vendor_item\."
                       r"fields\.lol\S*: more than 100000 keys, values and items"):
        Engine().use({"name": "big", "steps": [{"reply": {"items": [vendor]}}]})


@pytest.mark.parametrize(("text", "line"), [
    ("[" * 5000, 1),
    ("".join(f"{' ' * i}k{i}:\n" for i in range(5000)) + " " * 5000 + "v\n", 64),
])
def test_finding7_deep_yaml_is_refused_with_file_and_line(tmp_path: Path, text: str,
                                                          line: int) -> None:
    assert _error(text, tmp_path) == (
        f"bad.yaml:{line}: nested deeper than 64 levels; flatten this part of the document")


def test_finding7_non_utf8_scenario_named_with_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\nsteps: []\n".encode("latin-1"))
    for load in (load_scenario, Engine().use):
        with pytest.raises(ScenarioError) as caught:
            load(path if load is load_scenario else str(path))
        assert str(caught.value) == (
            f"{path}:1: not UTF-8 text: byte 0xe9 at offset 9; save the file as UTF-8")


def test_finding7_deep_mapping_through_engine_use() -> None:
    deep: Json = {"x": 1}
    for _ in range(5000):
        deep = {"a": deep}
    vendor = {"vendor_item": {"type": "acme:x", "fields": deep}}
    with pytest.raises(ScenarioError) as caught:
        Engine().use({"name": "deep", "steps": [{"reply": {"items": [vendor]}}]})
    assert str(caught.value) == (
        "steps[0].reply.items[0].vendor_item.fields" + ".a" * 57
        + ": nested deeper than 64 levels; flatten this part")


# -- one clear message per mistake, with file and line ---------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("""\
name: weather
steps:
  - match:
      modle: gpt-4o
    reply:
      items:
        - message: hi
""",
     "bad.yaml:4: steps[0].match.modle: unknown key 'modle' (did you mean 'model'?); known "
     "keys: function_call_output, headers, input, input_contains, input_regex, "
     "instructions_contains, metadata, model, model_regex, nth, previous_response_id, "
     "stream, tool_choice, tools",
     id="wrong_key_suggests_the_near_miss"),
    pytest.param("""\
name: weather
steps:
  - reply:
      items:
        - message: hi
     status: completed
""",
     "bad.yaml:6: YAML syntax error: expected <block end>, but found '<block mapping "
     "start>' (check the indentation of this line and the one before it)",
     id="bad_indentation_is_a_syntax_error_on_its_line"),
    pytest.param("""\
name: weather
steps:
  - reply:
    items:
      - message: hi
""",
     "bad.yaml:4: steps[0].items: unknown key 'items' ('items' belongs under 'reply': is it "
     "indented too little?); known keys: count_faulted, match, name, reply, times",
     id="too_little_indentation_says_where_the_key_belongs"),
    pytest.param("""\
name: weather
steps:
  - match:
      input_contains: weather
    match:
      tools: [get_weather]
    reply: {}
""",
     "bad.yaml:5: steps[0].match: duplicate key 'match' (also on line 3); YAML would keep "
     "only the last one",
     id="a_duplicate_key_is_refused"),
    pytest.param("""\
name: weather
steps:
  - reply:
      items:
        - message: hi
        - fuction_call: {name: get_weather}
""",
     "bad.yaml:6: steps[0].reply.items[1].fuction_call: unknown item type 'fuction_call' "
     "(did you mean 'function_call'?); an item is one of apply_patch_call, "
     "code_interpreter_call, computer_call, custom_tool_call, file_search_call, function_call, "
     "image_generation_call, local_shell_call, mcp_approval_request, mcp_call, mcp_list_tools, "
     "message, reasoning, refusal, shell_call, tool_search_call, tool_search_output, "
     "vendor_item, web_search_call",
     id="unknown_item_type"),
    pytest.param("""\
name: weather
steps:
  - reply:
      items:
        - function_call:
            name: get_weather
            arguments:
              city: "{{ faker.citty() }}"
""",
     "bad.yaml:8: steps[0].reply.items[0].function_call.arguments.city: template error: "
     "faker has no provider 'citty' (try sentence, word, name, city)",
     id="template_error"),
])
def test_a_mistake_docs_show(tmp_path: Path, text: str, expected: str) -> None:
    """Each of these messages appears in docs/scenarios.md as it is."""
    assert _documented(_error(text, tmp_path)) == expected


def test_wrong_key_in_a_reply(tmp_path: Path) -> None:
    text = "name: w\nsteps:\n  - reply:\n      itmes:\n        - message: hi\n"
    message = _error(text, tmp_path)
    assert message.startswith(
        "bad.yaml:4: steps[0].reply.itmes: unknown key 'itmes' (did you mean 'items'?); known "
        "keys: breaks, chunking, ")
    assert ", items, " in message and message.endswith(", usage")


def test_wrong_top_level_key(tmp_path: Path) -> None:
    text = "name: w\nsetps:\n  - reply: {}\n"
    message = _error(text, tmp_path)
    assert message.startswith("bad.yaml:1: ") or message.startswith("bad.yaml:2: ")
    assert "'setps'" in message and "'steps'" in message


@pytest.mark.parametrize(("text", "expected"), [
    ("name: w\nsteps:\n  - times: lots\n    reply: {}\n",
     "bad.yaml:3: steps[0].times: must be an integer or 'forever', not a string"),
    ("name: w\nsteps:\n  - reply:\n      items:\n        - function_call:\n            name: 3\n",
     "bad.yaml:6: steps[0].reply.items[0].function_call.name: must be a string, not an integer"),
    ("name: w\nsteps:\n  - reply:\n      pacing:\n        first_event: soon\n",
     "bad.yaml:5: steps[0].reply.pacing.first_event: must be a number, not a string"),
    ("name: w\nsteps:\n  - match:\n      tools: get_weather\n    reply: {}\n",
     "bad.yaml:4: steps[0].match.tools: must be a list, not a string"),
    ("name: w\nsteps:\n  - match:\n      headers: {x-retry: 1}\n    reply: {}\n",
     "bad.yaml:4: steps[0].match.headers.x-retry: must be a string, not an integer"),
    ("name: w\norder: random\nsteps:\n  - reply: {}\n",
     "bad.yaml:2: order: 'random' is not allowed; use one of 'first', 'sequence', 'best'"),
    ("name: w\nsteps:\n  - reply:\n      status: complete\n",
     "bad.yaml:4: steps[0].reply.status: 'complete' is not allowed (did you mean "
     "'completed'?); use one of 'completed', 'incomplete', 'failed'"),
    ("name: w\nsteps: []\n", "bad.yaml:2: steps: [] should be non-empty"),
    ("name: w\nsteps:\n  - match: {}\n", "bad.yaml:3: steps[0]: missing required key 'reply'"),
    ("steps:\n  - reply: {}\n", "bad.yaml:1: missing required key 'name'"),
    ("- name: w\n", "bad.yaml:1: a scenario is a mapping with 'name' and 'steps'"),
    ("", "bad.yaml:1: a scenario is a mapping with 'name' and 'steps'"),
    ("name: w\nsteps:\n  - times: true\n    reply: {}\n",
     "bad.yaml:3: steps[0].times: must be an integer or 'forever', not a boolean"),
    ("name: w\nstrict: 'no'\nsteps:\n  - reply: {}\n",
     "bad.yaml:2: strict: must be true or false, not a string"),
    ("name: my scenario\nsteps:\n  - reply: {}\n", "bad.yaml:1: name: 'my scenario' does not "
     "match '^[A-Za-z0-9][A-Za-z0-9_.-]*$'"),
], ids=["times", "item field", "pacing", "tools", "header", "order", "status", "no steps",
        "no reply", "no name", "not a mapping", "empty", "times bool", "strict", "name"])
def test_wrong_type_or_value(tmp_path: Path, text: str, expected: str) -> None:
    assert _error(text, tmp_path) == expected
    if "times: lots" in text:
        _documented(expected)


@pytest.mark.parametrize(("key", "message"), [
    ("200", "and YAML reads '200' as a number: put it in quotes"),
    ("yes", "and YAML reads 'yes' as true or false: put it in quotes"),
    ("null", "and YAML reads 'null' as null: put it in quotes"),
    ("[a, b]", "not a mapping or a list"),
])
def test_a_key_that_is_not_a_string_is_refused(tmp_path: Path, key: str, message: str) -> None:
    text = f"name: w\nsteps:\n  - match:\n      {'? ' if '[' in key else ''}{key}: x\n"
    text += "    reply: {}\n"
    expected = f"bad.yaml:4: steps[0].match: a key must be a string, {message}"
    assert _error(text, tmp_path) == expected


def test_merge_keys_are_not_duplicates() -> None:
    text = ("name: m\nsteps:\n  - reply: &r {items: [{message: a}]}\n"
            "  - reply:\n      <<: *r\n      status: completed\n")
    assert len(load_scenario(text).steps) == 2


def test_a_mapping_with_a_number_as_key() -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario({"name": "a", "steps": [{"reply": {}, 1: "x"}]})
    assert str(caught.value) == ("steps[0].1: unknown key '1'; known keys: count_faulted, "
                                 "match, name, reply, times")


def test_an_item_has_exactly_one_type(tmp_path: Path) -> None:
    text = "name: w\nsteps:\n  - reply:\n      items:\n        - {message: a, refusal: b}\n"
    assert _error(text, tmp_path) == (
        "bad.yaml:5: steps[0].reply.items[0]: each item is a mapping with exactly one key "
        "naming its type (message, function_call, ...)"
    )


@pytest.mark.parametrize(("reply", "message"), [
    ("items: [{message: hi}]\n      sse: 'data: [DONE]'",
     "steps[0].reply: a reply has one source: items, events or sse (this one has items and "
     "sse)"),
    ("chunking: lines", "steps[0].reply.chunking: 'lines' does not match"),
    ("status: incomplete", "steps[0].reply: an incomplete reply needs at least one item"),
    ("items: [{message: {text: hi, annotations: [{url: 'http://x', cite: bye}]}}]",
     "steps[0].reply: cannot build this reply: the cited words 'bye' are not in the message "
     "text"),
], ids=["two sources", "chunking", "incomplete", "cite"])
def test_reply_mistakes(tmp_path: Path, reply: str, message: str) -> None:
    text = f"name: w\nsteps:\n  - times: forever\n    reply:\n      {reply}\n"
    got = _error(text, tmp_path)
    assert got.startswith(f"bad.yaml:{5 if 'chunking' in reply else 4}: {message}"), got


# -- literal replies: events and sse ---------------------------------------------------------


def docs_examples() -> dict[str, str]:
    """Every complete scenario in docs/scenarios.md, by name (```yaml blocks with a name)."""
    blocks = re.findall(r"^```yaml\n(.*?)^```$", DOCS.read_text(), re.S | re.M)
    out = {}
    for block in blocks:
        data = yaml.safe_load(block)
        out[data["name"]] = block
    return out


def _exact_events() -> list[Json]:
    events: list[Json] = yaml.safe_load(docs_examples()["exact-hello"])["steps"][0]["reply"][
        "events"]
    return events


def _frames(body: bytes) -> list[tuple[bytes, bytes]]:
    frames = body.split(b"\n\n")
    assert frames[-2:] == [b"data: [DONE]", b""]
    out = []
    for frame in frames[:-2]:
        event, data = frame.split(b"\n")
        out.append((event, data))
    return out


def test_literal_events_are_sent_as_written(server: OrmockServer, base_url: str,
                                            http: httpx.Client) -> None:
    server.engine(namespace_of(base_url)).use(load_scenario(docs_examples()["exact-hello"]))
    written = _exact_events()
    first = http.post("/responses", json={"model": "x", "input": "hi", "stream": True})
    again = http.post("/responses", json={"model": "x", "input": "hi", "stream": True})
    assert first.content == again.content  # literal: the same id and all, every time
    frames = _frames(first.content)
    assert len(frames) == len(written) == 10
    for (event_line, data_line), event in zip(frames, written, strict=True):
        assert event_line == b"event: " + event["type"].encode()
        assert data_line == b"data: " + json.dumps(
            event, separators=(",", ":"), ensure_ascii=False).encode()
    assert [e["sequence_number"] for e in written] == list(range(10))
    plain = http.post("/responses", json={"model": "x", "input": "hi"})
    assert plain.json() == written[-1]["response"]


def test_literal_events_through_the_sdk(server: OrmockServer, base_url: str,
                                        client: openai.OpenAI) -> None:
    server.engine(namespace_of(base_url)).use(load_scenario(docs_examples()["exact-hello"]))
    response = client.responses.create(model="gpt-4o-mini", input="hi")
    assert response.id == "resp_exact" and response.output_text == "Hello world"
    streamed = list(client.responses.create(model="gpt-4o-mini", input="hi", stream=True))
    assert [e.sequence_number for e in streamed] == list(range(10))


def test_literal_events_can_be_paced() -> None:
    scenario = {"name": "paced", "steps": [{"reply": {
        "events": _exact_events(), "pacing": {"first_event": 0.1, "per_event": 0.01}}}]}
    fake = Engine()
    fake.use(scenario)
    fake.respond({"model": "m", "input": "x", "stream": True}, {})
    offsets = [e["offset_ms"] for e in fake.journal[0].events]
    assert offsets == pytest.approx([100.0 + 10 * i for i in range(10)])


def _gap(events: list[Json]) -> list[Json]:
    return [{**e, "sequence_number": e["sequence_number"] + (e["sequence_number"] >= 5)}
            for e in events]


def test_an_invalid_literal_event_names_the_rule_and_the_events_line(tmp_path: Path) -> None:
    block = docs_examples()["exact-hello"]
    text = block.replace("sequence_number: 5\n", "sequence_number: 6\n", 1)
    assert text != block
    message = _error(text, tmp_path)
    line = block.splitlines().index("        - type: response.output_text.delta") + 1 + 7
    assert block.splitlines()[line - 1] == "        - type: response.output_text.delta"
    prefix = (f"bad.yaml:{line}: steps[0].reply.events[5]: this reply breaks the protocol: "
              "sequence-number at event 5: ")
    assert message.startswith(prefix), message  # then the checker's own words
    assert message.endswith(". If that is on purpose, say so with 'breaks: [sequence-number]'")
    assert prefix in DOCS.read_text()


def test_breaks_lists_exactly_the_rules_broken(server: OrmockServer, base_url: str,
                                               http: httpx.Client) -> None:
    events = _gap(_exact_events())
    gap = {"name": "gap", "steps": [{"times": "forever", "reply": {
        "events": events, "breaks": ["sequence-number"]}}]}
    scenario = load_scenario(gap)
    assert scenario.steps[0].reply.breaks == {"sequence-number"}
    server.engine(namespace_of(base_url)).use(scenario)
    body = http.post("/responses", json={"model": "m", "input": "x", "stream": True}).content
    assert check_stream(body).rules == {"sequence-number"}
    sent = [json.loads(data[6:]) for _, data in _frames(body)]
    assert [e["sequence_number"] for e in sent] == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10]

    too_many = {**gap, "steps": [{"reply": {"events": events,
                                            "breaks": ["no-done", "sequence-number"]}}]}
    with pytest.raises(ScenarioError) as caught:
        load_scenario(too_many)
    assert str(caught.value) == (
        "steps[0].reply.breaks: 'breaks' lists no-done, but the reply does not break it: "
        "remove it from 'breaks'")
    nothing_broken = {"name": "ok", "steps": [{"reply": {"breaks": ["order"]}}]}
    with pytest.raises(ScenarioError, match="'breaks' lists order, but the reply does not"):
        load_scenario(nothing_broken)


def _sse_of(events: list[Json]) -> str:
    """A capture as another provider might frame it: a comment, data lines only."""
    body = ": keep-alive\n\n"
    for event in events:
        body += f"data: {json.dumps(event)}\n\n"
    return body + "data: [DONE]\n\n"


def test_literal_sse_is_sent_byte_for_byte(server: OrmockServer, base_url: str,
                                           http: httpx.Client) -> None:
    sse = _sse_of(_exact_events())
    engine = server.engine(namespace_of(base_url))
    engine.use({"name": "raw", "steps": [{"times": "forever", "reply": {"sse": sse}}]})
    response = http.post("/responses", json={"model": "m", "input": "x", "stream": True})
    assert response.content == sse.encode()
    assert response.headers["content-type"].startswith("text/event-stream")
    assert [e["type"] for e in engine.journal[0].events] == [
        e["type"] for e in _exact_events()]


def test_literal_sse_answers_a_non_streaming_request_with_json(
    server: OrmockServer, base_url: str, http: httpx.Client
) -> None:
    sse = _sse_of(_exact_events())
    server.engine(namespace_of(base_url)).use(
        {"name": "raw", "steps": [{"times": "forever", "reply": {"sse": sse}}]})
    folded = http.post("/responses", json={"model": "m", "input": "x"})
    assert folded.headers["content-type"] == "application/json"
    assert folded.json() == _exact_events()[-1]["response"]


def test_literal_sse_that_breaks_framing_needs_breaks(server: OrmockServer, base_url: str,
                                                      http: httpx.Client) -> None:
    sse = _sse_of(_exact_events()).replace("\n", "\r\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario({"name": "crlf", "steps": [{"reply": {"sse": sse}}]})
    assert re.match(r"steps\[0\]\.reply\.sse: this reply breaks the protocol: sse-crlf at "
                    r"event 0 \(line \d+\): ", str(caught.value))
    assert str(caught.value).endswith("say so with 'breaks: [sse-crlf]'")
    scenario = {"name": "crlf", "steps": [{"reply": {"sse": sse, "breaks": ["sse-crlf"]}}]}
    server.engine(namespace_of(base_url)).use(scenario)
    response = http.post("/responses", json={"model": "m", "input": "x", "stream": True})
    assert response.content == sse.encode()


def test_docs_sse_example(server: OrmockServer, base_url: str, http: httpx.Client) -> None:
    scenario = load_scenario(docs_examples()["garbled"])
    assert scenario.steps[0].reply.breaks == {"sse-invalid-json", "terminal-count"}
    server.engine(namespace_of(base_url)).use(scenario)
    response = http.post("/responses", json={"model": "m", "input": "x", "stream": True})
    assert response.content == yaml.safe_load(docs_examples()["garbled"])["steps"][0]["reply"][
        "sse"].encode()


# -- items, status, usage, chunking, model ---------------------------------------------------


def _deltas(reply: Reply) -> list[str]:
    return [e["delta"] for e in reply.events if e["type"].endswith(".delta")]


@pytest.mark.parametrize(("chunking", "deltas"), [
    ("words", ["one", " two", " three"]),
    ("whole", ["one two three"]),
    ("chars:4", ["one ", "two ", "thre", "e"]),
    ("tokens:2", ["one two", " three"]),
])
def test_chunking(chunking: str, deltas: list[str]) -> None:
    reply = _reply({"chunking": chunking, "items": [{"message": "one two three"}]})
    assert _deltas(reply) == deltas
    assert reply.response["output"][0]["content"][0]["text"] == "one two three"


def test_every_item_kind() -> None:
    reply = _reply({"items": [
        {"reasoning": {"summary": ["Think.", "Check."], "content": ["Facts."],
                       "encrypted_content": "opaque"}},
        {"reasoning": "Short."},
        {"message": {"text": "Paris, France.", "phase": "final_answer", "id": "msg_fixed",
                     "annotations": [{"url": "https://x.test", "cite": "France"},
                                     {"url": "https://y.test", "title": "Y",
                                      "start_index": 0, "end_index": 5}]}},
        {"message": {"parts": [{"text": "Partly."}, {"refusal": "Not that."}]}},
        {"refusal": "No."},
        {"function_call": {"name": "f", "arguments": {"a": [1, "é"]}, "call_id": "call_f"}},
        {"function_call": {"name": "g", "arguments": '{"raw": true}'}},
        {"vendor_item": {"type": "acme:search_call", "fields": {"query": "q"}, "id": "v_1"}},
    ]})
    out = reply.response["output"]
    assert [o["type"] for o in out] == ["reasoning", "reasoning", "message", "message", "message",
                                        "function_call", "function_call", "acme:search_call"]
    assert [s["text"] for s in out[0]["summary"]] == ["Think.", "Check."]
    assert [c["text"] for c in out[0]["content"]] == ["Facts."]
    assert out[0]["encrypted_content"] == "opaque"
    assert [s["text"] for s in out[1]["summary"]] == ["Short."]
    message = out[2]
    assert message["id"] == "msg_fixed" and message["phase"] == "final_answer"
    (part,) = message["content"]
    assert part["annotations"] == [
        {"type": "url_citation", "url": "https://x.test", "start_index": 7, "end_index": 13,
         "title": "https://x.test"},
        {"type": "url_citation", "url": "https://y.test", "start_index": 0, "end_index": 5,
         "title": "Y"},
    ]
    assert part["text"][7:13] == "France"
    assert [p["type"] for p in out[3]["content"]] == ["output_text", "refusal"]
    assert out[4]["content"] == [{"type": "refusal", "refusal": "No."}]
    assert out[5]["arguments"] == '{"a":[1,"é"]}' and out[5]["call_id"] == "call_f"
    assert out[6]["arguments"] == '{"raw": true}' and out[6]["call_id"].startswith("call_")
    assert out[7]["id"] == "v_1" and out[7]["query"] == "q"
    assert check_stream(reply.sse_body()).ok


@pytest.mark.parametrize(("reply", "status", "details", "error"), [
    ({"status": "incomplete", "incomplete_reason": "max_output_tokens",
      "items": [{"message": "cut sh"}]}, "incomplete", {"reason": "max_output_tokens"}, None),
    ({"status": "incomplete", "incomplete_reason": "content_filter",
      "items": [{"message": "cut"}]}, "incomplete", {"reason": "content_filter"}, None),
    ({"status": "failed", "error": {"code": "server_error", "message": "boom"}}, "failed", None,
     {"code": "server_error", "message": "boom"}),
    ({"status": "failed"}, "failed", None,
     {"code": "server_error", "message": "The model failed to produce a response."}),
], ids=["max_output_tokens", "content_filter", "failed", "failed default"])
def test_status(reply: Json, status: str, details: Json | None, error: Json | None) -> None:
    planned = _reply(reply, self_check=True)
    response = planned.response
    assert (response["status"], response["incomplete_details"], response["error"]) == (
        status, details, error)
    assert planned.events[-1]["type"] == f"response.{status}"
    if status == "failed":
        assert response["output"] == []  # no made-up "OK" message in a failure
    else:
        assert response["output"][-1]["status"] == "incomplete"


def test_usage() -> None:
    assert _reply({"usage": None}).response["usage"] is None
    auto = _reply({"items": [{"message": "one two three"}]}).response["usage"]
    assert auto["output_tokens"] == 3 and auto["input_tokens"] > 0
    usage = _reply({"usage": {"input_tokens": 100, "output_tokens": 7, "cached_tokens": 40,
                              "reasoning_tokens": 2}}).response["usage"]
    assert usage == {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 40,
                                                                   "cache_write_tokens": 0},
                     "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 2},
                     "total_tokens": 107}
    partial = _reply({"usage": {"output_tokens": 9}}).response["usage"]
    assert partial["output_tokens"] == 9 and partial["input_tokens"] == auto["input_tokens"]


def test_reply_model_overrides_the_echo() -> None:
    assert _reply({"model": "gpt-5-2025"}).response["model"] == "gpt-5-2025"
    assert _reply({}).response["model"] == "m"


def test_steps_have_names_and_lines() -> None:
    scenario = load_scenario(
        "name: n\nsteps:\n  - name: first\n    reply: {}\n\n  - reply: {}\n")
    assert [(s.label, s.line) for s in scenario.steps] == [("step 1 (first)", 3), ("step 2", 6)]


# -- pacing ----------------------------------------------------------------------------------


def test_pacing_offsets_are_planned_and_journaled() -> None:
    fake = Engine()
    fake.use(load_scenario(docs_examples()["slow-typist"]))
    reply = fake.respond({"model": "m", "input": "hi", "stream": True}, {})
    assert isinstance(reply, Reply)
    offsets = [e["offset_ms"] for e in fake.journal[0].events]
    expected, at = [], 0.0
    for index, event in enumerate(reply.events):
        at += 0.5 if index == 0 else 0.02
        if event["type"].endswith(".delta"):
            at += count_tokens(event["delta"]) / 50
        expected.append(round(at * 1000, 3))
    assert offsets == pytest.approx(expected)
    assert offsets[0] == 500.0 and offsets[1] == 520.0
    assert sum(reply.pacing.delays(reply.events, reply.seed)) == pytest.approx(  # type: ignore[union-attr]
        expected[-1] / 1000)


def test_jitter_is_seeded() -> None:
    scenario = {"name": "j", "steps": [{"times": "forever", "reply": {
        "pacing": {"per_event": 0.1, "jitter": 0.5}, "items": [{"message": "a b c d"}]}}]}

    def offsets(seed: int, text: str) -> list[float]:
        fake = Engine(seed=seed)
        fake.use(scenario)
        fake.respond({"model": "m", "input": text, "stream": True}, {})
        return [e["offset_ms"] for e in fake.journal[0].events]

    first = offsets(0, "hi")
    assert first == offsets(0, "hi")
    assert first != offsets(1, "hi") and first != offsets(0, "other")
    gaps = [b - a for a, b in itertools.pairwise(first)]
    assert all(50 <= g <= 150 for g in gaps) and len(set(gaps)) > 1


@pytest.mark.parametrize(("speed", "first"), [(1.0, 500.0), (4.0, 125.0), (0.0, 0.0)])
def test_speed_divides_every_delay(speed: float, first: float) -> None:
    fake = Engine(speed=speed)
    fake.use(load_scenario(docs_examples()["slow-typist"]))
    reply = fake.respond({"model": "m", "input": "hi"}, {})
    assert isinstance(reply, Reply)
    assert fake.journal[0].events[0]["offset_ms"] == first
    assert reply.json_delay() == pytest.approx(
        fake.journal[0].events[-1]["offset_ms"] / 1000)


def test_a_paced_reply_over_http_at_speed_zero(server: OrmockServer, base_url: str,
                                               client: openai.OpenAI) -> None:
    engine = server.engine(namespace_of(base_url))
    engine.speed = 0  # no waiting in tests; the offsets are checked above
    engine.use(load_scenario(docs_examples()["slow-typist"]))
    events = list(client.responses.create(model="m", input="hi", stream=True))
    assert events[-1].type == "response.completed"
    assert {e["offset_ms"] for e in engine.journal[0].events} == {0.0}


# -- the JSON Schema that ships with the package ---------------------------------------------


def test_the_committed_schema_file_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_text() == schema_text(), (
        "ormock/scenario/scenario.schema.json is stale: regenerate it with "
        "`ormock scenarios --schema > ormock/scenario/scenario.schema.json` (make schema)")


def test_the_schema_is_valid_and_accepts_every_docs_example() -> None:
    schema = scenario_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for name, block in docs_examples().items():
        errors = list(validator.iter_errors(yaml.safe_load(block)))
        assert not errors, (name, errors)


def test_a_schema_reference_is_allowed_in_a_file() -> None:
    text = "$schema: ./scenario.schema.json\nname: s\nsteps:\n  - reply: {}\n"
    assert load_scenario(text).name == "s"


# -- the examples of docs/scenarios.md -------------------------------------------------------


def test_docs_examples_all_load() -> None:
    examples = docs_examples()
    assert {"hello", "weather-agent", "exact-hello", "slow-typist", "garbled",
            "flaky-then-fine"} <= set(examples)
    for block in examples.values():
        load_scenario(block)


def test_docs_fragments_are_valid_yaml() -> None:
    fragments = re.findall(r"^```yaml fragment\n(.*?)^```$", DOCS.read_text(), re.S | re.M)
    assert fragments
    for fragment in fragments:
        assert isinstance(yaml.safe_load(fragment), dict), fragment


def test_docs_hello(server: OrmockServer, base_url: str, client: openai.OpenAI) -> None:
    server.engine(namespace_of(base_url)).use(load_scenario(docs_examples()["hello"]))
    response = client.responses.create(model="gpt-4o-mini", input="Say hello")
    assert response.output_text == "Hello! How can I help?"
    with pytest.raises(openai.BadRequestError, match="does not contain 'hello'"):
        client.responses.create(model="gpt-4o-mini", input="Goodbye")


def test_docs_agent_loop(server: OrmockServer, base_url: str, client: openai.OpenAI) -> None:
    engine = server.engine(namespace_of(base_url))
    engine.use(load_scenario(docs_examples()["weather-agent"]))
    tool = {"type": "function", "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
    first = client.responses.create(model="gpt-4o-mini", input="What is the weather in Paris?",
                                    tools=[tool])  # type: ignore[list-item]
    (call,) = first.output
    assert call.type == "function_call" and call.call_id == "call_paris"
    second = client.responses.create(
        model="gpt-4o-mini", previous_response_id=first.id, tools=[tool],  # type: ignore[list-item]
        input=[{"type": "function_call_output", "call_id": "call_paris", "output": "18°C"}])
    assert second.output_text == "It is 18°C in Paris."
    assert engine.scenarios.unused() == []


def test_docs_near_miss(server: OrmockServer, base_url: str, client: openai.OpenAI,
                        tmp_path: Path) -> None:
    path = tmp_path / "travel.yaml"
    path.write_text(docs_examples()["travel"])
    server.engine(namespace_of(base_url)).use(str(path))
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o", input="Book a flight to Rome")
    shown = str(caught.value).replace(str(path), "travel.yaml")
    _documented(f"openai.BadRequestError: {shown}")


def test_docs_nth_example(server: OrmockServer, base_url: str, client: openai.OpenAI) -> None:
    server.engine(namespace_of(base_url)).use(load_scenario(docs_examples()["flaky-then-fine"]))
    first = client.responses.create(model="m", input="hi")
    second = client.responses.create(model="m", input="hi")
    assert first.status == "failed" and first.error is not None
    assert first.error.code == "server_error"
    assert second.status == "completed" and second.output_text == "Fine now."


def test_finding7_a_control_character_is_named_with_its_line() -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario("name: x\nsteps:\n  - reply: {items: [{message: \"a\x1fb\"}]}\n")
    assert str(caught.value).startswith("<scenario>:3: character '\\x1f' is not allowed in YAML")
