"""The fault catalogue: each fault breaks exactly the rules it declares, triggers, specs, schema,
composition; then the real openai SDK against a real uvicorn server serving faulted replies."""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import jsonschema
import openai
import pytest
import uvicorn

from ormock.engine.core import Engine
from ormock.engine.render import render
from ormock.engine.writer import send_wire
from ormock.faults import (
    FAULT_SCHEMA,
    FAULTS,
    Disconnect,
    FailMidstream,
    Fault,
    FaultSpecError,
    HttpError,
    Slow,
    Trigger,
    apply_faults,
    fault_schema,
    parse_fault,
    register,
)
from ormock.protocol import (
    RULES,
    FunctionCallPlan,
    IdFactory,
    MessagePlan,
    ReplyPlan,
    TextPart,
    build_events,
    check_stream,
    new_response,
)
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.wire import Frame
from ormock.server.runner import uvicorn_config

# what the server writes: run again without the cork of ormock.server.http_protocol
# (ORMOCK_HTTP_CORK=0) by `make test`
pytestmark = pytest.mark.wire

Json = dict[str, Any]


def planned(stream: bool = True) -> Reply:
    """A valid reply: a text message, then a function call, built the way the engine does."""
    ids = IdFactory(0)
    plan = ReplyPlan(items=[
        MessagePlan((TextPart("The weather in Paris is mild and sunny today."),)),
        FunctionCallPlan("get_weather", '{"location": "Paris, France", "unit": "celsius"}'),
    ])
    response = new_response(ids.new("resp"), 1_767_225_600, {"model": "gpt-4o-mini"})
    events = build_events(plan, response, ids, input_tokens=12, completed_at=1_767_225_601)
    return Reply(events=events, stream=stream, seed=0)


def faulted(*specs: Any, stream: bool = True, seed: int = 0) -> tuple[Reply | RawReply, list[str]]:
    faults = [parse_fault(s, f"faults[{i}]") for i, s in enumerate(specs)]
    return apply_faults(planned(stream), faults, {}, random.Random(seed))


def seen(reply: Reply | RawReply) -> bytes:
    """The body bytes a client receives: up to a drop, an end, or a stall for good."""
    if isinstance(reply, RawReply):
        return reply.body
    if not reply.stream and reply.frames is None:
        return reply.json_body()
    out = b""
    for frame in reply.wire():
        if frame.action in ("close", "reset", "end") or (
            frame.action == "stall" and math.isinf(frame.delay)
        ):
            break
        out += frame.data
    return out


# one or more specs per fault; each must break exactly what the fault declares
CASES: list[Any] = [
    "fail_midstream",
    {"fail_midstream": {"after_events": 5, "code": "overloaded", "message": "try later"}},
    {"fail_midstream": 100},
    "incomplete",
    {"incomplete": {"reason": "content_filter", "item": 0, "deltas": 3}},
    {"incomplete": {"item": -1, "deltas": 0}},
    "vendor_event",
    {"vendor_event": {"type": "acme:trace", "fields": {"note": "hi"}, "at": [1, 7, 99]}},
    {"vendor_event": {"every": 4}},
    "vendor_item",
    {"vendor_item": {"type": "acme:search", "fields": {"query": "q"}, "output_index": 1}},
    {"vendor_item": {"output_index": 9, "id": "item_x"}},
    {"sequence": "gap"},
    {"sequence": {"kind": "duplicate", "at": 3}},
    {"sequence": "reorder"},
    {"sequence": {"kind": "restart", "at": 20}},
    {"disconnect": "reset"},
    {"disconnect": {"mode": "close", "after_events": 0}},
    {"disconnect": {"after_bytes": 1}},
    {"disconnect": {"mode": "reset", "after_bytes": 2500}},
    {"disconnect": {"after_bytes": 10**7}},
    "stall",
    {"stall": {"seconds": 0.01, "after_events": 2}},
    "slow",
    {"slow": {"first_event": 0.01, "per_event": 0.001, "tokens_per_second": None, "jitter": 0.5}},
    {"malformed": "invalid_json"},
    {"malformed": {"kind": "invalid_json", "at": 0}},
    {"malformed": "crlf"},
    {"malformed": {"kind": "type_mismatch", "at": 4}},
    {"malformed": {"kind": "type_mismatch", "at": 5}},
    {"malformed": "missing_blank_line"},
    {"malformed": {"kind": "missing_blank_line", "at": 0}},
    {"malformed": "multiline_data"},
    "no_done",
    "truncate",
    {"truncate": 2},
]


