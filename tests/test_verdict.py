"""The resilience verdict: each rule on hand-made journals, then real clients judged from the
journal of a real server: the openai SDK (well behaved), a hand-written httpx loop (not), and
an openai-agents loop under 429s and a mid-stream failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from agent_runs import run_agent

from ormock import Engine, JournalEntry, OpenResponsesError, OrmockServer
from ormock.cli import main
from ormock.engine.verdict import CODES, Rules, Verdict, assert_resilient, judge, rules_from

Json = dict[str, Any]
BODY: Json = {"model": "gpt-4o-mini", "input": "Hi"}


def entry(at: float, status: int = 200, body: Json | None = None, *, stream: bool = False,
          ended: str = "whole", headers: dict[str, str] | None = None,
          response_id: str | None = None, response_status: str | None = None,
          events: int = 0, output_ids: tuple[str, ...] = (), finished_at: float | None = None,
          error: Json | None = None) -> Json:
    """A journal entry as the admin API serves it (events 1 ms apart)."""
    return {
        "method": "POST", "path": "/v1/responses", "headers": {}, "body": body or BODY,
        "at": at, "status": status, "stream": stream, "response_id": response_id,
        "response_status": response_status or ("completed" if status == 200 else None),
        "error": error, "faults": [], "reply_headers": headers or {}, "ended": ended,
        "output_ids": list(output_ids), "finished_at": finished_at,
        "events": [{"type": "response.output_text.delta", "sequence_number": i,
                    "offset_ms": float(i)} for i in range(events)],
    }


def found(journal: Any, **options: Any) -> list[tuple[str, tuple[int, ...]]]:
    return [(f.code, f.requests) for f in judge(journal, **options).findings]


# -- each rule ---------------------------------------------------------------------------------


def test_a_clean_journal() -> None:
    verdict = judge([entry(0.0), entry(0.1, body={**BODY, "input": "Again"})])
    assert verdict.ok and verdict.findings == () and verdict.requests == 2
    assert str(verdict) == "ormock verdict: the client coped well (2 requests, 0 with a fault)"
    # the same request again after a success is not a retry
    assert found([entry(0.0), entry(0.001)]) == []


def test_retried_non_retryable() -> None:
    journal = [entry(0.0, 400, error={"code": "invalid_value"}), entry(0.001, 400),
               entry(0.002, 400)]
    (finding,) = judge(journal).findings  # not no-backoff too: retrying at all is the fault
    assert (finding.code, finding.requests) == ("retried-non-retryable", (1, 2, 3))
    assert "HTTP 400 (invalid_value)" in finding.message and "2 more times" in finding.message
    for status in (401, 403, 404, 422):
        assert found([entry(0.0, status), entry(1.0, status)]) == [
            ("retried-non-retryable", (1, 2))]
    said_no = {"x-should-retry": "false"}
    assert found([entry(0.0, 503, headers=said_no), entry(1.0, 503)]) == [
        ("retried-non-retryable", (1, 2))]
    # x-should-retry: true makes a 400 retryable; 408, 409 and 429 are
    assert found([entry(0.0, 400, headers={"x-should-retry": "true"}), entry(1.0)]) == []
    for status in (408, 409, 429, 500, 502):
        assert found([entry(0.0, status), entry(1.0)]) == []


def test_ignored_retry_after() -> None:
    asked = {"retry-after-ms": "100"}
    assert found([entry(0.0, 429, headers=asked, finished_at=0.001), entry(0.011)]) == [
        ("ignored-retry-after", (1, 2))]
    assert found([entry(0.0, 429, headers=asked, finished_at=0.001), entry(0.092)]) == []
    # retry-after-ms first, then retry-after in seconds
    assert found([entry(0.0, 503, headers={"retry-after": "1"}), entry(0.5)]) == [
        ("ignored-retry-after", (1, 2))]
    both = {"retry-after": "1", "retry-after-ms": "20"}
    assert found([entry(0.0, 429, headers=both), entry(0.03)]) == []
    message = judge([entry(0.0, 429, headers=asked), entry(0.01)]).findings[0].message
    assert "asked to wait 100 ms (retry-after-ms: 100)" in message
    assert message.startswith("request #2 came 10 ms after #1 failed (HTTP 429)")


def test_no_backoff() -> None:
    assert found([entry(0.0, 500), entry(0.005)]) == [("no-backoff", (1, 2))]
    assert found([entry(0.0, 500), entry(0.4)]) == []
    assert found([entry(0.0, 500), entry(0.04)], rules=Rules(min_backoff=0.01)) == []
    # the failure counts from when the answer ended: a stream that failed after 2 s
    failed = entry(0.0, stream=True, response_status="failed", events=30, finished_at=2.0)
    assert found([failed, entry(2.01)]) == [("no-backoff", (1, 2))]
    # a retry of a stream without streaming is the same request
    assert found([failed, entry(2.01, body={**BODY, "stream": False})]) == [
        ("no-backoff", (1, 2))]


def test_retry_storm() -> None:
    journal = [entry(float(i), 500) for i in range(7)]
    assert found(journal) == [("retry-storm", (1, 2, 3, 4, 5, 6, 7))]
    assert "sent 7 times in 6.00 s" in judge(journal).findings[0].message
    assert found(journal[:6]) == []
    assert found(journal, rules=Rules(storm_retries=6)) == []


def test_gave_up_too_early() -> None:
    assert found([entry(0.0, 429)]) == [("gave-up-too-early", (1,))]
    assert found([entry(0.0, 500), entry(0.5, body={**BODY, "input": "Other"})]) == [
        ("gave-up-too-early", (1,))]
    # a JSON request whose connection dropped before the body
    assert found([entry(0.0, ended="reset")]) == [("gave-up-too-early", (1,))]
    assert found([entry(0.0, stream=True, ended="stalled", finished_at=0.3)]) == [
        ("gave-up-too-early", (1,))]
    # not: a non-retryable status, a wait longer than 120 s, x-should-retry: false, a stream
    # that broke after events had gone out, a retry that also failed
    assert found([entry(0.0, 400)]) == []
    assert found([entry(0.0, 503, headers={"retry-after": "300"})]) == []
    assert found([entry(0.0, 500, headers={"x-should-retry": "false"})]) == []
    assert found([entry(0.0, stream=True, ended="reset", events=5)]) == []
    assert found([entry(0.0, 429), entry(1.0, 429)]) == []


def test_accepted_broken_stream() -> None:
    cut = entry(0.0, stream=True, ended="truncated", events=6, response_id="resp_1",
                output_ids=("msg_1",))
    follow = {"model": "m", "input": "Go on", "previous_response_id": "resp_1"}
    assert found([cut, entry(1.0, body=follow)]) == [("accepted-broken-stream", (1, 2))]
    finding = judge([cut, entry(1.0, body=follow)]).findings[0]
    assert "continues the response of request #1 (previous_response_id)" in finding.message
    assert "that stream ended early after 6 events, with no terminal event" in finding.message
    # carrying the items of a stream that failed or broke, as if it had completed
    failed = entry(0.0, stream=True, response_status="failed", events=8, response_id="resp_2",
                   output_ids=("fc_1", "call_1"))
    carried = {"model": "m", "input": [
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f",
         "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "ok"}]}
    assert found([failed, entry(1.0, body=carried)]) == [("accepted-broken-stream", (1, 2))]
    # retrying the broken request itself is fine
    assert found([cut, entry(1.0, body=cut["body"])]) == []


def test_continued_failed_response() -> None:
    failed = entry(0.0, stream=True, response_status="failed", events=8, response_id="resp_f")
    follow = {"model": "m", "input": "Go on", "previous_response_id": "resp_f"}
    assert found([failed, entry(1.0, body=follow)]) == [("continued-failed-response", (1, 2))]


def test_stalled_stream_held() -> None:
    stalled = entry(0.0, stream=True, ended="stalled", events=4, finished_at=45.0)
    retry = entry(45.5)
    assert found([stalled, retry]) == [("stalled-stream-held", (1,))]
    assert "held it open 45.00 s" in judge([stalled, retry]).findings[0].message
    assert found([stalled, retry], rules=Rules(stall_timeout=60)) == []
    # still open: judged against now, when it is known
    open_stall = entry(0.0, stream=True, ended="stalled", events=4)
    assert found([open_stall, retry]) == []
    assert found([open_stall, retry], now=40.0) == [("stalled-stream-held", (1,))]
    assert "still waiting 40.00 s later" in judge([open_stall], now=40.0).findings[0].message


def test_allow_and_unknown_codes() -> None:
    journal = [entry(0.0, 500), entry(0.001)]
    verdict = judge(journal, allow=["no-backoff"])
    assert verdict.ok and [f.code for f in verdict.allowed] == ["no-backoff"]
    assert str(verdict).endswith("; 1 allowed")
    with pytest.raises(ValueError, match="unknown verdict code 'no-backofff'; the codes are"):
        judge(journal, allow=["no-backofff"])


def test_assert_resilient_lists_each_finding_and_how_to_allow_it() -> None:
    journal = [entry(0.0, 400), entry(0.001, 400), entry(0.01, 500), entry(0.011),
               entry(0.012, 429, body={**BODY, "input": "x"})]
    journal[2]["body"] = journal[3]["body"] = {**BODY, "input": "y"}
    with pytest.raises(AssertionError) as caught:
        assert_resilient(journal)
    text = str(caught.value)
    assert text.splitlines()[0] == "ormock verdict: 3 findings (5 requests, 0 with a fault)"
    assert "  retried-non-retryable (#1, #2): request #1 got HTTP 400" in text
    assert "  no-backoff (#3, #4): request #4 came" in text
    assert "  gave-up-too-early (#5): request #5 got HTTP 429" in text
    assert text.endswith("allow=('retried-non-retryable', 'no-backoff', 'gave-up-too-early'))")
    verdict = assert_resilient(journal, allow=("retried-non-retryable", "no-backoff",
                                               "gave-up-too-early"))
    assert isinstance(verdict, Verdict) and len(verdict.allowed) == 3


def test_every_code_is_documented() -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "faults.md").read_text()
    import ormock.engine.verdict

    for code in CODES:
        assert f"`{code}`" in docs and code in (ormock.engine.verdict.__doc__ or "")


def test_rules_from_strings() -> None:
    assert rules_from({"stall_timeout": "5", "storm_retries": "3"}) == Rules(
        stall_timeout=5.0, storm_retries=3)
    with pytest.raises(ValueError, match="unknown verdict rule 'stall'"):
        rules_from({"stall": "5"})
    with pytest.raises(ValueError, match="storm_retries must be a whole number"):
        rules_from({"storm_retries": "many"})
    with pytest.raises(ValueError, match="min_backoff must be a number >= 0"):
        Rules(min_backoff=-1)


def test_reads_entries_their_dicts_the_admin_answer_and_an_engine() -> None:
    engine = Engine()
    for _ in range(2):
        with pytest.raises(OpenResponsesError, match="resp_nope"):
            engine.respond({**BODY, "previous_response_id": "resp_nope"}, {})
    expected = [("retried-non-retryable", (1, 2))]
    assert all(isinstance(e, JournalEntry) for e in engine.journal)
    assert found(engine) == found(engine.journal) == expected
    dicts = [e.to_dict() for e in engine.journal]
    assert found(dicts) == found({"object": "list", "data": dicts}) == expected
    with pytest.raises(ValueError, match="a journal is a list of entries"):
        judge({"object": "list"})


# -- real clients against a real server ---------------------------------------------------------


def namespace_of(base_url: str) -> str:
    return base_url.rsplit("/v1", 1)[0].rsplit("/", 1)[1]


@pytest.fixture
def engine(server: OrmockServer, base_url: str) -> Engine:
    return server.engine(namespace_of(base_url))


def test_the_openai_sdk_is_judged_resilient(base_url: str, engine: Engine) -> None:
    with openai.OpenAI(base_url=base_url, api_key="sk-test") as client:
        assert client.responses.create(model="ormock:rate-limited-once",
                                       input="Hi").status == "completed"
        events = list(client.responses.create(model="ormock:rate-limited-once", input="Hi",
                                              stream=True))
        assert events[-1].type == "response.completed"
        with pytest.raises(openai.RateLimitError):  # retried twice, after each retry-after
            client.responses.create(model="ormock:rate-limited", input="Hi")
    assert [e.status for e in engine.journal] == [429, 200, 200, 429, 429, 429]
    verdict = assert_resilient(engine)
    assert verdict.ok and verdict.requests == 6 and verdict.faults == 4


def test_the_openai_sdk_backs_off_on_its_own(base_url: str, engine: Engine) -> None:
    with openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=1) as client, \
            pytest.raises(openai.InternalServerError):
        client.responses.create(model="ormock:server-error", input="Hi")
    first, retry = engine.journal
    assert first.finished_at is not None and retry.at - first.finished_at >= 0.375
    assert judge(engine).ok


def sse_events(answer: httpx.Response) -> list[Json]:
    return [json.loads(line[6:]) for line in answer.text.splitlines()
            if line.startswith("data: {")]


class BadClient:
    """A hand-written loop: retries anything at once, and takes what a stream gave as done."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http

    def ask(self, body: Json, attempts: int = 3, headers: dict[str, str] | None = None
            ) -> httpx.Response:
        for _ in range(attempts):
            answer = self.http.post("/responses", json=body, headers=headers)
            if answer.status_code == 200:
                break
        return answer

    def stream(self, body: Json, headers: dict[str, str]) -> tuple[str, str]:
        events = sse_events(self.ask({**body, "stream": True}, headers=headers))
        text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
        return events[0]["response"]["id"], text  # no response.completed? never mind


