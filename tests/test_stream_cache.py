"""The stream cache: a repeated content is issued from its second build, byte for byte (its
first is only noted: most contents come once)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from ormock import OrmockServer, check_stream
from ormock.engine.cache import StreamCache
from ormock.engine.compiled import echo_key
from ormock.engine.core import Engine
from ormock.protocol.reply import Reply

TOOLS = [{"type": "function", "name": "get_weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
REQUESTS: list[dict[str, Any]] = [
    {"model": "m", "input": "hello", "stream": True},
    {"model": "m", "input": "hello", "stream": True},  # a repeat: built, and kept
    {"model": "m", "input": "hello", "stream": True},  # from the cache
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
    assert journal[2].events == journal[0].events  # the summary of a cached reply
    assert len({entry.response_id for entry in journal[:3]}) == 3
    assert journal[5].output_ids and journal[5].output_ids != journal[4].output_ids
    for body in served[:3]:
        assert check_stream(body).ok


def test_a_cached_reply_can_be_continued() -> None:
    with OrmockServer() as server, httpx.Client(base_url=server.base_url) as raw:
        for _ in range(3):  # the third from the cache
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
        for _ in range(2):  # the third from the cache
            raw.post("/responses", json=body)
        again = check_stream(raw.post("/responses", json=body).content).response
        assert again is not None
        stored = raw.get(f"/responses/{again['id']}").json()
        assert stored == again



def test_a_content_is_kept_from_its_second_reply(issued_templates: list[Any]) -> None:
    """A content's first reply only notes it, its second is kept, its third is issued from the
    cache: the three the same bytes under their own ids as full builds give."""
    issued = issued_templates
    for stream in (False, True):
        issued.clear()
        engine, built = Engine(seed=4), Engine(seed=4)
        body = {"model": "m", "input": "twice or more", "stream": stream}
        kept = []
        for _ in range(3):
            reply, _ = engine.answer(body, {}, transport="http")
            kept.append(len(engine.cache))
            full = built.respond(body, {})
            assert isinstance(reply, Reply) and isinstance(full, Reply)
            assert reply.body == (full.sse_body() if stream else full.json_body())
        assert kept == [0, 1, 1]
        assert len(issued) == 1  # the third reply only


def test_a_cleared_cache_forgets_its_sightings() -> None:
    cache = StreamCache(size=2, seen=4)
    assert cache.again(3) is False
    cache.clear()
    assert cache.again(3) is False and cache.again(3) is True
    assert len(cache._seen) == 4


USAGE_SCENARIO = """\
name: counted
steps:
  - times: forever
    reply:
      usage: {output_tokens: 7, cached_tokens: 2}
      items:
        - reasoning: "{{ faker.sentence(nb_words=4) }}"
        - message: "Hi {{ faker.word() }}."
