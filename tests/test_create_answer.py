"""``ormock.server.create_answer.prepare``: what a create's answer is, before its first byte."""

from __future__ import annotations

from ormock.engine.core import Engine
from ormock.protocol.request import parse_request
from ormock.server.create_answer import Prepared, prepare


def test_a_reply_prepared_is_the_one_its_init_makes() -> None:
    engine = Engine(seed=3)
    body = {"model": "gpt-4o", "input": "hi"}
    ready = prepare(engine, "/v1/responses", {"content-type": "application/json"}, body,
                    parse_request(body), 40, None, None)
    made = Prepared(ready.reply, ready.entry, ready.claim)
    assert ready.reply is not None and ready.entry is engine.journal[-1]
    assert ready.wire is not None and ready.wire.kind == "json"
    made.wire = ready.wire  # rendered after it is made
    assert {slot: getattr(ready, slot) for slot in Prepared.__slots__} == \
        {slot: getattr(made, slot) for slot in Prepared.__slots__}