def test_the_cases_cover_every_fault() -> None:
    names = {parse_fault(c).name for c in CASES} | {"http_error"}
    assert names == set(FAULTS)


@pytest.mark.parametrize("spec", CASES, ids=lambda s: json.dumps(s, separators=(",", ":")))
def test_a_fault_breaks_exactly_what_it_declares(spec: Any) -> None:
    fault = parse_fault(spec)
    reply = planned()
    before = copy.deepcopy(reply.events)
    out, names = apply_faults(reply, [fault], {}, random.Random(0))
    assert names == [fault.name]
    assert reply.events == before  # the planned events are never mutated
    report = check_stream(seen(out))
    assert report.rules == fault.breaks(), [str(v) for v in report.violations]
    assert fault.breaks() <= set(RULES)


def test_faults_that_break_nothing_leave_a_valid_stream_and_json_body() -> None:
    for spec in ("fail_midstream", "incomplete", "vendor_event", "vendor_item", "slow"):
        out, _ = faulted(spec)
        assert isinstance(out, Reply)
        assert check_stream(out.sse_body()).ok
        assert check_stream(out.events).ok


# -- each fault's content --------------------------------------------------------------------


def test_http_error_envelope_and_headers() -> None:
    out, names = faulted({"http_error": {"status": 429, "retry_after": 2, "retry_after_ms": 150,
                                         "should_retry": True, "headers": {"X-Extra": "1"}}})
    assert names == ["http_error"]
    assert isinstance(out, RawReply) and out.status == 429
    assert out.headers["retry-after"] == "2" and out.headers["retry-after-ms"] == "150"
    assert out.headers["x-should-retry"] == "true" and out.headers["x-extra"] == "1"
    assert out.headers["x-ratelimit-remaining-requests"] == "0"
    assert out.headers["x-ratelimit-reset-requests"] == "150ms"
    assert {f"x-ratelimit-{w}-{k}" for w in ("limit", "remaining", "reset")
            for k in ("requests", "tokens")} <= set(out.headers)
    error = json.loads(out.body)["error"]
    assert error["type"] == "too_many_requests" and error["code"] == "rate_limit_exceeded"
    assert all(isinstance(error[k], str) for k in ("message", "type", "param", "code"))


@pytest.mark.parametrize(("status", "type_"), [
    (400, "invalid_request"), (401, "authentication_error"), (404, "not_found"),
    (408, "request_timeout"), (409, "conflict"), (500, "server_error"),
    (503, "service_unavailable"), (418, "invalid_request"), (599, "server_error"),
])
def test_http_error_type_follows_the_status(status: int, type_: str) -> None:
    out, _ = faulted({"http_error": status}, stream=False)
    assert isinstance(out, RawReply) and out.status == status
    error = json.loads(out.body)["error"]
    assert error["type"] == type_ and error["code"] == type_ and error["param"] == ""
    assert not any(h.startswith("x-ratelimit") for h in out.headers)


def test_http_error_custom_fields() -> None:
    out, _ = faulted({"http_error": {"status": 400, "message": "bad model", "type": "invalid_"
                      "request_error", "code": "model_not_found", "param": "model",
                      "should_retry": False}})
    assert isinstance(out, RawReply)
    assert json.loads(out.body) == {"error": {"message": "bad model", "type": "invalid_request"
                                    "_error", "param": "model", "code": "model_not_found"}}
    assert out.headers == {"x-should-retry": "false"}


def test_fail_midstream_stream() -> None:
    out, _ = faulted({"fail_midstream": {"after_events": 18, "code": "overloaded"}})
    assert isinstance(out, Reply)
    events = out.events
    assert [e["sequence_number"] for e in events] == list(range(20))
    error, failed = events[-2], events[-1]
    assert error["type"] == "error" and set(error["error"]) == {"type", "code", "message", "param"}
    assert error["error"]["code"] == "overloaded"
    response = failed["response"]
    assert failed["type"] == "response.failed" and response["status"] == "failed"
    assert response["error"] == {"code": "overloaded", "message": error["error"]["message"]}
    done = [e["item"] for e in events[:18] if e["type"] == "response.output_item.done"]
    assert response["output"] == done and len(done) == 1


