"""``ormock probe --upstream URL``: hold a live provider to the protocol, and record it doing so.

A fixed battery of requests (``BATTERY``: plain text, streamed text, a tool call and its round
trip, ``previous_response_id``, a forced tool, a ``max_output_tokens`` small enough to cut, an
invalid request) goes to the provider one after the other. Each exchange is recorded as it
arrives (``Recording``: the exact chunks and their times) into one cassette, saved after every
probe (atomically, redacted, scanned for secrets), so an interrupted probe keeps what it had.
Each exchange is then judged: a stream by every rule of the checker (order, sequence numbers,
done text against the deltas, lifecycle, schema), a JSON body as a Response object, an error
answer by the Open Responses error envelope, and each probe by what its request asks for (a
call of the forced tool, ``incomplete`` with ``max_output_tokens``, ...). Every finding is a
MUST (the protocol, the error envelope, the status semantics) or a SHOULD; ``ormock probe``
exits 1 when any MUST is broken.

The battery is data: a probe is a name, a request built from what the earlier probes got (the
round trip needs the call id and response id of the tool call), whether it streams, the status
class it expects, and its own checks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TextIO
from urllib.parse import urlsplit

import httpx

from ormock.cassette.model import Cassette, Ended, Interaction, RecordedRequest
from ormock.cassette.recording import Recording
from ormock.cassette.redact import SecretFound
from ormock.cassette.save import save_cassette
from ormock.protocol.checker import check_stream
from ormock.protocol.errors import ERROR_STATUS
from ormock.protocol.schema import validate_error, validate_response
from ormock.protocol.types import Json

__all__ = ["BATTERY", "Context", "Exchange", "Finding", "Probe", "ProbeRun", "Skip",
           "Unreachable", "add_parser", "base_url", "run_probe"]

Severity = Literal["MUST", "SHOULD"]
DEFAULT_MODEL = "gpt-4.1-mini"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
MAX_TOKENS = 16  # the least OpenAI accepts, and far less than the story the probe asks for
_STATUSES = frozenset({"completed", "incomplete", "failed", "in_progress", "queued",
                       "cancelled"})


@dataclass(frozen=True)
class Finding:
    """One rule an exchange broke: ``rule`` (a checker rule id, or one of the probe's own),
    where (``index``: the event, ``line``: the SSE line) and why."""

    severity: Severity
    rule: str
    message: str
    index: int | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.index is not None:
            where = f" at event {self.index}" + (f" (line {self.line})" if self.line else "")
        return f"{self.severity} {self.rule}{where}: {self.message}"

    def to_dict(self) -> Json:
        return {"severity": self.severity, "rule": self.rule, "index": self.index,
                "line": self.line, "message": self.message}


def must(rule: str, message: str) -> Finding:
    return Finding("MUST", rule, message)


def should(rule: str, message: str) -> Finding:
    return Finding("SHOULD", rule, message)


class Skip(Exception):
    """A probe cannot be built: what it builds on did not come (the reason says what)."""


class Unreachable(Exception):
    """The upstream answered nothing at all: not a conformance finding."""


@dataclass
class Exchange:
    """One probe's request and what came back. ``response``: the Response object (the JSON
    body, or the terminal snapshot the stream folded into); ``body``: a JSON body as parsed."""

    probe: Probe
    request: Json | None = None
    status: int | None = None
    content_type: str = ""
    events: int | None = None
    ms: float = 0.0
    ended: Ended = "whole"
    response: Json | None = None
    body: Any = None
    findings: list[Finding] = field(default_factory=list)
    skipped: str | None = None

    @property
    def musts(self) -> int:
        return sum(1 for f in self.findings if f.severity == "MUST")

    def to_dict(self) -> Json:
        return {"name": self.probe.name, "what": self.probe.what,
                "stream": self.probe.stream, "expect": self.probe.expect,
                "status": self.status, "events": self.events, "ms": round(self.ms, 1),
                "ended": self.ended, "skipped": self.skipped,
                "findings": [f.to_dict() for f in self.findings]}


@dataclass
class Context:
    """What a probe's request and checks may read: the model, the profile, earlier exchanges."""

    model: str
    profile: str
    results: dict[str, Exchange] = field(default_factory=dict)

    def response_of(self, name: str) -> Json:
        """The Response an earlier probe got; ``Skip`` when it got none."""
        exchange = self.results.get(name)
        response = exchange.response if exchange is not None else None
        if not isinstance(response, dict) or not isinstance(response.get("id"), str):
            raise Skip(f"{name} gave no response to build on")
        return response


