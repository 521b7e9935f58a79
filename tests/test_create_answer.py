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
    assert delivery.entry.finished_at is None
    now = ready.now()  # one write, nobody watching
    assert now is not None
    start, body = now
    assert start["headers"][-1] == (b"content-length", b"%d" % len(body["body"]))
    assert body["body"] == delivery.wire.body and body["more_body"] is False
    # over before its one write: the entry finished, the response never generating
    assert delivery.entry.finished_at is not None and delivery.entry.sent_bytes == len(
        body["body"])
    assert not engine.responses.generating
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


def test_a_paced_reply_is_not_written_at_once() -> None:
    engine = Engine(seed=3)
    body = {"model": "gpt-4o", "input": "hi", "stream": True}
    engine.inject({"slow": {"first_event": 0, "per_event": 0.01, "tokens_per_second": None}})
    ready = prepare(engine, "/v1/responses", {}, body, parse_request(body), 40, None, None)
    assert ready.now() is None  # the route writes it frame by frame
    assert ready.delivery is not None and ready.delivery.entry.finished_at is None
