"""``ormock.engine.journal_sink.SharedJournal``: what it stores of an entry reads back as the
entry's ``to_dict`` (what ``GET /_ormock/journal`` returns), for a fresh build, a reply issued
again from the stream cache (whose ``Sent`` summary it encodes once), an error answer, and any
entry at all (hypothesis), and over HTTP from another replica on one redis-server; its
compact form is smaller."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stores import RedisServer

from ormock import Engine
from ormock.engine.entry_answer import wrote
from ormock.engine.journal import JournalEntry, Sent
from ormock.engine.journal_sink import SharedJournal, decoded
from ormock.engine.render import render
from ormock.engine.store import MemoryBackend, StoreUnavailable
from ormock.engine.writer import at_once
from ormock.protocol.sse import encode_json
from ormock.server.exchange import summary
from ormock.server.runner import OrmockServer


def test_the_stored_entry_is_its_to_dict() -> None:
    engine = Engine()
    sink = SharedJournal(MemoryBackend())
    entries = []
    for stream in (True,) * 3 + (False,) * 3:  # each content built twice, then from the cache
        reply, entry = engine.answer({"model": "gpt-5", "input": "Hi there.", "stream": stream},
                                     {}, transport="http")
        written = at_once(render(reply, "sse" if stream else "json"))
        assert written is not None
        wrote(entry, written)
        entry.finished_at = 1.5
        sink.publish(entry, wait=True)
        entries.append(entry)
    error = JournalEntry("POST", "/v1/responses", {}, {"x": 1}, at=1e6)  # the newest
    error.status, error.error = 400, {"message": "no", "type": "invalid_request_error"}
    sink.publish(error)
    stored = sink.read(10)
    assert len(stored) == 7
    assert stored == [json.loads(json.dumps(e.to_dict())) for e in [*entries, error]]
    assert entries[2].sent is not None and entries[2].events  # a reply that sent events
    assert stored[2]["events"] == entries[2].events


# -- the compact form: what it reads back is the entry's ``to_dict``, for any entry -------------

_TEXT = st.text(max_size=12)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), _TEXT)
_JSON = st.recursive(_SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)), max_leaves=12)
_TYPES = st.one_of(st.sampled_from(["response.created", "response.output_text.delta",
                                    "response.completed", "vendor:x\u2028"]), _TEXT)


@st.composite
def _sent(draw: st.DrawFn) -> Sent | None:
    if draw(st.booleans()) and draw(st.booleans()):
        return None
    types = tuple(draw(st.lists(_TYPES, max_size=40)))
    first = draw(st.integers(-3, 5))
    run: list[Any] = list(range(first, first + len(types)))  # a built stream's numbers
    kind = draw(st.sampled_from(["run", "nearly", "any"]))
    if kind == "nearly" and run:  # a literal stream's, nearly a run: one number looks alike
        at = draw(st.integers(0, len(run) - 1))
        run[at] = draw(st.sampled_from([float(run[at]), run[at] + 1, None, str(run[at]),
                                        *([bool(run[at])] if run[at] in (0, 1) else [])]))
    elif kind == "any":
        run = draw(st.lists(_SCALAR, min_size=len(types), max_size=len(types)))
    numbers = tuple(run)
    delays = draw(st.one_of(st.none(), st.lists(
        st.floats(0, 1e4, allow_nan=False), min_size=len(types), max_size=len(types))))
    return Sent(types, numbers, None if delays is None else tuple(delays),
                tuple(draw(st.lists(_TEXT, max_size=4))))


_OPTIONAL_TEXT = st.one_of(st.none(), _TEXT)
_ENTRIES = st.builds(
    JournalEntry, method=_TEXT, path=_TEXT, headers=st.dictionaries(_TEXT, _TEXT, max_size=4),
    body=_JSON, at=st.floats(0, 1e9), id=_TEXT, namespace=_TEXT, size=st.integers(0, 2**40),
    status=st.integers(0, 599), stream=st.booleans(), response_id=_OPTIONAL_TEXT,
    response_status=_OPTIONAL_TEXT,
    error=st.one_of(st.none(), st.dictionaries(_TEXT, _JSON, max_size=3)),
    scenario=_OPTIONAL_TEXT, step=st.one_of(st.none(), st.integers(0, 99)),
    cassette=_OPTIONAL_TEXT, interaction=st.one_of(st.none(), st.integers(1, 99)),
    faults=st.lists(_TEXT, max_size=3),
    struck=st.lists(st.dictionaries(_TEXT, _JSON, max_size=3), max_size=3),
    skipped=st.lists(_TEXT, max_size=2), sent=_sent(),
    reply_headers=st.dictionaries(_TEXT, _TEXT, max_size=3),
    ended=st.sampled_from(["whole", "truncated", "closed", "reset", "stalled", "client gone"]),
    sent_bytes=st.one_of(st.none(), st.integers(0, 2**40)),
    finished_at=st.one_of(st.none(), st.floats(0, 1e9)))


@settings(max_examples=300, deadline=None)
@given(_ENTRIES)
def test_the_compact_form_reads_back_as_to_dict(entry: JournalEntry) -> None:
    """The stored value, read back, is ``to_dict`` to the byte once encoded (the same keys in
    the same order: what ``GET /_ormock/journal`` sends), and a summary's columns made once
    serve the next entry that shares its tuples."""
    sink = SharedJournal(MemoryBackend())
    expected = encode_json(entry.to_dict())
    for _ in range(2):  # the columns made, then found
        assert encode_json(decoded(sink.encoded(entry))) == expected
    assert decoded(sink.encoded(entry)) == json.loads(expected)


def test_an_entry_in_the_earlier_form_reads_as_it_was_written() -> None:
    """An entry an earlier ormock stored (its ``to_dict`` as a JSON object, as a replica not
    yet upgraded writes it to the same Redis) is read back as it is, not refused."""
    engine = Engine()
    _, entry = engine.answer({"model": "gpt-5", "input": "Hi there."}, {}, transport="http")
    backend = MemoryBackend()
    backend.put("journal", "old:000000000001", encode_json(entry.to_dict()).encode())
    assert SharedJournal(backend).read(10) == [json.loads(encode_json(entry.to_dict()))]


def test_the_compact_form_is_smaller() -> None:
    """A built stream's entry is stored in under half the bytes of its ``to_dict``'s JSON."""
    engine = Engine()
    _, entry = engine.answer({"model": "gpt-5", "input": "Hi there.", "stream": True}, {},
                             transport="http")
    assert entry.sent is not None and len(entry.events) > 10
    compact = SharedJournal(MemoryBackend()).encoded(entry)
    assert len(compact) * 2 < len(encode_json(entry.to_dict()).encode())


def test_another_replica_serves_the_journal_as_the_entries_to_dict(
        redis_server: RedisServer) -> None:
    """Two replicas on one redis-server: what ``GET /_ormock/journal`` on the other one gives
    (read back from the compact form) is the serving replica's own entries' ``to_dict``, as
    the admin API shows a dict, with the keys in the same order: a JSON reply, a streamed
    continuation of it, a 400."""
    url = redis_server.fresh_url()
    with OrmockServer(seed=0, store=url) as serving, OrmockServer(seed=0, store=url) as other:
        with openai.OpenAI(base_url=f"{serving.url}/v1", api_key="sk-" + "test-journal",
                           max_retries=0) as sdk:
            first = sdk.responses.create(model="gpt-5", input="Hi there.")
            with sdk.responses.stream(model="gpt-5", input="Again.",
                                      previous_response_id=first.id) as stream:
                assert stream.get_final_response().status == "completed"
        assert httpx.post(f"{serving.url}/v1/responses", json={"input": "no model"},
                          timeout=30).status_code == 400
        got = httpx.get(f"{other.url}/_ormock/journal", timeout=30).json()["data"]
        entries = list(serving.namespaces.serve("").journal)
    expected = [json.loads(json.dumps(summary(entry))) for entry in entries]
    assert [entry["status"] for entry in got] == [200, 200, 400]
    assert got == expected
    assert [list(entry) for entry in got] == [list(entry) for entry in expected]
    assert got[1]["events"] and got[1]["output_ids"]  # the streamed one's, from its columns


class _Refusing(MemoryBackend):
    """A store that refuses its next ``put`` (a Redis gone for a moment)."""

    refuse = True

    def put(self, kind: str, key: str, value: bytes, ttl: float | None = None) -> None:
        if self.refuse:
            self.refuse = False
            raise StoreUnavailable("cannot reach Redis at redis://127.0.0.1:1/0 (gone)")
        super().put(kind, key, value, ttl)


def test_an_entry_the_store_refused_is_published_whole_the_next_time() -> None:
    """Only an entry the store took is changed in place afterwards; one it refused is written
    again from the start (not compared with what it never had)."""
    backend = _Refusing()
    sink = SharedJournal(backend)
    entry = JournalEntry("POST", "/v1/responses", {}, {"x": 1}, at=1.0)
    with pytest.raises(StoreUnavailable):
        sink.publish(entry, wait=True)
    assert sink.read(10) == []
    entry.status = 200
    sink.publish(entry, wait=True)
    entry.finished_at = 2.0
    sink.publish(entry, wait=True)  # changed in place: one entry, as it is now
    assert sink.read(10) == [json.loads(json.dumps(entry.to_dict()))]
    backend.clear()  # a reset elsewhere: the entry is not put back
    entry.finished_at = 3.0
    sink.publish(entry, wait=True)
    assert sink.read(10) == []