def test_fail_midstream_on_a_json_request_is_a_500() -> None:
    out, _ = faulted("fail_midstream", stream=False)
    assert isinstance(out, RawReply) and out.status == 500
    assert json.loads(out.body)["error"]["code"] == "server_error"


def test_incomplete_cuts_the_item_and_the_json_body_follows() -> None:
    out, _ = faulted({"incomplete": {"reason": "content_filter", "item": 0, "deltas": 3}})
    assert isinstance(out, Reply)
    response = out.response
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "content_filter"}
    (message,) = response["output"]
    assert message["status"] == "incomplete"
    assert message["content"][0]["text"] == "The weather in"
    assert response["usage"]["output_tokens"] < planned().response["usage"]["output_tokens"]
    body, _ = faulted("incomplete", stream=False)
    assert isinstance(body, Reply)
    folded = json.loads(body.json_body())
    assert folded["status"] == "incomplete"
    assert [i["status"] for i in folded["output"]] == ["completed", "incomplete"]


def test_vendor_events_and_items_land_where_asked() -> None:
    out, _ = faulted({"vendor_event": {"at": [1, 3], "fields": {"n": 1}}})
    assert isinstance(out, Reply)
    types = [e["type"] for e in out.events]
    assert types[1] == types[4] == "ormock:trace" and out.events[1]["n"] == 1
    out, _ = faulted({"vendor_item": {"output_index": 1, "fields": {"query": "paris"}}})
    assert isinstance(out, Reply)
    output = out.response["output"]
    assert [i["type"] for i in output] == ["message", "acme:web_search_call", "function_call"]
    assert output[1]["query"] == "paris" and output[1]["status"] == "completed"
    json_out, names = faulted("vendor_item", stream=False)
    assert isinstance(json_out, Reply) and names == ["vendor_item"]
    assert json.loads(json_out.json_body())["output"][0]["type"] == "acme:web_search_call"


@pytest.mark.parametrize(("kind", "numbers"), [
    ("gap", [0, 1, 2, 3, 5, 6]), ("duplicate", [0, 1, 2, 3, 3, 4]),
    ("restart", [0, 1, 2, 3, 0, 1]),
])
def test_sequence_numbers(kind: str, numbers: list[int]) -> None:
    out, _ = faulted({"sequence": {"kind": kind, "at": 4}})
    assert isinstance(out, Reply)
    assert [e["sequence_number"] for e in out.events][:6] == numbers


def test_sequence_reorder_swaps_two_differing_deltas() -> None:
    out, _ = faulted({"sequence": {"kind": "reorder", "at": 1}})
    assert isinstance(out, Reply)
    assert [e["sequence_number"] for e in out.events][:7] == [0, 1, 2, 3, 5, 4, 6]
    assert out.events[4]["delta"] == " weather"


def test_wire_faults_on_frames() -> None:
    out, _ = faulted({"disconnect": {"mode": "reset", "after_events": 3}})
    assert isinstance(out, Reply) and out.frames is not None
    assert [f.action for f in out.frames] == [None, None, None, "reset"]
    out, _ = faulted({"stall": {"after_events": 2, "seconds": 0.5}})
    assert isinstance(out, Reply) and out.frames is not None
    assert out.frames[2] == Frame(action="stall", delay=0.5)
    out, _ = faulted({"malformed": "crlf"})
    assert isinstance(out, Reply) and b"\n" not in out.sse_body().replace(b"\r\n", b"")
    out, _ = faulted({"malformed": {"kind": "multiline_data", "at": 1}})
    assert isinstance(out, Reply)
    assert out.sse_body().count(b"\ndata: ") == len(out.events) + 2


def test_stream_only_faults_leave_a_json_answer_alone() -> None:
    for spec in ("vendor_event", "sequence", "no_done", {"malformed": "crlf"}):
        reply = planned(stream=False)
        out, names = apply_faults(reply, [parse_fault(spec)], {}, random.Random(0))
        assert out is reply and names == []


def test_json_answers_of_wire_faults() -> None:
    body = planned(stream=False).json_body()
    out, _ = faulted({"disconnect": {"mode": "reset", "after_bytes": 40}}, stream=False)
    assert isinstance(out, Reply) and out.frames == [Frame(body[:40]), Frame(action="reset")]
    out, _ = faulted("stall", stream=False)
    assert isinstance(out, Reply) and out.frames == [Frame(action="stall", delay=math.inf),
                                                      Frame(body)]
    for spec in ("truncate", "malformed"):
        raw, _ = faulted(spec, stream=False)
        assert isinstance(raw, RawReply) and raw.status == 200 and body.startswith(raw.body)
        with pytest.raises(json.JSONDecodeError):
            json.loads(raw.body)