Build = Callable[[Context], Json]
Check = Callable[[Exchange, Context], Iterable[Finding]]


@dataclass(frozen=True)
class Probe:
    """One request of the battery: ``build`` makes its body (``Skip`` when it cannot),
    ``stream`` whether it asks for SSE, ``expect`` the status class, ``checks`` what its
    answer must show beyond the protocol (run on a 2xx answer only)."""

    name: str
    what: str
    build: Build
    stream: bool
    expect: Literal["2xx", "4xx"] = "2xx"
    checks: tuple[Check, ...] = ()


# -- the battery ------------------------------------------------------------------------------

WEATHER: Json = {
    "type": "function", "name": "get_weather", "strict": True,
    "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False},
}
CLOCK: Json = {
    "type": "function", "name": "get_time", "strict": True,
    "description": "The current time in a time zone.",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}},
                   "required": ["zone"], "additionalProperties": False},
}


def _calls(response: Json | None) -> list[Json]:
    output = (response or {}).get("output")
    return [i for i in output if isinstance(i, dict) and i.get("type") == "function_call"] \
        if isinstance(output, list) else []


def _text(response: Json | None) -> str:
    output = (response or {}).get("output")
    texts: list[str] = []
    for item in output if isinstance(output, list) else []:
        if isinstance(item, dict) and item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    texts.append(str(part.get("text") or ""))
    return "".join(texts)


def completed(exchange: Exchange, context: Context) -> Iterable[Finding]:
    status = (exchange.response or {}).get("status")
    if status != "completed":
        yield should("completed", f"a plain request ended {status!r}, not 'completed'")


def answers_text(exchange: Exchange, context: Context) -> Iterable[Finding]:
    if not _text(exchange.response).strip():
        yield should("text", "no message with output_text in the output")


def _call_shape(call: Json, offered: set[str]) -> Iterable[Finding]:
    if not isinstance(call.get("call_id"), str) or not call["call_id"]:
        yield must("function-call", f"function_call {call.get('id')!r} has no call_id")
    name = call.get("name")
    if name not in offered:
        yield must("function-call", f"function_call names {name!r}, which is not an offered "
                   f"tool ({', '.join(sorted(offered))})")
    arguments = call.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        yield must("function-call", f"function_call {name!r} arguments are not a JSON object "
                   f"string: {str(arguments)[:60]!r}")


def _offered(exchange: Exchange) -> set[str]:
    tools = (exchange.request or {}).get("tools") or []
    return {str(t.get("name")) for t in tools if isinstance(t, dict)}


def calls_a_tool(exchange: Exchange, context: Context) -> Iterable[Finding]:
    calls = _calls(exchange.response)
    if not calls:
        yield should("tool-call", "the model answered without calling the offered tool "
                     "(tool_choice auto: its choice, but the round trip cannot be probed)")
    for call in calls:
        yield from _call_shape(call, _offered(exchange))


def calls_the_forced_tool(exchange: Exchange, context: Context) -> Iterable[Finding]:
    choice = (exchange.request or {}).get("tool_choice") or {}
    wanted = choice.get("name") if isinstance(choice, dict) else None
    calls = _calls(exchange.response)
    if not any(c.get("name") == wanted for c in calls):
        got = ", ".join(str(c.get("name")) for c in calls) or "no function call"
        yield must("tool-choice", f"tool_choice forces {wanted!r}, but the output has {got}")
    for call in calls:
        yield from _call_shape(call, _offered(exchange))


def echoes_previous(exchange: Exchange, context: Context) -> Iterable[Finding]:
    sent = (exchange.request or {}).get("previous_response_id")
    echoed = (exchange.response or {}).get("previous_response_id")
    if echoed != sent:
        yield should("previous-response-id", f"previous_response_id is echoed as {echoed!r}, "
                     f"not {sent!r}")


