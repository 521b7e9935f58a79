"""Where each fault struck, as the fault machinery records it (``ormock.faults.Strike``), over a
real server: the journal's ``struck`` names the event, the frame and the byte offset, and the
bytes the client got agree with them."""

from __future__ import annotations

import itertools
import random

import httpx
import pytest

from ormock import OrmockServer
from ormock.engine.core import Engine
from ormock.faults import FailMidstream, HttpError, Stall, VendorEvent, strike_faults
from ormock.protocol.reply import Reply
from ormock.protocol.sse import json_events, parse_sse

_names = itertools.count()


@pytest.fixture
def ns(server: OrmockServer) -> str:
    name = f"strike{next(_names)}"
    server.namespaces.open(name)
    return name


def _journal(server: OrmockServer, ns: str) -> list[dict[str, object]]:
    data: list[dict[str, object]] = httpx.get(f"{server.url}/{ns}/_ormock/journal",
                                              timeout=10).json()["data"]
    return data


def _stream(server: OrmockServer, ns: str, scenario: str) -> bytes:
    try:
        with httpx.stream("POST", f"{server.url}/{ns}/v1/responses", timeout=10,
                          json={"model": "m", "input": "hi", "stream": True},
                          headers={"x-ormock-scenario": scenario}) as answer:
            return b"".join(answer.iter_raw())
    except httpx.HTTPError:  # a reset: the journal still says where
        return b""


@pytest.mark.parametrize(("scenario", "fault", "what"), [
    ("malformed-json", "malformed", "bytes changed"),
    ("truncated", "truncate", "stream ends after 6 events"),
    ("crlf-framing", "malformed", "bytes changed"),
])
def test_a_fault_on_the_bytes_names_its_frame_and_byte(server: OrmockServer, ns: str,
                                                       scenario: str, fault: str,
                                                       what: str) -> None:
    body = _stream(server, ns, scenario)
    struck = _journal(server, ns)[-1]["struck"]
    assert isinstance(struck, list) and len(struck) == 1
    strike = struck[0]
    assert (strike["fault"], strike["what"]) == (fault, what)
    assert isinstance(strike["frame"], int) and isinstance(strike["byte"], int)
    # the events before the byte offset are whole and exactly the strike's event index
    head = body[:strike["byte"]]
    assert len(list(json_events(parse_sse(head)))) == strike["index"]


def test_a_reset_is_where_the_connection_dropped(server: OrmockServer, ns: str) -> None:
    _stream(server, ns, "disconnect")
    entry = _journal(server, ns)[-1]
    strike = entry["struck"][0]  # type: ignore[index]
    assert strike["fault"] == "disconnect" and strike["what"] == "connection reset"
    assert entry["sent_bytes"] == strike["byte"]


def test_an_http_error_strikes_the_whole_answer(server: OrmockServer, ns: str) -> None:
    _stream(server, ns, "rate-limited")
    assert _journal(server, ns)[-1]["struck"] == [
        {"fault": "http_error", "index": None, "frame": None, "byte": None,
         "what": "HTTP 429"}]


def test_each_fault_applied_records_its_own_strike() -> None:
    events = [{"type": "response.created", "sequence_number": 0,
               "response": {"id": "resp_1", "status": "in_progress"}},
              *({"type": "response.in_progress", "sequence_number": n,
                 "response": {"id": "resp_1", "status": "in_progress"}} for n in (1, 2, 3))]
    reply = Reply(events=events, stream=True)
    faults = [VendorEvent(at=(2,)), Stall(after_events=3, seconds=0.5),
              FailMidstream(after_events=99)]
    out, strikes = strike_faults(reply, faults, {}, random.Random(0))
    assert isinstance(out, Reply)
    assert [(s.fault, s.event) for s in strikes][:2] == [("vendor_event", 2), ("stall", 3)]
    assert strikes[1].frame == 3 and strikes[1].what == "stall 500 ms"
    # an http_error ends the walk: it struck the answer itself
    _, hit = strike_faults(reply, [HttpError(status=503)], {}, random.Random(0))
    assert [(s.fault, s.event, s.what) for s in hit] == [("http_error", None, "HTTP 503")]


@pytest.mark.parametrize(("scenario", "stream", "strike"), [
    ("incomplete", True, {"fault": "incomplete", "index": 8, "frame": None, "byte": None,
                          "what": "cut short (max_output_tokens)"}),
    ("malformed-json", False, {"fault": "malformed", "index": None, "frame": None,
                               "byte": None, "what": "body replaced (HTTP 200)"}),
    ("slow", True, {"fault": "slow", "index": 0, "frame": None, "byte": None,
                    "what": "paced from the first event"}),
])
def test_the_journal_keeps_each_strike(scenario: str, stream: bool,
                                       strike: dict[str, object]) -> None:
    engine = Engine(seed=0)
    engine.use(scenario)
    _, entry = engine.answer({"model": "m", "input": "hello", "stream": stream}, {})
    assert entry.struck == [strike]
    assert entry.to_dict()["struck"] == [strike]


def test_a_reply_with_no_fault_records_no_strike() -> None:
    engine = Engine(seed=0)
    _, entry = engine.answer({"model": "m", "input": "hello", "stream": True}, {})
    assert entry.struck == [] and entry.faults == []