LIMITED = {"name": "limited", "strict": False, "description": "A 429 asking for 2 s.",
           "steps": [{"times": "forever", "match": {"model": "limited"},
                      "reply": {"faults": [{"http_error": {"status": 429, "retry_after": 2},
                                            "when": {"first": 1}}]}}]}


def test_a_badly_behaved_client_is_judged_so(http: httpx.Client, engine: Engine) -> None:
    bad = BadClient(http)
    lost = bad.ask({**BODY, "previous_response_id": "resp_lost"})  # #1-#3: a 400, thrice
    assert lost.status_code == 400
    response_id, text = bad.stream(BODY, {"X-Ormock-Scenario": "truncated"})  # #4
    assert text and engine.journal[-1].ended == "truncated"
    # #5: the truncated response was stored (the server had completed it), so this works
    follow = bad.ask({**BODY, "input": "Go on", "previous_response_id": response_id})
    assert follow.status_code == 200
    engine.use(LIMITED)
    assert bad.ask({"model": "limited", "input": "Hi"}).status_code == 200  # #6 429, #7
    failing = bad.ask(BODY, attempts=10, headers={"X-Ormock-Scenario": "server-error"})
    assert failing.status_code == 500
    assert [e.status for e in engine.journal] == [400] * 3 + [200, 200, 429, 200] + [500] * 10
    storm = tuple(range(8, 18))
    assert found(engine) == [
        ("retried-non-retryable", (1, 2, 3)),
        ("accepted-broken-stream", (4, 5)),
        ("ignored-retry-after", (6, 7)),
        ("no-backoff", storm),
        ("retry-storm", storm),
    ]
    with pytest.raises(AssertionError, match="5 findings"):
        assert_resilient(engine)