def cut_by_max_output_tokens(exchange: Exchange, context: Context) -> Iterable[Finding]:
    response = exchange.response or {}
    budget = (exchange.request or {}).get("max_output_tokens")
    usage = response.get("usage")
    output_tokens = usage.get("output_tokens") if isinstance(usage, dict) else None
    if isinstance(output_tokens, int) and isinstance(budget, int) and output_tokens > budget:
        yield must("max-output-tokens", f"usage.output_tokens is {output_tokens}, over "
                   f"max_output_tokens {budget}")
    status = response.get("status")
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    if status == "incomplete" and reason == "max_output_tokens":
        return
    if status == "incomplete":
        yield must("max-output-tokens", f"incomplete, but incomplete_details.reason is "
                   f"{reason!r}, not 'max_output_tokens'")
    elif status == "completed" and isinstance(output_tokens, int) and isinstance(budget, int) \
            and output_tokens <= budget:
        yield should("max-output-tokens", f"the answer fit in {output_tokens} tokens, so the "
                     "cut could not be seen")
    else:
        yield must("max-output-tokens", f"a {budget}-token budget for a 400-word story ended "
                   f"{status!r}, not 'incomplete' with reason 'max_output_tokens'")


def _round_trip(context: Context) -> Json:
    response = context.response_of("tool-call")
    calls = _calls(response)
    if not calls or not isinstance(calls[0].get("call_id"), str):
        raise Skip("tool-call gave no function_call to answer")
    call = calls[0]
    output = {"city": "Paris", "temperature_c": 18, "sky": "clear"}
    return {"model": context.model, "previous_response_id": response["id"],
            "tools": [WEATHER], "stream": True,
            "input": [{"type": "function_call_output", "call_id": call["call_id"],
                       "output": json.dumps(output)}]}


def _previous(context: Context) -> Json:
    return {"model": context.model, "previous_response_id": context.response_of("text")["id"],
            "input": "Now say the same in French."}


BATTERY: tuple[Probe, ...] = (
    Probe("text", "plain text, as JSON",
          lambda c: {"model": c.model, "input": "Say hello in five words."},
          stream=False, checks=(completed, answers_text)),
    Probe("text-stream", "streamed text",
          lambda c: {"model": c.model, "input": "Count from one to ten in words.",
                     "stream": True},
          stream=True, checks=(completed, answers_text)),
    Probe("tool-call", "a function call (tool_choice auto), streamed",
          lambda c: {"model": c.model, "tools": [WEATHER], "stream": True,
                     "input": "What is the weather in Paris right now? Use get_weather."},
          stream=True, checks=(completed, calls_a_tool)),
    Probe("tool-round-trip", "the call's output sent back with previous_response_id, streamed",
          _round_trip, stream=True, checks=(completed, answers_text, echoes_previous)),
    Probe("previous-response", "previous_response_id on the plain text, as JSON",
          _previous, stream=False, checks=(completed, answers_text, echoes_previous)),
    Probe("forced-tool", "tool_choice forces get_time on a question that needs no tool",
          lambda c: {"model": c.model, "tools": [WEATHER, CLOCK], "stream": True,
                     "tool_choice": {"type": "function", "name": "get_time"},
                     "input": "Tell me a short joke."},
          stream=True, checks=(completed, calls_the_forced_tool)),
    Probe("max-output-tokens", f"max_output_tokens {MAX_TOKENS} on a long answer, streamed",
          lambda c: {"model": c.model, "max_output_tokens": MAX_TOKENS, "stream": True,
                     "input": "Write a 400-word story about a lighthouse keeper."},
          stream=True, checks=(cut_by_max_output_tokens,)),
    Probe("invalid-request", "input is a number (stream: true): a 4xx error envelope",
          lambda c: {"model": c.model, "input": 42, "stream": True},
          stream=True, expect="4xx"),
)


# -- the checks every exchange gets ------------------------------------------------------------

def check_response_object(body: Any, profile: str) -> list[Finding]:
    """A JSON body that must be a Response: its shape (MUST), and the official schema (MUST
    under ``openresponses``; under ``openai`` a SHOULD, as OpenAI's carry fields and items the
    schema does not know)."""
    if not isinstance(body, dict):
        return [must("response-object", "the body is not a JSON object")]
    out: list[Finding] = []
    if body.get("object") != "response":
        out.append(must("response-object", f"object is {body.get('object')!r}, not 'response'"))
    if not isinstance(body.get("id"), str):
        out.append(must("response-object", "the Response has no string id"))
    if body.get("status") not in _STATUSES:
        out.append(must("response-object", f"status {body.get('status')!r} is not one of "
                        f"{', '.join(sorted(_STATUSES))}"))
    output = body.get("output")
    if not isinstance(output, list) or not all(
            isinstance(i, dict) and isinstance(i.get("type"), str) for i in output):
        out.append(must("response-object", "output is not a list of items with a type"))
    problem = validate_response(body)
    if problem:
        message = f"the Response fails the official schema: {problem}"
        out.append(must("schema", message) if profile == "openresponses"
                   else should("schema", message))
    return out