def test_slow_sets_pacing_and_delays_json_and_errors() -> None:
    out, _ = faulted({"slow": {"first_event": 0.25, "tokens_per_second": None, "per_event": 0}})
    assert isinstance(out, Reply) and out.pacing is not None
    assert out.wire()[0].delay == 0.25 and out.json_delay() == 0.25
    raw, names = faulted({"slow": {"first_event": 0.25}}, {"http_error": 503})
    assert isinstance(raw, RawReply) and raw.delay == 0.25 and names == ["slow", "http_error"]
    framed = planned()
    framed = replace(framed, frames=framed.wire())  # a Reply is immutable
    paced = Slow(first_event=0.5, tokens_per_second=None).apply(framed, random.Random(0))
    assert isinstance(paced, Reply) and paced.frames is not None
    assert [f.delay for f in paced.frames[:2]] == [0.5, 0.0]


# -- composition and triggers ----------------------------------------------------------------


def test_slow_then_fail_midstream_in_either_order() -> None:
    one, names = faulted({"slow": {"per_event": 0.001}}, "fail_midstream")
    two, _ = faulted("fail_midstream", {"slow": {"per_event": 0.001}})
    assert isinstance(one, Reply) and isinstance(two, Reply)
    assert names == ["slow", "fail_midstream"]
    assert one.sse_body() == two.sse_body() and one.wire() == two.wire()
    assert one.wire()[1].delay == 0.001 and one.response["status"] == "failed"
    assert check_stream(one.sse_body()).ok


def test_faults_compose_their_breaks() -> None:
    out, names = faulted({"sequence": "gap"}, "vendor_event", {"malformed": "crlf"}, "no_done")
    assert names == ["sequence", "vendor_event", "malformed", "no_done"]
    assert check_stream(seen(out)).rules == {"sequence-number", "sse-crlf", "no-done"}


def test_triggers() -> None:
    rng = random.Random(0)
    assert all(Trigger().fires(n, rng) for n in range(1, 5))
    assert [Trigger("nth", 2).fires(n, rng) for n in range(1, 5)] == [False, True, False, False]
    assert [Trigger("first", 2).fires(n, rng) for n in range(1, 5)] == [True, True, False, False]
    draws = [Trigger("probability", 0.5).fires(n, random.Random(7)) for n in range(1, 50)]
    again = [Trigger("probability", 0.5).fires(n, random.Random(7)) for n in range(1, 50)]
    assert draws == again
    rng = random.Random(7)
    many = [Trigger("probability", 0.3).fires(1, rng) for _ in range(2000)]
    assert 0.25 < sum(many) / len(many) < 0.35


def test_counts_per_fault_and_http_error_short_circuits() -> None:
    once = parse_fault({"http_error": 429, "when": {"nth": 1}})
    later = parse_fault({"incomplete": None, "when": {"first": 1}})
    counts: dict[int, int] = {}
    results = [apply_faults(planned(), [once, later], counts, random.Random(0)) for _ in range(3)]
    assert [names for _, names in results] == [["http_error"], ["incomplete"], []]
    assert counts == {once.key: 3, later.key: 2}  # the 429 stopped the walk the first time
    assert isinstance(results[0][0], RawReply) and isinstance(results[2][0], Reply)


def test_probability_trigger_is_seeded() -> None:
    def run(seed: int) -> list[list[str]]:
        fault = parse_fault({"no_done": None, "when": {"probability": 0.5}})
        rng, counts = random.Random(seed), dict[int, int]()
        return [apply_faults(planned(), [fault], counts, rng)[1] for _ in range(30)]

    assert run(3) == run(3) != run(4)


# -- specs, errors, schema, registry ---------------------------------------------------------