def test_the_admin_api_and_the_cli_give_the_verdict(
    server: OrmockServer, base_url: str, http: httpx.Client, tmp_path: Path,
    capsys: pytest.CaptureFixture[str]
) -> None:
    BadClient(http).ask(BODY, headers={"X-Ormock-Scenario": "server-error"})
    admin = base_url.removesuffix("/v1") + "/_ormock"
    data = httpx.get(admin + "/verdict").json()
    assert not data["ok"] and [f["code"] for f in data["findings"]] == ["no-backoff"]
    assert data["findings"][0]["requests"] == [1, 2, 3]
    assert data["report"].startswith("ormock verdict: 1 finding (3 requests, 3 with a fault)")
    data = httpx.get(admin + "/verdict", params={"allow": "no-backoff,retry-storm"}).json()
    assert data["ok"] and len(data["allowed"]) == 1
    data = httpx.get(admin + "/verdict", params={"min_backoff": "0"}).json()
    assert data["ok"]
    answer = httpx.get(admin + "/verdict", params={"allow": "nope"})
    assert answer.status_code == 400 and "unknown verdict code" in answer.json()["error"][
        "message"]
    # the CLI, on the running server and on a saved journal
    namespace = namespace_of(base_url)
    assert main(["verdict", "--url", server.base_url, "--namespace", namespace]) == 1
    assert capsys.readouterr().out.startswith("ormock verdict: 1 finding")
    assert main(["verdict", "--url", server.url, "--namespace", namespace,
                 "--allow", "no-backoff"]) == 0
    saved = tmp_path / "journal.json"
    saved.write_text(httpx.get(admin + "/journal").text)
    assert main(["verdict", str(saved)]) == 1
    assert "no-backoff (#1-#3)" in capsys.readouterr().out
    assert main(["verdict", str(saved), "--min-backoff", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    assert main(["verdict"]) == 2
    assert "give a journal file" in capsys.readouterr().err


# -- an openai-agents loop under 429s and a mid-stream failure ----------------------------------

agents = pytest.importorskip("agents")

FAULTS = [
    {"http_error": {"status": 429, "retry_after_ms": 20}, "when": {"first": 1}},
    # counted among the requests that get past the 429: the agent's second turn
    {"fail_midstream": {"after_events": 4}, "when": {"nth": 2}},
]


@pytest.fixture
def agent_run(base_url: str, engine: Engine) -> Any:
    calls: list[str] = []

    @agents.function_tool  # type: ignore[untyped-decorator]
    def get_weather(city: str) -> str:
        """Get the weather for a city."""
        calls.append(city)
        return f"It is 18 degrees in {city}."

    def run(streamed: bool, **client_options: Any) -> Any:
        client_options.setdefault("max_retries", openai.DEFAULT_MAX_RETRIES)
        return run_agent(base_url, [get_weather], "Weather in Lisbon?", streamed=streamed,
                         **client_options)

    for fault in FAULTS:
        engine.inject(fault)
    run.calls = calls  # type: ignore[attr-defined]
    return run


def test_agents_runner_rides_out_429s_and_a_failed_turn(agent_run: Any, engine: Engine) -> None:
    # Runner.run asks without streaming: the failure is an HTTP 500, which the openai client
    # retries (after its own backoff), so the run completes
    final = agent_run(streamed=False)
    assert "It is 18 degrees in Lisbon." in final and agent_run.calls == ["Lisbon"]
    assert [(e.status, e.faults) for e in engine.journal] == [
        (429, ["http_error"]), (200, []), (500, ["fail_midstream"]), (200, [])]
    assert assert_resilient(engine).ok


def test_agents_streamed_run_raises_on_a_failed_turn(agent_run: Any, engine: Engine) -> None:
    # Runner.run_streamed: the 429 is retried, the mid-stream failure of the second turn raises
    # openai.APIError out of stream_events(); nothing is built on the failed response
    with pytest.raises(openai.APIError, match="fail_midstream") as caught:
        agent_run(streamed=True)
    assert type(caught.value) is openai.APIError and agent_run.calls == ["Lisbon"]
    assert [(e.status, e.response_status) for e in engine.journal] == [
        (429, None), (200, "completed"), (200, "failed")]
    assert assert_resilient(engine).ok


def test_agents_with_no_retries_give_up_too_early(agent_run: Any, engine: Engine) -> None:
    with pytest.raises(openai.RateLimitError):
        agent_run(streamed=False, max_retries=0)
    assert found(engine) == [("gave-up-too-early", (1,))]


# (fault, streamed) -> what the Runner raised (None: the run completed), the verdict's codes
BROKEN_TURNS: list[tuple[Json, bool, type[BaseException] | None, list[str]]] = [
    ({"truncate": 5, "when": {"nth": 1}}, False, json.JSONDecodeError, []),
    ({"truncate": 5, "when": {"nth": 1}}, True, agents.exceptions.ModelBehaviorError, []),
    ({"incomplete": "max_output_tokens", "when": {"nth": 2}}, False,
     agents.exceptions.ModelBehaviorError, []),
    ({"incomplete": "max_output_tokens", "when": {"nth": 2}}, True,
     agents.exceptions.ModelBehaviorError, []),
    # a JSON request loses its connection before the body: the openai client retries it
    ({"disconnect": {"mode": "reset", "after_events": 4}, "when": {"nth": 1}}, False, None, []),
    ({"disconnect": {"mode": "reset", "after_events": 4}, "when": {"nth": 1}}, True,
     openai.APIConnectionError, []),
]


@pytest.mark.parametrize(("fault", "streamed", "raised", "codes"), BROKEN_TURNS,
                         ids=[f"{next(iter(f))}-{'streamed' if s else 'run'}"
                              for f, s, _, _ in BROKEN_TURNS])
def test_agents_on_a_broken_turn(fault: Json, streamed: bool, raised: type[BaseException] | None,
                                 codes: list[str], base_url: str, engine: Engine) -> None:

    @agents.function_tool  # type: ignore[untyped-decorator]
    def get_weather(city: str) -> str:
        """Get the weather for a city."""
        return f"It is 18 degrees in {city}."

    engine.inject(fault)
    error: BaseException | None = None
    try:
        run_agent(base_url, [get_weather], "Weather in Lisbon?", instructions="Answer.",
                  streamed=streamed, max_retries=openai.DEFAULT_MAX_RETRIES)
    except Exception as caught:
        error = caught
    assert (type(error) if error is not None else None) is raised, error
    assert judge(engine).codes == codes