def check_error(status: int, body: Any, profile: str) -> list[Finding]:
    """An error answer: the Open Responses envelope (MUST), its fields as strings and, under
    ``openresponses``, a known type that goes with the status (SHOULD)."""
    problem = validate_error(body)
    if problem:
        shown = json.dumps(body)[:80] if body is not None else "not JSON"
        return [must("error-envelope", f"HTTP {status} without the error envelope "
                     f"{{error: {{message, type, param, code}}}}: {problem} ({shown})")]
    error = body["error"]
    out = [should("error-fields", f"error.{name} is null; some clients read the message "
                  "only when type, param and code are all strings")
           for name in ("param", "code") if error.get(name) is None]
    if profile == "openresponses":
        kind = error.get("type")
        if kind not in ERROR_STATUS:
            out.append(should("error-type", f"error.type {kind!r} is not an Open Responses "
                              f"type ({', '.join(ERROR_STATUS)})"))
        elif ERROR_STATUS[kind] != status:
            out.append(should("error-type", f"error.type {kind!r} goes with HTTP "
                              f"{ERROR_STATUS[kind]}, not {status}"))
    return out


def _judge(exchange: Exchange, data: bytes, context: Context) -> None:
    probe, status, found = exchange.probe, exchange.status or 0, exchange.findings
    if exchange.ended != "whole":
        found.append(must("transport", f"the body ended {exchange.ended} after {len(data)} "
                          "bytes"))
    if probe.expect == "4xx" and status < 400:
        found.append(must("status", f"the invalid request was accepted (HTTP {status}); it "
                          "must get a 4xx error"))
    elif probe.expect == "4xx" and status >= 500:
        found.append(must("status", f"an invalid request got HTTP {status}: a client's "
                          "mistake is a 4xx"))
    elif probe.expect == "2xx" and not 200 <= status < 300:
        found.append(must("status", f"HTTP {status}, expected 2xx"))
    if status >= 400:
        try:
            exchange.body = json.loads(data)
        except ValueError:
            exchange.body = None
        found.extend(check_error(status, exchange.body, context.profile))
        return
    if not 200 <= status < 300:
        return
    if probe.stream:
        if exchange.content_type != "text/event-stream":
            found.append(must("content-type", f"a stream: true request got "
                              f"{exchange.content_type or 'no content type'}, not "
                              "text/event-stream"))
        report = check_stream(data, profile=context.profile)
        exchange.events = len(report.events)
        exchange.response = report.response
        found.extend(Finding("MUST", v.rule, v.message, v.index, v.line)
                     for v in report.violations)
        if report.response is None:
            return
    else:
        if exchange.content_type != "application/json":
            found.append(should("content-type", f"a JSON answer sent as "
                                f"{exchange.content_type or 'no content type'}"))
        try:
            exchange.body = json.loads(data)
        except ValueError as error:
            found.append(must("json-body", f"the body is not JSON ({error})"))
            return
        found.extend(check_response_object(exchange.body, context.profile))
        if not isinstance(exchange.body, dict):
            return
        exchange.response = exchange.body
    for check in probe.checks:
        found.extend(check(exchange, context))


# -- driving the upstream ----------------------------------------------------------------------

def base_url(upstream: str) -> str:
    """The API base of ``upstream``, with or without ``/v1``: ``http://host:port/v1``.
    ``ValueError`` when it is not an http(s) URL."""
    parts = urlsplit(upstream.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--upstream {upstream!r} is not an http(s) URL; give one such as "
                         "https://api.openai.com/v1")
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return f"{parts.scheme}://{parts.netloc}{path}"