@pytest.mark.parametrize(("spec", "path", "hint"), [
    ({"http_error": {"retry_afer": 1}}, "faults[0].http_error.retry_afer", "'retry_after'"),
    ({"http_eror": 429}, "faults[0]", "'http_error'"),
    ("no_dne", "faults[0]", "'no_done'"),
    ({"http_error": {"status": "429"}}, "faults[0].http_error.status", "whole number"),
    ({"http_error": {"status": 99}}, "faults[0].http_error.status", "at least 200"),
    ({"http_error": 429.5}, "faults[0].http_error.status", "whole number"),
    ({"http_error": {"headers": {"a b": "x"}}}, "faults[0].http_error.headers.a b", "header"),
    ({"http_error": 429, "status": 500}, "faults[0]", "indent it under http_error"),
    ({"slow": None, "stall": None}, "faults[0]", "own list entry"),
    ({"when": "always"}, "faults[0]", "names no fault"),
    ({"disconnect": "rst"}, "faults[0].disconnect.mode", "'reset'"),
    ({"disconnect": {"after_events": 1, "after_bytes": 9}}, "faults[0].disconnect", "not both"),
    ({"vendor_event": "trace"}, "faults[0].vendor_event.type", "vendor prefix"),
    ({"vendor_event": {"fields": {"type": "x"}}}, "faults[0].vendor_event.fields.type",
     "set by ormock"),
    ({"vendor_event": {"at": []}}, "faults[0].vendor_event.at", "non-empty list"),
    ({"vendor_event": {"at": [0]}}, "faults[0].vendor_event.at[0]", "at least 1"),
    ({"no_done": 3}, "faults[0].no_done", "mapping of parameters"),
    ({"stall": 0}, "faults[0].stall.seconds", "more than 0"),
    ({"slow": {"jitter": 2}}, "faults[0].slow.jitter", "at most 1"),
    ({"sequence": {"kind": "gap", "at": 0}}, "faults[0].sequence.at", "at least 1"),
    ({"malformed": "crfl"}, "faults[0].malformed.kind", "'crlf'"),
    ({"incomplete": {"deltas": -1}}, "faults[0].incomplete.deltas", "at least 0"),
    ({"truncate": None, "when": {"nht": 1}}, "faults[0].when.nht", "'nth'"),
    ({"truncate": None, "when": {"nth": 0}}, "faults[0].when.nth", ">= 1"),
    ({"truncate": None, "when": {"probability": 1.5}}, "faults[0].when.probability", "0 to 1"),
    ({"truncate": None, "when": "sometimes"}, "faults[0].when", "'always'"),
    ({"truncate": {"when": {"nth": 1}}}, "faults[0].truncate.when", "beside truncate"),
    ([1, 2], "faults[0]", "a fault is a name"),
])
def test_spec_errors_name_the_path_and_what_to_write(spec: Any, path: str, hint: str) -> None:
    with pytest.raises(FaultSpecError) as caught:
        parse_fault(spec)
    assert caught.value.path == path
    assert hint in str(caught.value) and str(caught.value).startswith(path)
    assert not _schema_accepts(spec)


def test_errors_from_python_name_the_parameter() -> None:
    with pytest.raises(FaultSpecError, match=r"^http_error\.status: must be at most 599"):
        HttpError(status=600)
    with pytest.raises(ValueError, match="after_events"):
        FailMidstream(after_events=-1)


def _schema_accepts(spec: Any) -> bool:
    return jsonschema.Draft202012Validator(FAULT_SCHEMA).is_valid(spec)


def test_the_schema_accepts_what_parse_fault_accepts() -> None:
    jsonschema.Draft202012Validator.check_schema(FAULT_SCHEMA)
    extra = [{"http_error": {"status": 429, "retry_after": 1.5, "should_retry": None}},
             {"stall": None, "when": {"first": 2}}, {"truncate": 3.0, "when": "always"},
             {"no_done": None, "when": None},
             {"sequence": {"kind": "reorder"}, "when": {"probability": 0.25}}]
    for spec in [*CASES, *extra]:
        parse_fault(spec)
        assert _schema_accepts(spec), spec


def test_to_spec_round_trips() -> None:
    for spec in [*CASES, {"http_error": {"status": 429, "retry_after_ms": 5}, "when": {"nth": 2}}]:
        fault = parse_fault(spec)
        again = parse_fault(fault.to_spec())
        assert again == fault and again.key != fault.key
        assert _schema_accepts(fault.to_spec())


