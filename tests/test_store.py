"""``ormock.engine.store``: stored responses capped in count and in bytes, a stored
response's context rebuilt through its parent chain, and the tool-output checks of a
continuation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ormock.engine.context import check_call_outputs
from ormock.engine.store import MemoryBackend, ResponseStore, Stored
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.request import parse_request
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
    assert store.bytes == sum(s.size for s in store.values()) == 3 * stored(10).size


def test_past_its_bytes_the_oldest_go_but_the_newest_stays() -> None:
    unit = stored(100).size  # its encoded bytes: a header line, then the response
    store = ResponseStore(limit=100, max_bytes=2 * unit + unit // 2)
    for n in range(4):
        store.keep(f"r{n}", stored(100))
    assert list(store) == ["r2", "r3"] and store.bytes == 2 * unit
    store.keep("big", stored(10 * unit))  # larger than the whole room: kept alone
    assert list(store) == ["big"] and store.bytes == stored(10 * unit).size


def test_keeping_an_id_again_replaces_it_and_counts_once() -> None:
    store = ResponseStore(limit=3)
    store.keep("a", stored(10))
    store.keep("b", stored(10))
    store.keep("a", stored(20))
    assert list(store) == ["b", "a"] and store.bytes == stored(10).size + stored(20).size
    assert store.pop("b").raw == b"x" * 10 and store.bytes == stored(20).size
    assert store.pop("nope") is None and store.bytes == stored(20).size


def test_size_is_the_encoded_record_and_it_decodes_to_the_same() -> None:
    first = Stored(answer("r1", said("one")), [user("a")])
    store = ResponseStore()
    store.keep("r1", first)
    child = Stored(answer("r2", said("two")), [user("b")], store.get("r1"), context_tokens=7)
    encoded = child.encode()
    assert child.size == len(encoded) and encoded.endswith(b"\n" + child.raw)
    assert encoded.count(b"\n") == 1  # one header line, then the Response JSON as sent
    again = Stored.decode(encoded, "r2", store)
    assert (again.id, again.parent_id, again.input, again.context_tokens) == (
        "r2", "r1", [user("b")], 7)
    assert again.raw == child.raw and again.response == child.response
    assert again.context == [user("a"), said("one"), user("b")]


def test_a_memory_store_holds_the_response_and_makes_its_bytes_only_when_read() -> None:
    def made() -> Stored:
        return Stored(answer("r1", said("oné")), [user("a")], context_tokens=3, owner="o",
                      extensions={"x": 1})

    backend = MemoryBackend()
    store = ResponseStore(backend=backend)
    kept = made()
    store.keep("r1", kept)
    assert store.get("r1") is kept and "r1" in store and kept._encoded is None
    assert backend.get_value("response", "r1") is kept
    # read as bytes, it is the record any backend holds, of the size the caps counted
    assert backend.get("response", "r1") == made().encode() == kept.encode()
    assert store.bytes == kept.size == len(kept.encode())
    # another store on the same keys reads a copy of its own, decoded from those bytes
    other = ResponseStore(backend=backend)
    copy = other["r1"]
    assert copy is not kept and copy.encode() == kept.encode()
    assert (copy.input, copy.owner, copy.extensions, copy.context_tokens, copy.response) == (
        kept.input, kept.owner, kept.extensions, kept.context_tokens, kept.response)
    # a rewrite (a delete's mark, an update) leaves bytes, read as any backend's are
    store.bury("r1")
    assert store.get("r1") is not kept and store["r1"].deleted and store.buried("r1")


def test_a_chain_links_by_id_and_an_ancestor_past_the_caps_is_a_400() -> None:
    store = ResponseStore(limit=2)
    store.keep("r1", Stored(answer("r1", said("one")), [user("a")]))
    store.keep("r2", Stored(answer("r2", said("two")), [user("b")], store.get("r1")))
    assert store["r2"].context == [user("a"), said("one"), user("b")]
    store.keep("r3", Stored(answer("r3"), [user("c")], store.get("r2")))  # r1 goes
    assert list(store) == ["r2", "r3"]
    with pytest.raises(OpenResponsesError) as raised:
        _ = store["r3"].context
    assert (raised.value.code, raised.value.status) == ("previous_response_not_found", 400)
    assert "'r1', an earlier turn of this chain (the parent of 'r2'), is no longer stored" in (
        raised.value.message)


def test_a_parent_from_another_store_is_kept_with_the_child() -> None:
    local = ResponseStore()  # a connection's store: false cache
    local.keep("r1", Stored(answer("r1", said("one")), [user("a")]))
    shared = ResponseStore()
    shared.keep("r2", Stored(answer("r2", said("two")), [user("b")], local.get("r1")))
    local.clear()  # the connection has closed: the child still knows what came before
    assert shared["r2"].parent_id is None
    assert shared["r2"].context == [user("a"), said("one"), user("b")]
    shared.keep("r3", Stored(answer("r3"), [user("c")], shared.get("r2")))
    assert shared["r3"].parent_id == "r2"
    assert shared["r3"].context == [user("a"), said("one"), user("b"), said("two"), user("c")]


def test_each_start_on_a_store_is_counted_until_it_is_cleared() -> None:
    store = ResponseStore()
    assert [store.start(), store.start(), store.start()] == [0, 1, 2]
    store.clear()
    assert store.start() == 0


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
    custom = {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch", "input": "x"}
    check_call_outputs([call("c1"), custom], [
        output("c1"), {"type": "custom_tool_call_output", "call_id": "c3", "output": "done"}])
    # a call sent in the same input as its output (a client replaying its history) is answered
    check_call_outputs([], [custom, {"type": "custom_tool_call_output", "call_id": "c3",
                                     "output": [{"type": "input_text", "text": "done"}]}])


@pytest.mark.parametrize(("context", "new_input", "code", "param", "says"), [
    ([call("c1")], [output("c9")], "invalid_value", "input[0].call_id",
     "No tool call found for function call output with call_id 'c9': the previous responses "
     "made calls c1."),
    ([], [user("x"), output("c1")], "invalid_value", "input[1].call_id",
     "made calls (none)."),
    ([call("c1"), call("c2")], [output("c1")], "missing_tool_output", "input",
     "No tool output found for function call 'c2': answer every pending tool call"),
    # a custom (freeform) tool's output answers its call as a function's does
    ([{"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "x"}],
     [{"type": "custom_tool_call_output", "call_id": "c9", "output": "done"}], "invalid_value",
     "input[0].call_id", "No tool call found for custom tool call output with call_id 'c9'"),
    ([call("c1"), {"type": "custom_tool_call", "call_id": "c2", "name": "p", "input": "x"}],
     [output("c1")], "missing_tool_output", "input",
     "No tool output found for custom tool call 'c2'"),
    ([{"type": "local_shell_call", "call_id": "c1", "id": "lsh_1", "action": {}}],
     [{"type": "local_shell_call_output", "id": "c7", "output": "ok"}], "invalid_value",
     "input[0].id", "No tool call found for local shell call output with id 'c7'"),
])
def test_outputs_that_do_not_match_the_calls(context: list[Json], new_input: list[Json],
                                             code: str, param: str, says: str) -> None:
    with pytest.raises(OpenResponsesError) as raised:
        check_call_outputs(context, new_input)
    assert (raised.value.code, raised.value.param, raised.value.status) == (code, param, 400)
    assert says in raised.value.message


def test_a_stored_response_and_its_tombstone_last_the_store_ttl() -> None:
    now = [1_000.0]
    store = ResponseStore(ttl=60, backend=MemoryBackend(clock=lambda: now[0]))
    store.keep("r1", Stored(answer("r1", said("one")), [user("a")]))
    store.keep("r2", Stored(answer("r2", said("two")), [user("b")]))
    store.bury("r2")
    now[0] += 30
    store.update("r1", answer("r1", said("uno")))  # a rewrite keeps it 60 s more
    now[0] += 45
    assert list(store) == ["r1"] and not store.buried("r2")  # 75 s: r2 and its tombstone gone
    now[0] += 20
    assert list(store) == []


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=10)
_items = st.lists(st.dictionaries(st.sampled_from(["type", "role", "content", "\u2028"]),
                                  _values, max_size=3), max_size=3)


@settings(max_examples=200, deadline=None)
@given(parent=st.none() | st.text(max_size=8), new_input=_items, tokens=st.integers(0, 10**9),
       prior=st.none() | _items, owner=st.none() | st.text(max_size=8),
       extensions=st.dictionaries(st.text(max_size=4), _values, max_size=2),
       deleted=st.booleans())
def test_a_records_header_is_the_json_of_its_fields(
        parent: str | None, new_input: list[Any], tokens: int, prior: list[Any] | None,
        owner: str | None, extensions: dict[str, Any], deleted: bool) -> None:
    # written key by key, the header is the text encoding the whole dict would give
    stored = Stored(None, new_input, raw=b"{}", context_tokens=tokens, owner=owner,
                    extensions=extensions)
    stored.parent_id, stored.prior, stored.deleted = parent, prior, deleted
    header: dict[str, Any] = {"parent": parent, "input": new_input, "context_tokens": tokens}
    if prior is not None:
        header["prior"] = prior
    if owner is not None:
        header["owner"] = owner
    if extensions:
        header["extensions"] = extensions
    if deleted:
        header["deleted"] = True
    size = stored.size  # known before its bytes are made
    assert stored.encode() == (encode_json(header) + "\n").encode() + b"{}"
    assert size == len(stored.encode())
    assert Stored.decode(stored.encode()).input == new_input


def test_a_records_header_holds_the_input_text_its_request_made() -> None:
    # a request's ``input_json`` (made once, reused by every response it is stored with) is
    # the header's input; without one, the input is encoded
    request = parse_request({"model": "m", "input": "hi \u2028 é"})
    given = Stored(None, request.input, raw=b"{}", input_json=request.input_json)
    made = Stored(None, request.input, raw=b"{}")
    assert given.encode() == made.encode() == (encode_json(
        {"parent": None, "input": request.input, "context_tokens": 0}) + "\n").encode() + b"{}"
    assert given.size == made.size == len(made.encode())


def test_a_text_message_with_line_separators_is_written_escaped() -> None:
    stored = Stored(None, [user("a\u2028b\u0085c\ud800 é")], raw=b"{}")
    head = stored.encode().partition(b"\n")[0].decode()
    assert head == encode_json({"parent": None, "input": [user("a\u2028b\u0085c\ud800 é")],
                                "context_tokens": 0})
    assert "\\u2028" in head and "\\u0085" in head and "\\ud800" in head and "é" in head