@dataclass
class ProbeRun:
    upstream: str
    model: str
    profile: str
    cassette: Path
    exchanges: list[Exchange] = field(default_factory=list)
    cassette_error: str | None = None

    @property
    def musts(self) -> int:
        return sum(e.musts for e in self.exchanges)

    @property
    def shoulds(self) -> int:
        return sum(len(e.findings) - e.musts for e in self.exchanges)

    @property
    def ok(self) -> bool:
        return self.musts == 0

    def to_dict(self) -> Json:
        return {"upstream": self.upstream, "model": self.model, "profile": self.profile,
                "cassette": str(self.cassette), "cassette_error": self.cassette_error,
                "ok": self.ok, "must": self.musts, "should": self.shoulds,
                "exchanges": [e.to_dict() for e in self.exchanges]}

    def table(self) -> str:
        width = max([len(e.probe.name) for e in self.exchanges] + [5])
        lines = [f"ormock probe of {self.upstream} (model {self.model}, profile "
                 f"{self.profile})",
                 f"{'probe'.ljust(width)}  status  events        ms  findings"]
        for e in self.exchanges:
            status = "skipped" if e.skipped else str(e.status or "-")
            events = "-" if e.events is None else str(e.events)
            count = f"{e.musts} MUST, {len(e.findings) - e.musts} SHOULD" if e.findings \
                else "0"
            lines.append(f"{e.probe.name.ljust(width)}  {status:>6}  {events:>6}  "
                         f"{e.ms:8.1f}  {count}")
            if e.skipped:
                lines.append(f"    skipped: {e.skipped}")
            lines.extend(f"    {finding}" for finding in e.findings)
        verdict = "every MUST held" if self.ok else f"{self.musts} MUST broken"
        lines.append(f"{len(self.exchanges)} exchanges: {verdict}, {self.shoulds} SHOULD")
        lines.append(f"cassette: {self.cassette}" if self.cassette_error is None
                     else f"cassette NOT written: {self.cassette_error}")
        return "\n".join(lines)


def default_cassette(upstream: str, now: datetime | None = None) -> Path:
    """``probe-<host>[-<port>]-<UTC>.yaml`` in the current folder."""
    parts = urlsplit(upstream)
    host = (parts.hostname or "upstream").replace(":", "-")
    if parts.port:
        host += f"-{parts.port}"
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    return Path(f"probe-{host}-{stamp}.yaml")


async def _send(client: httpx.AsyncClient, url: str, path: str, headers: dict[str, str],
                body: Json) -> tuple[Recording, bytes, Ended, str]:
    """POST ``body``, recording the answer as it comes; returns the recording, the body's
    bytes, how it ended and the content type."""
    content = json.dumps(body, ensure_ascii=False).encode()
    recording = Recording(RecordedRequest("POST", path, headers=dict(headers), body=body))
    data = bytearray()
    ended: Ended = "whole"
    async with client.stream("POST", url, content=content, headers=headers) as answer:
        recording.answer(answer.status_code, answer.headers.multi_items())
        try:
            async for chunk in answer.aiter_bytes():
                recording.chunk(chunk)
                data += chunk
        except httpx.ReadTimeout:
            ended = "stalled"
        except httpx.RemoteProtocolError:
            ended = "closed"
        except httpx.ReadError:
            ended = "reset"
    kind = answer.headers.get("content-type", "").split(";")[0].strip().lower()
    return recording, bytes(data), ended, kind


