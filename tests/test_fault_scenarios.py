"""The fault scenarios of the catalogue, served by a real server: what the openai SDK does with
each (measured here, and reported in docs/faults.md), and what the checker says of the bytes.

Each test awaits what it needs (an exception, an event, the journal); none sleeps for a fault's
duration: stalls meet a short client timeout, and the slow scenario runs at 100x speed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pytest

from ormock import Engine, OrmockServer, check_stream
from ormock.cli import main
from ormock.faults import Slow
from ormock.scenario import catalogue, find_scenario

# what the server writes: run again without the cork of ormock.server.http_protocol
# (ORMOCK_HTTP_CORK=0) by `make test`
pytestmark = pytest.mark.wire

FAULT_SCENARIOS = (
    "rate-limited", "rate-limited-once", "server-error", "overloaded", "failed-midstream",
    "incomplete", "content-filtered", "vendor-events", "broken-sequence", "disconnect", "stall",
    "slow", "malformed-json", "crlf-framing", "event-type-mismatch", "no-done", "truncated",
)
HTTP_ERRORS = {"rate-limited": 429, "server-error": 500, "overloaded": 503}
STALL_TIMEOUT = 1.0  # the client's read timeout against the stall scenario
# ... and its other timeouts: the stall's read timeout must not be what cuts a connect short,
# nor a gap between two of the stall's first events on a loaded machine
# (the SDK's own Timeout for the SDK, httpx's for the raw client: an SDK on httpx2 refuses httpx's)
STALLED = openai.Timeout(10.0, read=STALL_TIMEOUT)
RAW_STALLED = httpx.Timeout(10.0, read=STALL_TIMEOUT)


def namespace_of(base_url: str) -> str:
    return base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]


@pytest.fixture
def engine(server: OrmockServer, base_url: str) -> Engine:
    return server.engine(namespace_of(base_url))


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll until ``condition()`` holds (the server notices a client leaving asynchronously)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the server did not get there in time"
        time.sleep(0.002)


def declared(name: str) -> set[str]:
    """The checker rules the scenario's faults say they break."""
    faults = find_scenario(name).steps[0].reply.faults
    return set().union(*(f.breaks() for f in faults))


def test_every_fault_scenario_is_in_the_catalogue_with_faults_and_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    entries = catalogue()
    for name in FAULT_SCENARIOS:
        scenario = find_scenario(name)
        assert name in entries and scenario.name == name
        assert scenario.description.endswith(".") and "\n" not in scenario.description
        assert [len(s.reply.faults) for s in scenario.steps] == [1]
        assert scenario.steps[0].times is None  # forever
    assert main(["check", *(str(entries[name]) for name in FAULT_SCENARIOS)]) == 0
    assert capsys.readouterr().out.count(": ok (scenario") == len(FAULT_SCENARIOS)
    assert main(["scenarios"]) == 0
    listed = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert all(listed[name] == find_scenario(name).description for name in FAULT_SCENARIOS)


