"""``ormock.engine.journal_sink.SharedJournal``: what it stores of an entry is the entry's
``to_dict`` (what ``GET /_ormock/journal`` returns), for a fresh build, a reply issued again
from the stream cache (whose ``Sent`` summary it encodes once) and an error answer."""

from __future__ import annotations

import json

from ormock import Engine
from ormock.engine.journal import JournalEntry, wrote
from ormock.engine.journal_sink import SharedJournal
from ormock.engine.render import render
from ormock.engine.store import MemoryBackend
from ormock.engine.writer import at_once


def test_the_stored_entry_is_its_to_dict() -> None:
    engine = Engine()
    sink = SharedJournal(MemoryBackend())
    entries = []
    for stream in (True, True, False, False):  # each content built, then from the cache
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
    assert len(stored) == 5
    assert stored == [json.loads(json.dumps(e.to_dict())) for e in [*entries, error]]
    assert entries[1].sent is not None and entries[1].events  # a reply that sent events
    assert stored[1]["events"] == entries[1].events