"""
# a new content's JSON reply is built without its events (``building.fold_new``)
NEW_JSON: list[dict[str, Any]] = [
    {"model": "m", "input": "plain"},
    {"model": "m", "input": "Weather in Oslo and Rome, each?", "tools": [
        *TOOLS, {**TOOLS[0], "name": "get_time"}]},
    {"model": "m", "input": "Think.", "reasoning": {"effort": "low"}},
    {"model": "m", "input": "long", "max_output_tokens": 16},
    {"model": "m", "input": "json", "text": {"format": {"type": "json_object"}}},
    {"model": "m", "input": "schema", "text": {"format": {
        "type": "json_schema", "name": "s", "schema": {
            "type": "object", "properties": {"n": {"type": "integer"}}}}}},
    {"model": "ormock:text", "input": "a scenario"},
    {"model": "ormock:counted", "input": "its own usage", "store": False},
    {"model": "m", "input": [{"role": "user", "content": "a"},
                             {"role": "assistant", "content": "b"}]},  # not the user's last
    {"model": "m", "input": []},  # no input at all
    {"model": "m", "input": "plain"},  # a repeat, built and kept
    {"model": "m", "input": "plain"},  # from the cache
]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("profile", ["openresponses", "openai", "platform"])
def test_a_new_reply_is_what_a_full_build_gives(tmp_path: Path, profile: str,
                                                stream: bool) -> None:
    """A new content over HTTP is built without the events of a full build
    (``building.fresh``): the same bytes, journal events, output ids and ids as the Python
    path's build event by event, under profiles that rename events (openai) and send no
    estimated usage (platform)."""
    (tmp_path / "counted.yaml").write_text(USAGE_SCENARIO)
    bodies = [{**body, "stream": stream} for body in NEW_JSON  # platform: no tools, store
              if profile != "platform" or not {"tools", "store"} & body.keys()]
    with OrmockServer(seed=5, profile=profile, scenario_dirs=(tmp_path,)) as server, \
            httpx.Client(base_url=server.base_url) as raw:
        served = [raw.post("/responses", json=body) for body in bodies]
        journal = server.engine().journal
        stored = [raw.get(f"/responses/{entry.response_id}") for entry in journal]
    engine = Engine(seed=5, profile=profile, scenario_dirs=(tmp_path,))
    for body, answer, entry, kept in zip(bodies, served, journal, stored, strict=True):
        _same_as_a_build(engine, body, answer, entry, kept, stream)
    final = [check_stream(answer.content).response if stream else answer.json()
             for answer in served]
    assert final[-1]["output"][0]["content"] == final[0]["output"][0]["content"]
    assert journal[-1].response_id != journal[0].response_id
    if profile != "platform":
        counted = final[bodies.index({**NEW_JSON[7], "stream": stream})]["usage"]
        assert (counted["output_tokens"], counted["input_tokens_details"]["cached_tokens"]) \
            == (7, 2)


# Each echo is sent three times with new inputs: the second and third replies of an echo that a
# template holds are filled into it (``ormock.engine.compiled``).
ECHOES: list[dict[str, Any]] = [
    {"model": "m"},
    {"model": "m", "instructions": "Be 100% brief, \"quoted\" and naïve \u2028 ok",
     "metadata": {"k": "50%"}, "temperature": 0.3, "top_p": 0.5},
    {"model": "m", "tools": TOOLS, "tool_choice": "none"},  # tools offered, none called
    {"model": "m", "tools": TOOLS},  # calls (built)
    {"model": "m", "reasoning": {"effort": "low"}},  # a reasoning item (built)
    {"model": "m", "max_output_tokens": 16},  # incomplete
    {"model": "m", "text": {"format": {"type": "json_object"}}},
    {"model": "m", "text": {"format": {"type": "json_schema", "name": "s", "schema": {
        "type": "object", "properties": {"n": {"type": "integer"}}}}}},
    {"model": "m", "store": False},
    {"model": "m", "x_trace": {"run": 7}},
    # equal in Python, not on the wire: each its own template (``compiled.echo_key``)
    {"model": "m", "x_n": 1}, {"model": "m", "x_n": 1.0}, {"model": "m", "x_n": True},
    {"model": "m", "temperature": 0.0}, {"model": "m", "temperature": -0.0},
    {"model": "m", "x_n": []}, {"model": "m", "x_n": ""}, {"model": "m", "x_n": None},
    {"model": "ormock:text"},
    {"model": "ormock:counted", "store": False},
    {"model": "ormock:plain"},
    {"model": "ormock:fixed"},
]
PLAIN_SCENARIO = """\
name: plain
steps:
  - times: forever
    reply:
      usage: {input_tokens: 3}
      chunking: chars:5
      items:
        - message: "{{ faker.paragraph() }} for {{ request.model }}"
"""

# a reply with no template: its message made once, its text cut once (``replies._cut``)
FIXED_SCENARIO = """\
name: fixed
steps:
  - times: forever
    reply:
      items:
        - message: "The same words, every time."