@pytest.fixture
def plugin_fault() -> Iterator[type[Fault]]:
    from dataclasses import dataclass

    @register
    @dataclass(frozen=True, kw_only=True)
    class Teapot(Fault):
        """Answers 418."""

        name = "teapot"

        def apply(self, reply: Reply, rng: random.Random) -> RawReply:
            return RawReply(418, b"{}")

    try:
        yield Teapot
    finally:
        FAULTS.pop("teapot")


def test_plugins_register_faults(plugin_fault: type[Fault]) -> None:
    assert isinstance(parse_fault("teapot"), plugin_fault)
    assert "teapot" in fault_schema()["oneOf"][1]["properties"]
    with pytest.raises(ValueError, match="already registered"):
        register(type("Other", (plugin_fault,), {"name": "http_error"}))
    assert FAULTS["http_error"] is HttpError
    assert isinstance(Disconnect(mode="reset"), Fault)


# -- the real openai SDK against a real server serving faulted replies -----------------------
# The engine does not apply faults yet: this app asks an Engine for the reply, applies the
# route's faults, and writes the result's wire with the server's own writer, on uvicorn.


@dataclass
class Route:
    faults: list[Fault]
    counts: dict[int, int] = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    hits: int = 0


class FaultApp:
    def __init__(self) -> None:
        self.engine = Engine(seed=0)
        self.routes: dict[str, Route] = {}

    async def __call__(self, scope: Json, receive: Any, send: Any) -> None:
        route = self.routes[scope["path"].split("/")[1]]
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        route.hits += 1
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        reply = self.engine.respond(json.loads(body), headers)
        if isinstance(reply, Reply):
            reply, _ = apply_faults(reply, route.faults, route.counts, route.rng)
        kind = "sse" if isinstance(reply, Reply) and reply.stream else "json"
        await send_wire(send, receive, render(reply, kind))


class FaultServer:
    def __init__(self) -> None:
        self.app = FaultApp()
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        # ormock's HTTP protocol, as ``ormock serve`` runs: it notes each connection, which a
        # disconnect fault closes or resets (under uvicorn's own the body would end cleanly)
        config = uvicorn_config(self.app, log_level="warning", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]},
                                       daemon=True)
        self.names = itertools.count()

    def route(self, *specs: Any) -> tuple[Route, str]:
        name = f"r{next(self.names)}"
        route = self.app.routes[name] = Route([parse_fault(s) for s in specs])
        return route, f"http://127.0.0.1:{self.socket.getsockname()[1]}/{name}/v1"


@pytest.fixture(scope="module")
def faults_at() -> Iterator[FaultServer]:
    running = FaultServer()
    running.thread.start()
    while not running.server.started:
        running.thread.join(0.005)
    yield running
    running.server.should_exit = True
    running.thread.join(10)
    running.socket.close()


def sdk(base_url: str, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="sk-test", **{"max_retries": 0, **options})


def stream_types(client: openai.OpenAI, got: list[str]) -> None:
    for event in client.responses.create(model="gpt-4o-mini", input="Hi", stream=True):
        got.append(event.type)


def test_sdk_rate_limited_retries_then_raises(faults_at: FaultServer) -> None:
    route, url = faults_at.route({"http_error": {"status": 429, "retry_after_ms": 1}})
    with sdk(url, max_retries=2) as client, pytest.raises(openai.RateLimitError) as caught:
        client.responses.create(model="m", input="Hi", stream=True)
    assert route.hits == 3 and caught.value.code == "rate_limit_exceeded"
    route, url = faults_at.route({"http_error": {"status": 503, "should_retry": False}})
    with sdk(url, max_retries=2) as client, pytest.raises(openai.InternalServerError):
        client.responses.create(model="m", input="Hi")
    assert route.hits == 1
    route, url = faults_at.route({"http_error": 400})
    with sdk(url, max_retries=2) as client, pytest.raises(openai.BadRequestError):
        client.responses.create(model="m", input="Hi")
    assert route.hits == 1


def test_sdk_rate_limited_once_then_succeeds(faults_at: FaultServer) -> None:
    route, url = faults_at.route({"http_error": {"status": 429, "retry_after_ms": 1},
                                  "when": {"nth": 1}})
    with sdk(url, max_retries=2) as client:
        assert client.responses.create(model="m", input="Hi").status == "completed"
    assert route.hits == 2