async def run_probe(upstream: str, *, model: str = DEFAULT_MODEL, key: str | None = None,
                    profile: str = "openai", timeout: float = 60.0,
                    cassette: str | Path | None = None,
                    battery: tuple[Probe, ...] = BATTERY,
                    progress: TextIO | None = None) -> ProbeRun:
    """Run ``battery`` against ``upstream`` and judge every exchange; the cassette is saved
    after each probe. ``Unreachable`` when the first request gets no answer at all."""
    base = base_url(upstream)
    run = ProbeRun(base, model, profile,
                   Path(cassette) if cassette is not None else default_cassette(base))
    context = Context(model, profile)
    path = urlsplit(base).path + "/responses"
    interactions: list[Interaction] = []
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
    recorded_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    from ormock import __version__

    def say(text: str, end: str = "\n") -> None:
        if progress is not None:
            progress.write(text + end)
            progress.flush()

    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout)) as client:
        for number, probe in enumerate(battery, 1):
            exchange = Exchange(probe)
            run.exchanges.append(exchange)
            context.results[probe.name] = exchange
            say(f"[{number}/{len(battery)}] {probe.name}: {probe.what} ...", end=" ")
            try:
                exchange.request = probe.build(context)
            except Skip as skip:
                exchange.skipped = str(skip)
                say(f"skipped ({skip})")
                continue
            headers = {"content-type": "application/json",
                       "accept": "text/event-stream" if probe.stream else "application/json",
                       "accept-encoding": "identity"}
            if key:
                headers["authorization"] = f"Bearer {key}"
            started = time.monotonic()
            try:
                recording, data, ended, kind = await _send(
                    client, base + "/responses", path, headers, exchange.request)
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                if not any(e.status for e in run.exchanges):
                    say("unreachable")
                    raise Unreachable(f"cannot reach {base} ({error or type(error).__name__})"
                                      ) from None
                exchange.findings.append(must("transport", f"no connection: {error}"))
                say("no connection")
                continue
            except httpx.TimeoutException:
                exchange.findings.append(must("transport", f"no answer within {timeout:g} s"))
                say("timed out")
                continue
            except httpx.HTTPError as error:
                exchange.findings.append(must("transport", f"{type(error).__name__}: {error}"))
                say("failed")
                continue
            exchange.ms = (time.monotonic() - started) * 1000
            exchange.status, exchange.ended, exchange.content_type = recording.status, ended, kind
            _judge(exchange, data, context)
            interactions.append(recording.interaction(ended))
            events = "" if exchange.events is None else f", {exchange.events} events"
            say(f"{exchange.status}{events}, {exchange.ms:.0f} ms, "
                f"{len(exchange.findings)} findings")
            if run.cassette_error is None:
                try:
                    save_cassette(Cassette(tuple(interactions), profile=profile,
                                           upstream=origin, recorded_at=recorded_at,
                                           recorded_with=f"ormock probe {__version__}"),
                                  run.cassette)
                except SecretFound as error:
                    run.cassette_error = str(error)
                except OSError as error:
                    run.cassette_error = f"cannot write {run.cassette} ({error.strerror})"
    return run


# -- the command -------------------------------------------------------------------------------

def _command(args: argparse.Namespace) -> int:
    try:
        base_url(args.upstream)
    except ValueError as error:
        print(f"ormock probe: {error}", file=sys.stderr)
        return 2
    if args.timeout <= 0:
        print("ormock probe: --timeout is a number of seconds above 0", file=sys.stderr)
        return 2
    key = os.environ.get(args.key_env) or None
    try:
        run = asyncio.run(run_probe(args.upstream, model=args.model, key=key,
                                    profile=args.profile, timeout=args.timeout,
                                    cassette=args.cassette, progress=sys.stderr))
    except Unreachable as error:
        print(f"ormock probe: {error}; is the URL right and the server up?", file=sys.stderr)
        return 2
    print(json.dumps(run.to_dict(), indent=2) if args.json else run.table())
    if run.cassette_error is not None:
        print(f"ormock probe: the cassette was not written: {run.cassette_error}",
              file=sys.stderr)
        return 2
    return 0 if run.ok else 1


def add_parser(commands: Any) -> None:
    """Register ``ormock probe`` on the subparsers of the ``ormock`` command."""
    probe = commands.add_parser(
        "probe", help="hold a live provider to the protocol with a fixed battery, recorded",
        description="Send a fixed battery of requests to a live Responses API (plain text, "
        "streamed text, a tool call and its round trip, previous_response_id, a forced tool, "
        f"max_output_tokens {MAX_TOKENS}, an invalid request), record every exchange as a "
        "cassette, and report each rule the provider broke. Exits 1 when a MUST is broken, "
        "2 when the upstream cannot be reached or the cassette cannot be written.")
    probe.add_argument("--upstream", required=True, metavar="URL",
                       help="the provider's base URL, with or without /v1 "
                       "(https://api.openai.com)")
    probe.add_argument("--model", default=DEFAULT_MODEL,
                       help=f"the model every request names (default {DEFAULT_MODEL})")
    probe.add_argument("--key-env", default=DEFAULT_KEY_ENV, metavar="NAME",
                       help=f"the environment variable holding the API key (default "
                       f"{DEFAULT_KEY_ENV}); unset: no Authorization header")
    probe.add_argument("--cassette", default=None, metavar="OUT.yaml",
                       help="where to record (default probe-<host>-<UTC time>.yaml here)")
    probe.add_argument("--profile", choices=("openai", "openresponses"), default="openai",
                       help="how the provider streams (default openai: OpenAI's event "
                       "vocabulary, data: [DONE] optional, no official schema on its "
                       "payloads); openresponses holds it to every Open Responses rule")
    probe.add_argument("--json", action="store_true", help="print the report as JSON")
    probe.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                       help="per request: connect, and between bytes (default 60)")
    probe.set_defaults(func=_command)