"""


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("profile", ["openresponses", "openai", "platform"])
def test_a_compiled_reply_is_what_a_full_build_gives(tmp_path: Path, profile: str,
                                                     stream: bool) -> None:
    """Replies filled into a compiled template: the same bytes, journal events, output ids,
    ids and stored responses as the Python path's full build, for several echoes, scenario
    steps (their own usage, chunking), store false and continuations."""
    (tmp_path / "counted.yaml").write_text(USAGE_SCENARIO)
    (tmp_path / "plain.yaml").write_text(PLAIN_SCENARIO)
    (tmp_path / "fixed.yaml").write_text(FIXED_SCENARIO)
    echoes = [echo for echo in ECHOES  # platform: no tools, instructions, store false
              if profile != "platform" or not {"tools", "store", "instructions"} & echo.keys()]
    bodies = [{**echo, "input": f"say {n} or {echo['model']}", "stream": stream}
              for echo in echoes for n in range(3)]
    with OrmockServer(seed=9, profile=profile, scenario_dirs=(tmp_path,)) as server, \
            httpx.Client(base_url=server.base_url) as raw:
        served = [raw.post("/responses", json=body) for body in bodies]
        first = server.engine().journal[0].response_id
        follow = [{"model": "m", "input": f"more {n}", "previous_response_id": first,
                   "stream": stream} for n in range(3)]
        served += [raw.post("/responses", json=body) for body in follow]
        journal = server.engine().journal
        stored = [raw.get(f"/responses/{entry.response_id}") for entry in journal]
        compiled = server.engine().compiled.compiled()
    assert len(compiled) >= (8 if profile != "platform" else 5)
    engine = Engine(seed=9, profile=profile, scenario_dirs=(tmp_path,))
    for body, answer, entry, kept in zip([*bodies, *follow], served, journal, stored,
                                         strict=True):
        _same_as_a_build(engine, body, answer, entry, kept, stream)
        if stream:
            assert check_stream(answer.content, profile=profile).ok, body


def _same_as_a_build(engine: Engine, body: dict[str, Any], answer: httpx.Response,
                     entry: Any, kept: httpx.Response, stream: bool) -> None:
    """What the server sent, journaled and stored for ``body`` is what a full build of it
    gives (``engine``: a fresh one with the same seed, answered in the same order)."""
    assert answer.status_code == 200, answer.text
    built, built_entry = engine.answer(body, {})
    assert isinstance(built, Reply) and built.summary is None  # built event by event
    assert answer.content == (built.sse_body() if stream else built.json_body()), body
    assert entry.events == built_entry.events and entry.events, body
    assert entry.output_ids == built_entry.output_ids, body
    assert (entry.response_id, entry.response_status) == (
        built_entry.response_id, built_entry.response_status)
    assert entry.sent_bytes == len(answer.content)
    if body.get("store", True):
        assert kept.json() == built.response


def test_an_issued_reply_is_the_reply_its_fields_make() -> None:
    """``issued_reply`` (a cache hit's reply, made without the dataclass's ``__init__``) holds
    every field ``Reply(...)`` would, with the same values."""
    from dataclasses import fields

    from ormock.engine.cache import issued_reply
    from ormock.engine.journal import Sent

    summary = Sent(("response.created",), (0,), None, ())
    for stream, socket in ((False, False), (True, False), (True, True)):
        made = issued_reply(stream, b"{}", summary, socket)
        slow = Reply(events=[], stream=stream, body=b"{}", summary=summary, socket=socket)
        assert [getattr(made, f.name) for f in fields(Reply)] == \
            [getattr(slow, f.name) for f in fields(Reply)]
        assert made == slow and vars(made) == vars(slow)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_repeated_content_with_percent_signs_and_its_ids_in_the_text(stream: bool) -> None:
    """The cache's bytes are a ``%``-format: a text holding ``%`` (and ``%(0)s``, a slot's own
    spelling) comes back as it was, and each repeat only under its own ids."""
    text = "100% of %(0)s and %%d %s"
    body = {"model": "m", "input": text, "instructions": text, "stream": stream}
    with OrmockServer(seed=5) as server, httpx.Client(base_url=server.base_url) as raw:
        served = [raw.post("/responses", json=body).content for _ in range(3)]
        assert all(b"100% of %(0)s and %%d %s" in answer for answer in served)
        journal = server.engine().journal
        kept = [raw.get(f"/responses/{e.response_id}").json() for e in journal]
    engine = Engine(seed=5)
    built = [engine.respond(body, {}) for _ in range(3)]
    assert served == [b.sse_body() if stream else b.json_body()  # type: ignore[union-attr]
                      for b in built]
    assert len({e.response_id for e in journal}) == 3
    assert [k["id"] for k in kept] == [e.response_id for e in journal]
    assert journal[2].output_ids != journal[1].output_ids

def test_echo_keys_are_equal_only_for_the_same_json() -> None:
    """Values Python holds equal but JSON spells apart give apart keys; the same echo, made
    anew, the same key."""
    values: list[Any] = [1, 1.0, True, 0.0, -0.0, "1", None, [], "", [1], {"a": 1}, {"a": 1.0}]
    keys = [echo_key({"model": "m", "x_n": value}) for value in values]
    assert len(set(keys)) == len(values)
    assert echo_key({"model": "m", "x_n": {"a": [1]}}) == echo_key({"model": "m",
                                                                   "x_n": {"a": [1]}})
    assert echo_key({"a": None, "b": "x"}) != echo_key({"b": "x", "a": None})  # the order


def test_a_scenario_loaded_anew_under_its_name_has_replies_of_its_own() -> None:
    """The cache keys a scenario's replies by the scenario itself (``Scenario.identity``), not
    by its name: one loaded in its place, or a copy, never gets the replies kept for another."""
    engine = Engine(seed=5)
    body = {"model": "m", "input": "the same request", "stream": True}
    for text in ("First words.", "Other words."):
        engine.use({"name": "s", "steps": [{"times": "forever",
                                            "reply": {"items": [{"message": text}]}}]})
        for _ in range(3):  # the third from the cache
            reply, _ = engine.answer(body, {}, transport="http")
            assert isinstance(reply, Reply) and reply.body is not None
            assert text.encode() in reply.body
    scenario = engine.scenarios.scenarios[0]
    assert replace(scenario).identity is not scenario.identity
    assert replace(scenario) == scenario