def test_sdk_fail_midstream_raises_api_error_while_iterating(faults_at: FaultServer) -> None:
    route, url = faults_at.route({"fail_midstream": {"after_events": 5, "code": "overloaded"}})
    got: list[str] = []
    with sdk(url, max_retries=2) as client, pytest.raises(openai.APIError) as caught:
        stream_types(client, got)
    assert type(caught.value) is openai.APIError and route.hits == 1 and len(got) == 5
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "overloaded"
    _, url = faults_at.route("fail_midstream")
    with sdk(url) as client, pytest.raises(openai.InternalServerError):
        client.responses.create(model="m", input="Hi")


def test_sdk_disconnects_raise_connection_errors(faults_at: FaultServer) -> None:
    for mode, cause in (("reset", "reset by peer"), ("close", "incomplete chunked read")):
        route, url = faults_at.route({"disconnect": {"mode": mode, "after_events": 4}})
        got: list[str] = []
        with sdk(url, max_retries=2) as client, pytest.raises(openai.APIConnectionError) as caught:
            stream_types(client, got)
        assert cause in str(caught.value.__cause__) and route.hits == 1
        assert len(got) <= 4


def test_sdk_times_out_a_stalled_stream(faults_at: FaultServer) -> None:
    _, url = faults_at.route({"stall": {"after_events": 3}})
    got: list[str] = []
    with sdk(url, timeout=0.3) as client, pytest.raises(openai.APITimeoutError):
        stream_types(client, got)
    assert len(got) == 3
    _, url = faults_at.route({"stall": {"seconds": 0.02, "after_events": 3}})
    with sdk(url, timeout=5) as client:
        stream_types(client, got)
    assert got[-1] == "response.completed"


def test_sdk_incomplete(faults_at: FaultServer) -> None:
    _, url = faults_at.route({"incomplete": "content_filter"})
    with sdk(url) as client:
        response = client.responses.create(model="m", input="Hi")
        events = list(client.responses.create(model="m", input="Hi", stream=True))
        with client.responses.stream(model="m", input="Hi") as helper, pytest.raises(
            RuntimeError, match=r"response\.completed"
        ):
            helper.get_final_response()
    assert response.status == "incomplete" and response.incomplete_details is not None
    assert response.incomplete_details.reason == "content_filter"
    assert events[-1].type == "response.incomplete"


def test_sdk_accepts_a_truncated_stream_silently(faults_at: FaultServer) -> None:
    _, url = faults_at.route({"truncate": 6})
    got: list[str] = []
    with sdk(url) as client:
        stream_types(client, got)
        with client.responses.stream(model="m", input="Hi") as helper, pytest.raises(
            RuntimeError, match=r"response\.completed"
        ):
            helper.get_final_response()
    assert len(got) == 6


def test_sdk_and_malformed_streams(faults_at: FaultServer) -> None:
    for kind in ("invalid_json", "missing_blank_line"):
        _, url = faults_at.route({"malformed": kind})
        with sdk(url) as client, pytest.raises(json.JSONDecodeError):
            stream_types(client, [])
    for spec in ({"malformed": "crlf"}, {"malformed": "type_mismatch"},
                 {"malformed": "multiline_data"}, "no_done", {"sequence": "reorder"},
                 "vendor_event", {"slow": {"first_event": 0.001, "tokens_per_second": 5000}}):
        _, url = faults_at.route(spec)
        got: list[str] = []
        with sdk(url) as client:
            stream_types(client, got)
        assert got[-1] == "response.completed", spec
        # the Python SDK passes unknown events through
        assert ("ormock:trace" in got) is (spec == "vendor_event")


def test_sdk_slow_stream_that_then_fails(faults_at: FaultServer) -> None:
    _, url = faults_at.route({"slow": {"first_event": 0.001, "per_event": 0.001}},
                             "fail_midstream")
    with sdk(url) as client, pytest.raises(openai.APIError, match="fail_midstream"):
        stream_types(client, [])


def test_sdk_json_request_disconnect(faults_at: FaultServer) -> None:
    route, url = faults_at.route({"disconnect": "reset"})
    with sdk(url, max_retries=1) as client, pytest.raises(openai.APIConnectionError):
        client.responses.create(model="m", input="Hi")
    assert route.hits == 2  # the SDK retries a dropped connection before a body


def test_sdk_json_request_stall(faults_at: FaultServer) -> None:
    route, url = faults_at.route("stall")
    with sdk(url, timeout=0.2) as client, pytest.raises(openai.APITimeoutError):
        client.responses.create(model="m", input="Hi")
    assert route.hits == 1
