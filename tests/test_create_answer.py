"""``ormock.engine.create_answer.prepare``: what a create's answer is, before its first byte."""

from __future__ import annotations

from ormock.engine.core import Engine
from ormock.engine.create_answer import Prepared, prepare
from ormock.protocol.request import parse_request


def test_a_reply_prepared_carries_its_delivery_and_every_slot_is_set() -> None:
    engine = Engine(seed=3)
    body = {"model": "gpt-4o", "input": "hi"}
    ready = prepare(engine, "/v1/responses", {"content-type": "application/json"}, body,
                    parse_request(body), 40, None, None)
    delivery = ready.delivery
    assert ready.reply is not None and delivery is not None
    assert delivery.entry is engine.journal[-1]
    assert delivery.wire is not None and delivery.wire.kind == "json"
    assert ready.at_once() is not None  # one write, nobody watching
    made = Prepared(engine)
    assert all(hasattr(made, slot) for slot in Prepared.__slots__)


def test_an_answer_over_settles_its_entry_once_and_counts_its_flight() -> None:
    engine = Engine(seed=3)
    body = {"model": "gpt-4o", "input": "hi", "stream": True}
    ready = prepare(engine, "/v1/responses", {}, body, parse_request(body), 40, None, None)
    delivery = ready.delivery
    assert delivery is not None and delivery.flight is None
    delivery.begin()
    delivery.over(None)  # nothing went out: the entry finishes all the same
    assert delivery.entry.finished_at is not None
