"""``ormock.engine.store``: stored responses capped in count and in bytes, a stored
response's context rebuilt through its parent chain, and the tool-output checks of a
continuation."""

from __future__ import annotations

from typing import Any

import pytest

from ormock.engine.store import ResponseStore, Stored, check_call_outputs
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.sse import encode_json

Json = dict[str, Any]


def user(text: str) -> Json:
    return {"type": "message", "role": "user", "content": text}


def answer(rid: str, *output: Json) -> Json:
    return {"id": rid, "object": "response", "status": "completed", "output": list(output)}


def said(text: str) -> Json:
    return {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}]}


def call(call_id: str) -> Json:
    return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}


def output(call_id: str) -> Json:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


def stored(size: int) -> Stored:
    return Stored(None, [], raw=b"x" * size)


# -- caps ---------------------------------------------------------------------------------------


def test_past_its_count_the_oldest_go() -> None:
    store = ResponseStore(limit=3)
    for n in range(5):
        store.keep(f"r{n}", stored(10))
    assert list(store) == ["r2", "r3", "r4"]
    assert store.bytes == sum(s.size for s in store.values()) == 30


def test_past_its_bytes_the_oldest_go_but_the_newest_stays() -> None:
    store = ResponseStore(limit=100, max_bytes=250)
    for n in range(4):
        store.keep(f"r{n}", stored(100))
    assert list(store) == ["r2", "r3"] and store.bytes == 200
    store.keep("big", stored(1000))  # larger than the whole room: kept alone
    assert list(store) == ["big"] and store.bytes == 1000


def test_keeping_an_id_again_replaces_it_and_counts_once() -> None:
    store = ResponseStore(limit=3)
    store.keep("a", stored(10))
    store.keep("b", stored(10))
    store.keep("a", stored(20))
    assert list(store) == ["b", "a"] and store.bytes == 30
    assert store.pop("b").size == 10 and store.bytes == 20
    assert store.pop("nope") is None and store.bytes == 20


def test_size_counts_the_request_and_the_raw_body() -> None:
    assert Stored(None, [], raw=b"abc", request_size=7).size == 10
    assert Stored(answer("r"), [], request_size=7).size == 7 + 1024  # a guess when not raw


# -- the chain ----------------------------------------------------------------------------------


def test_context_runs_through_the_parent_chain() -> None:
    first = Stored(answer("r1", said("one")), [user("a")])
    second = Stored(answer("r2", said("two")), [user("b")], first)
    third = Stored(answer("r3", said("three")), [user("c")], second)
    assert first.context == [user("a")]
    assert third.context == [user("a"), said("one"), user("b"), said("two"), user("c")]
    assert third.input == [user("c")]  # each turn holds its own input only


def test_a_raw_response_is_parsed_when_asked_for() -> None:
    response = answer("r1", said("hi"))
    raw = encode_json(response).encode()
    kept = Stored(None, [user("a")], raw=raw)
    assert kept.raw is raw and kept.response == response
    child = Stored(answer("r2"), [user("b")], kept)
    assert child.context == [user("a"), said("hi"), user("b")]
    assert Stored(response, []).raw == raw


# -- tool outputs of a continuation -------------------------------------------------------------


def test_outputs_that_answer_every_open_call_pass() -> None:
    check_call_outputs([user("x"), call("c1"), call("c2")], [output("c1"), output("c2")])
    check_call_outputs([call("c1"), output("c1")], [user("more")])  # nothing open, no output
    check_call_outputs([call("c1")], [user("no outputs at all")])


@pytest.mark.parametrize(("context", "new_input", "code", "param", "says"), [
    ([call("c1")], [output("c9")], "invalid_value", "input[0].call_id",
     "No tool call found for function call output with call_id 'c9': the previous responses "
     "made calls c1."),
    ([], [user("x"), output("c1")], "invalid_value", "input[1].call_id",
     "made calls (none)."),
    ([call("c1"), call("c2")], [output("c1")], "missing_tool_output", "input",
     "No tool output found for function call 'c2': answer every pending function call"),
])
def test_outputs_that_do_not_match_the_calls(context: list[Json], new_input: list[Json],
                                             code: str, param: str, says: str) -> None:
    with pytest.raises(OpenResponsesError) as raised:
        check_call_outputs(context, new_input)
    assert (raised.value.code, raised.value.param, raised.value.status) == (code, param, 400)
    assert says in raised.value.message