# -- the openai SDK, default retries (2) ---------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """What the SDK did: the exception it raised (exactly this class; None: none), how many
    requests the server received, how many events it yielded first (streams) and the last one
    (or the status of the response, for JSON)."""

    error: type[BaseException] | None
    requests: int
    events: int | None = None
    last: str | None = None


# measured with openai (Python) 3.57, max_retries=2 (the default); (name, stream) -> Seen
SEEN: dict[tuple[str, bool], Seen] = {
    ("rate-limited", True): Seen(openai.RateLimitError, 3, 0),
    ("rate-limited", False): Seen(openai.RateLimitError, 3),
    ("rate-limited-once", True): Seen(None, 2, 17, "response.completed"),
    ("rate-limited-once", False): Seen(None, 2, None, "completed"),
    ("server-error", True): Seen(openai.InternalServerError, 3, 0),
    ("server-error", False): Seen(openai.InternalServerError, 3),
    ("overloaded", True): Seen(openai.InternalServerError, 3, 0),
    ("overloaded", False): Seen(openai.InternalServerError, 3),
    ("failed-midstream", True): Seen(openai.APIError, 1, 6, "response.output_text.delta"),
    ("failed-midstream", False): Seen(openai.InternalServerError, 3),
    ("incomplete", True): Seen(None, 1, 12, "response.incomplete"),
    ("incomplete", False): Seen(None, 1, None, "incomplete"),
    ("content-filtered", True): Seen(None, 1, 11, "response.incomplete"),
    ("content-filtered", False): Seen(None, 1, None, "incomplete"),
    ("vendor-events", True): Seen(None, 1, 25, "response.completed"),
    ("vendor-events", False): Seen(None, 1, None, "completed"),
    ("broken-sequence", True): Seen(None, 1, 19, "response.completed"),
    ("broken-sequence", False): Seen(None, 1, None, "completed"),
    ("disconnect", True): Seen(openai.APIConnectionError, 1, 5, "response.output_text.delta"),
    ("disconnect", False): Seen(openai.APIConnectionError, 3),
    ("stall", True): Seen(openai.APITimeoutError, 1, 4, "response.content_part.added"),
    ("stall", False): Seen(openai.APITimeoutError, 3),
    ("slow", True): Seen(None, 1, 22, "response.completed"),
    ("slow", False): Seen(None, 1, None, "completed"),
    ("malformed-json", True): Seen(json.JSONDecodeError, 1, 10, "response.output_text.delta"),
    ("malformed-json", False): Seen(json.JSONDecodeError, 1),
    ("crlf-framing", True): Seen(None, 1, 22, "response.completed"),
    ("crlf-framing", False): Seen(None, 1, None, "completed"),
    ("event-type-mismatch", True): Seen(None, 1, 25, "response.completed"),
    ("event-type-mismatch", False): Seen(None, 1, None, "completed"),
    ("no-done", True): Seen(None, 1, 19, "response.completed"),
    ("no-done", False): Seen(None, 1, None, "completed"),
    ("truncated", True): Seen(None, 1, 6, "response.output_text.delta"),
    ("truncated", False): Seen(json.JSONDecodeError, 1),
}


def test_the_table_covers_every_fault_scenario_both_ways() -> None:
    assert set(SEEN) == {(name, stream) for name in FAULT_SCENARIOS for stream in (True, False)}


@pytest.mark.parametrize(("name", "stream"), list(SEEN),
                         ids=[f"{n}-{'stream' if s else 'json'}" for n, s in SEEN])
def test_sdk_behaviour(name: str, stream: bool, base_url: str, engine: Engine) -> None:
    seen = SEEN[name, stream]
    engine.speed = 100 if name == "slow" else 1.0
    timeout = STALLED if name == "stall" else 10.0
    got: list[str] = []
    error: BaseException | None = None
    status = None
    with openai.OpenAI(base_url=base_url, api_key="sk-test", timeout=timeout) as client:
        try:
            if stream:
                for event in client.responses.create(model=f"ormock:{name}", input="Hi",
                                                     stream=True):
                    got.append(event.type)
            else:
                status = client.responses.create(model=f"ormock:{name}", input="Hi").status
        except Exception as caught:
            error = caught
    assert (type(error) if error is not None else None) is seen.error, error
    assert len(engine.journal) == seen.requests
    assert all(e.scenario == name for e in engine.journal)
    if stream:
        assert len(got) == seen.events
        assert (got[-1] if got else None) == (seen.last if got else None)
    else:
        assert status == seen.last


def test_rate_limited_retries_wait_the_retry_after(base_url: str, engine: Engine) -> None:
    with openai.OpenAI(base_url=base_url, api_key="sk-test") as client, pytest.raises(
        openai.RateLimitError
    ) as caught:
        client.responses.create(model="m", input="Hi",
                                extra_headers={"X-Ormock-Scenario": "rate-limited"})
    assert caught.value.code == "rate_limit_exceeded"
    assert caught.value.response.headers["retry-after-ms"] == "20"
    assert caught.value.response.headers["x-ratelimit-remaining-requests"] == "0"
    first, *retries = engine.journal
    assert first.reply_headers["retry-after-ms"] == "20" and first.faults == ["http_error"]
    # each retry arrived at least 20 ms after the answer before it went out
    for before, retry in zip(engine.journal, retries, strict=False):
        assert before.finished_at is not None and retry.at - before.finished_at >= 0.02


def test_rate_limited_once_counts_per_namespace(server: OrmockServer, base_url: str) -> None:
    other = f"{server.url}/{namespace_of(base_url)}-other/v1"
    server.namespaces.open(f"{namespace_of(base_url)}-other")
    for url in (base_url, other):
        with openai.OpenAI(base_url=url, api_key="sk-test") as client:
            assert client.responses.create(model="ormock:rate-limited-once",
                                           input="Hi").status == "completed"
            # the first 429 was this namespace's; later requests are answered at once
            assert client.responses.create(model="ormock:rate-limited-once",
                                           input="Again").status == "completed"
        journal = server.engine(namespace_of(url)).journal
        assert [e.status for e in journal] == [429, 200, 200]
        assert [e.faults for e in journal] == [["http_error"], [], []]


# -- the bytes: the checker names exactly what the faults break ---------------------------------

STREAMED = [n for n in FAULT_SCENARIOS if n not in HTTP_ERRORS]
# how each stream ends on the wire, as the journal says
ENDED = {"disconnect": "reset", "stall": "stalled", "truncated": "truncated"}


def raw_stream(http: httpx.Client, name: str) -> tuple[bytes, BaseException | None]:
    """The body bytes as they came, up to a drop or, for the stall, the client's read timeout
    (every other stream gets a generous one: on a loaded machine a gap between two chunks can
    outlast the stall's)."""
    received = b""
    timeout = RAW_STALLED if name == "stall" else httpx.Timeout(10.0)
    try:
        with http.stream("POST", "/responses", json={"model": "m", "input": "Hi", "stream": True},
                         headers={"X-Ormock-Scenario": name}, timeout=timeout) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            for chunk in response.iter_raw():
                received += chunk
    except (httpx.ReadError, httpx.RemoteProtocolError, httpx.ReadTimeout) as error:
        return received, error
    return received, None


@pytest.mark.parametrize("name", STREAMED)
def test_the_checker_names_exactly_what_the_faults_break(
    name: str, http: httpx.Client, engine: Engine
) -> None:
    engine.speed = 0  # the slow scenario, instantly
    if name == "rate-limited-once":
        assert http.post("/responses", json={"model": "m", "input": "Hi", "stream": True},
                         headers={"X-Ormock-Scenario": name}).status_code == 429
    body, error = raw_stream(http, name)
    report = check_stream(body)
    entry = engine.journal[-1]
    faults = find_scenario(name).steps[0].reply.faults
    if name == "rate-limited-once":
        assert report.rules == set() and entry.faults == []  # the retry is a plain stream
    else:
        assert report.rules == declared(name), report.violations
        assert entry.faults == [f.name for f in faults]
    assert entry.ended == ENDED.get(name, "whole")
    assert (error is None) is (name not in ("disconnect", "stall"))
    if name == "disconnect":
        assert isinstance(error, httpx.ReadError) and "reset" in str(error)
    # the journal lists the events that went out, and only those
    sent = [e.get("type") for e in report.events if "type" in e]
    assert [e["type"] for e in entry.events] == sent


@pytest.mark.parametrize("name", sorted(HTTP_ERRORS))
def test_http_error_scenarios_answer_the_error_envelope(name: str, http: httpx.Client,
                                                        engine: Engine) -> None:
    for stream in (True, False):
        answer = http.post("/responses", json={"model": "m", "input": "Hi", "stream": stream},
                           headers={"X-Ormock-Scenario": name})
        assert answer.status_code == HTTP_ERRORS[name]
        error = answer.json()["error"]
        assert all(isinstance(error[k], str) for k in ("message", "type", "param", "code"))
        assert ("retry-after-ms" in answer.headers) is (name != "server-error")
    assert declared(name) == set()
    assert [e.status for e in engine.journal] == [HTTP_ERRORS[name]] * 2


def test_the_stall_is_held_until_the_client_leaves(base_url: str, engine: Engine) -> None:
    with openai.OpenAI(base_url=base_url, api_key="sk-test", timeout=STALLED,
                       max_retries=0) as client, pytest.raises(openai.APITimeoutError):
        for _ in client.responses.create(model="ormock:stall", input="Hi", stream=True):
            pass
    (entry,) = engine.journal
    wait_for(lambda: entry.finished_at is not None)
    assert entry.ended == "stalled" and len(entry.events) == 4
    assert entry.finished_at is not None and entry.finished_at - entry.at >= STALL_TIMEOUT


def test_slow_plans_its_delays_and_the_server_speed_divides_them(
    server: OrmockServer, base_url: str, http: httpx.Client, engine: Engine
) -> None:
    fault = find_scenario("slow").steps[0].reply.faults[0]
    assert isinstance(fault, Slow) and fault.first_event == 1.0
    # at speed 1, the plan is seconds long: read the journal as soon as the headers come
    body = {"model": "ormock:slow", "input": "Hi", "stream": True}
    with http.stream("POST", "/responses", json=body) as response:
        assert response.status_code == 200
        planned = [e["offset_ms"] for e in engine.journal[0].events]
    # at speed 100, the same plan (same seed, same events) is 100 times shorter
    engine.speed = 100
    with openai.OpenAI(base_url=base_url, api_key="sk-test") as client:
        events = list(client.responses.create(model="ormock:slow", input="Hi", stream=True))
    assert events[-1].type == "response.completed"
    fast = [e["offset_ms"] for e in engine.journal[1].events]
    assert fast == pytest.approx([p / 100 for p in planned], abs=0.002)
    assert 800 <= planned[0] <= 1200  # one second to the first event, give or take 20%
    deltas = [i for i, e in enumerate(engine.journal[0].events)
              if e["type"] == "response.output_text.delta"]
    assert all(planned[i] > planned[i - 1] for i in deltas)  # each delta waits for its tokens
    assert planned == sorted(planned)


@pytest.fixture
def fast_server() -> Iterator[OrmockServer]:
    with OrmockServer(speed=0) as running:
        yield running


def test_slow_at_speed_zero_is_instant(fast_server: OrmockServer) -> None:
    with openai.OpenAI(base_url=fast_server.base_url, api_key="sk-test") as client:
        response = client.responses.create(model="ormock:slow", input="Hi")
    assert response.status == "completed"
    (entry,) = fast_server.engine().journal
    assert {e["offset_ms"] for e in entry.events} == {0.0} and entry.faults == ["slow"]


def test_failed_midstream_says_why(base_url: str) -> None:
    with openai.OpenAI(base_url=base_url, api_key="sk-test") as client, pytest.raises(
        openai.APIError
    ) as caught:
        for _ in client.responses.create(model="ormock:failed-midstream", input="Hi",
                                         stream=True):
            pass
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "server_error"
    assert "fail_midstream" in caught.value.message


def test_incomplete_and_content_filtered_give_their_reason(base_url: str) -> None:
    with openai.OpenAI(base_url=base_url, api_key="sk-test") as client:
        for name, reason in (("incomplete", "max_output_tokens"),
                             ("content-filtered", "content_filter")):
            response = client.responses.create(model=f"ormock:{name}", input="Hi")
            assert response.incomplete_details is not None
            assert response.incomplete_details.reason == reason
            assert response.output[0].type == "message"
            assert response.output[0].status == "incomplete"
            with client.responses.stream(model=f"ormock:{name}", input="Hi") as helper, \
                    pytest.raises(RuntimeError, match=r"response\.completed"):
                helper.get_final_response()


def test_vendor_events_reach_the_python_client(base_url: str) -> None:
    with openai.OpenAI(base_url=base_url, api_key="sk-test") as client:
        events: list[Any] = list(client.responses.create(model="ormock:vendor-events",
                                                         input="Hi", stream=True))
    vendor = [e for e in events if e.type == "acme:trace"]
    assert len(vendor) == 6 and vendor[0].span == "model"  # passed through, extra fields kept


# -- faults no catalogue scenario shows, injected through the admin API --------------------------

# measured like SEEN, streamed, for the default reply to "Tell me about the weather in Paris"
# (its prose as drawn since issue 12: 39 events, 31 of them text deltas, fault-free)
INJECTED: list[tuple[list[Any], Seen]] = [
    (["vendor_item"], Seen(None, 1, 41, "response.completed")),
    ([{"sequence": "duplicate"}], Seen(None, 1, 39, "response.completed")),
    ([{"sequence": "restart"}], Seen(None, 1, 39, "response.completed")),
    ([{"sequence": "reorder"}], Seen(None, 1, 39, "response.completed")),
    ([{"disconnect": "close"}], Seen(openai.APIConnectionError, 1, 19,
                                     "response.output_text.delta")),
    ([{"disconnect": {"mode": "reset", "after_bytes": 1500}}],
     Seen(openai.APIConnectionError, 1, 1, "response.created")),
    ([{"stall": {"seconds": 0.05}}], Seen(None, 1, 39, "response.completed")),
    ([{"malformed": "missing_blank_line"}], Seen(json.JSONDecodeError, 1, 19,
                                                 "response.output_text.delta")),
    ([{"malformed": "multiline_data"}], Seen(None, 1, 39, "response.completed")),
    ([{"http_error": 400}], Seen(openai.BadRequestError, 1, 0)),
    ([{"http_error": {"status": 503, "should_retry": False}}],
     Seen(openai.InternalServerError, 1, 0)),
    ([{"http_error": {"status": 429, "retry_after": 300}}], Seen(openai.RateLimitError, 1, 0)),
    ([{"slow": {"first_event": 0.01, "per_event": 0.001, "tokens_per_second": None}},
      "fail_midstream"],
     Seen(openai.APIError, 1, 19, "response.output_text.delta")),
    ([{"vendor_event": {"type": "acme:x"}}, {"sequence": "gap"}, "no_done"],
     Seen(None, 1, 40, "response.completed")),
]


@pytest.mark.parametrize(("specs", "seen"), INJECTED,
                         ids=[json.dumps(s, separators=(",", ":")) for s, _ in INJECTED])
def test_sdk_and_injected_faults(specs: list[Any], seen: Seen, base_url: str,
                                 engine: Engine) -> None:
    admin = base_url.removesuffix("/v1") + "/_ormock/faults"
    assert httpx.post(admin, json=specs).status_code == 201
    got: list[str] = []
    error: BaseException | None = None
    with openai.OpenAI(base_url=base_url, api_key="sk-test") as client:
        try:
            for event in client.responses.create(
                model="gpt-4o-mini", input="Tell me about the weather in Paris", stream=True
            ):
                got.append(event.type)
        except Exception as caught:
            error = caught
    assert (type(error) if error is not None else None) is seen.error, error
    assert len(engine.journal) == seen.requests and len(got) == seen.events
    assert (got[-1] if got else None) == seen.last
    assert engine.journal[0].faults == [next(iter(s)) if isinstance(s, dict) else s
                                        for s in specs]


def test_the_journal_keeps_what_went_out(http: httpx.Client, engine: Engine) -> None:
    for name in ("truncated", "failed-midstream", "disconnect"):
        try:  # JSON this time
            http.post("/responses", json={"model": "m", "input": "Hi"},
                      headers={"X-Ormock-Scenario": name})
        except httpx.ReadError:
            assert name == "disconnect"
    truncated, failed, dropped = (e.to_dict() for e in engine.journal)
    assert (truncated["status"], truncated["ended"], truncated["events"]) == (
        200, "truncated", [])  # a 200 whose JSON body is cut
    assert (failed["status"], failed["ended"]) == (500, "whole")
    assert (dropped["ended"], dropped["events"], dropped["output_ids"]) == ("reset", [], [])
    wait_for(lambda: engine.journal[2].finished_at is not None)
    body = {"model": "m", "input": "Hi", "stream": True}
    raw_stream(http, "truncated")
    http.post("/responses", json=body, headers={"X-Ormock-Scenario": "failed-midstream"})
    cut, failed_stream = engine.journal[3:]
    assert [e["type"] for e in cut.events][-1] == "response.output_text.delta"
    # the message was sent in part: its id is among what the client got
    assert len(cut.output_ids) == 1 and cut.output_ids[0].startswith("msg_")
    assert failed_stream.response_status == "failed" and failed_stream.ended == "whole"
    assert len(failed_stream.output_ids) == 1
