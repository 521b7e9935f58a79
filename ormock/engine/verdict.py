"""The resilience verdict: how a client coped with the faults it was served, from the journal.

``judge(entries)`` reads a journal (``JournalEntry`` objects, their ``to_dict()`` form as the
admin API serves it, or an ``Engine``) and returns a ``Verdict``: a list of ``Finding``s, each
with a code, the requests it concerns (numbered from 1, as ``#1``) and a sentence saying what
the client did and what to do instead. ``assert_resilient(entries, allow=(...))`` raises an
``AssertionError`` listing the findings not allowed.

Two requests are *the same request* when their JSON bodies are equal once ``stream`` and
``stream_options`` are left out (a client that retries a failed stream without streaming is
still retrying), and they name the same ``X-Ormock-Scenario`` (other headers do not count).
A request is a *retry* when the same request came before it and that one failed: an HTTP error,
a stream or body cut short (truncated, closed, reset, stalled), or a stream that ended in
``response.failed``. The server sees only what reaches it: a client that gives up, or waits,
without sending anything leaves no trace but the absence of a request, and all times are the
server's (``at``: when a request arrived; ``finished_at``: when its answer was written,
dropped, or the client left).

=========================  =====================================================================
retried-non-retryable      an HTTP 4xx other than 408, 409 and 429 (unless ``x-should-retry:
                           true``), or any error with ``x-should-retry: false``, sent again
ignored-retry-after        a retry came sooner than the ``retry-after-ms`` (else ``retry-after``,
                           in seconds) of the failure before it, by more than
                           ``retry_after_slack`` of it
no-backoff                 a retry came less than ``min_backoff`` after the failure before it,
                           which named no delay
retry-storm                one request was retried more than ``storm_retries`` times
gave-up-too-early          a retryable failure before any event (408, 409, 429, 5xx,
                           ``x-should-retry: true``; a connection dropped or stalled before any
                           event) was never retried, unless it asked to wait more than
                           ``max_retry_after``
accepted-broken-stream     a later request continued a stream that never completed (truncated,
                           dropped, stalled) via ``previous_response_id``, or sent back item ids
                           or call ids of a stream that never completed or that failed
stalled-stream-held        a stream that stalled for good was held open more than
                           ``stall_timeout`` (until the client left; or, still open, until
                           ``now``)
continued-failed-response  a request's ``previous_response_id`` names a response that failed
=========================  =====================================================================

Failures after events went out (``response.failed``, a drop, a truncation mid-stream) are not
required to be retried: the openai SDK never retries once a stream has begun, and surfacing
the error is a fair answer. What is judged is what the client does next.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from ormock.engine.journal import JournalEntry
from ormock.protocol.types import Json

__all__ = ["CODES", "Finding", "Rules", "Verdict", "assert_resilient", "judge", "rules_from"]

CODES: dict[str, str] = {
    "retried-non-retryable": "retried a status that no retry can fix",
    "ignored-retry-after": "retried sooner than the server's retry-after",
    "no-backoff": "retried at once, with no backoff",
    "retry-storm": "retried one request too many times",
    "gave-up-too-early": "did not retry a retryable failure",
    "accepted-broken-stream": "built on a stream that never completed",
    "stalled-stream-held": "never timed out a stalled stream",
    "continued-failed-response": "continued a failed response",
}
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_DROPPED = frozenset({"closed", "reset", "stalled"})
_CUT = frozenset({"truncated", "closed", "reset", "stalled"})
_IGNORED_KEYS = frozenset({"stream", "stream_options"})


@dataclass(frozen=True)
class Rules:
    """The thresholds of the verdict (seconds unless named otherwise).

    ``min_backoff``: a retry sooner than this after the failure, with no delay named by the
    server, has no backoff (the openai SDK waits at least 0.375 s). ``retry_after_slack``: the
    share of a ``retry-after`` a retry may come early by (timer and clock jitter).
    ``storm_retries``: more retries of one request than this is a storm (the openai SDK makes 2).
    ``max_retry_after``: a failure that asks for a longer wait may go unretried (the openai SDK
    gives up past 120 s). ``stall_timeout``: how long a stalled stream may be held open.
    """

    min_backoff: float = 0.05
    retry_after_slack: float = 0.1
    storm_retries: int = 5
    max_retry_after: float = 120.0
    stall_timeout: float = 30.0

    def __post_init__(self) -> None:
        for name in ("min_backoff", "retry_after_slack", "max_retry_after", "stall_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                value >= 0 and math.isfinite(value)
            ):
                raise ValueError(f"verdict rule {name} must be a number >= 0, not {value!r}")
        if isinstance(self.storm_retries, bool) or not isinstance(self.storm_retries, int) or (
            self.storm_retries < 1
        ):
            raise ValueError(f"verdict rule storm_retries must be a whole number >= 1, not "
                             f"{self.storm_retries!r}")


def rules_from(values: Mapping[str, str]) -> Rules:
    """``Rules`` from strings (query parameters, command-line options): the names of its
    fields; ``ValueError`` says what is wrong."""
    known = [f.name for f in fields(Rules)]
    out: dict[str, Any] = {}
    for name, text in values.items():
        if name not in known:
            raise ValueError(f"unknown verdict rule {name!r}; the rules are "
                             f"{', '.join(known)}")
        try:
            out[name] = int(text) if name == "storm_retries" else float(text)
        except ValueError:
            raise ValueError(f"verdict rule {name} must be a "
                             f"{'whole number' if name == 'storm_retries' else 'number'}, "
                             f"not {text!r}") from None
    return Rules(**out)


@dataclass(frozen=True)
class Finding:
    """One thing the client did wrong: ``code`` (a key of ``CODES``), ``requests`` (their
    numbers in the journal, from 1) and ``message``, a sentence saying what and what to do."""

    code: str
    requests: tuple[int, ...]
    message: str

    def __str__(self) -> str:
        return f"{self.code} ({_numbers(self.requests)}): {self.message}"

    def to_dict(self) -> Json:
        return {"code": self.code, "requests": list(self.requests), "message": self.message}


@dataclass(frozen=True)
class Verdict:
    """The findings on one journal; ``ok`` when there are none (``allowed`` ones aside)."""

    findings: tuple[Finding, ...]
    requests: int
    faults: int = 0  # requests that were served a fault
    allowed: tuple[Finding, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def codes(self) -> list[str]:
        """The codes found, each once, in order of first appearance."""
        return list(dict.fromkeys(f.code for f in self.findings))

    def __str__(self) -> str:
        served = f"{_plural(self.requests, 'request')}, {self.faults} with a fault"
        if self.ok:
            head = f"ormock verdict: the client coped well ({served})"
        else:
            head = f"ormock verdict: {_plural(len(self.findings), 'finding')} ({served})"
        lines = [head + (f"; {len(self.allowed)} allowed" if self.allowed else "")]
        lines += [f"  {finding}" for finding in self.findings]
        return "\n".join(lines)

    def to_dict(self) -> Json:
        return {"ok": self.ok, "requests": self.requests, "faults": self.faults,
                "findings": [f.to_dict() for f in self.findings],
                "allowed": [f.to_dict() for f in self.allowed], "report": str(self)}


def _numbers(numbers: Sequence[int]) -> str:
    """``#1, #2, #3, #7`` as ``#1-#3, #7``."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(f"#{r[0]}-#{r[-1]}" if len(r) > 2 else ", ".join(f"#{n}" for n in r)
                     for r in runs)


def _plural(count: int, word: str) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word[:-1] + 'ies' if word.endswith('y') else word + 's'}"


@dataclass
class _Request:
    """A journal entry, read the same way from an object or a dict."""

    number: int
    at: float
    status: int
    stream: bool
    body: Any
    key: str
    response_id: str | None
    response_status: str | None
    ended: str
    headers: dict[str, str]
    output_ids: list[str]
    finished_at: float | None
    events: list[Json]
    faults: list[str]
    error: Json | None

    @property
    def sent_events(self) -> int:
        return len(self.events)

    @property
    def failed_at(self) -> float:
        """When the client could know the failure: the answer's end, else its last event."""
        if self.finished_at is not None:
            return self.finished_at
        return self.at + self.last_offset

    @property
    def last_offset(self) -> float:
        offsets = [e.get("offset_ms") for e in self.events]
        numbers = [o for o in offsets if isinstance(o, (int, float))]
        return max(numbers) / 1000 if numbers else 0.0

    @property
    def previous_response_id(self) -> str | None:
        value = self.body.get("previous_response_id") if isinstance(self.body, dict) else None
        return value if isinstance(value, str) else None

    def retry_after(self) -> float | None:
        """Seconds the answer asked to wait: ``retry-after-ms``, else ``retry-after`` (in
        seconds; an HTTP date is not read)."""
        for name, unit in (("retry-after-ms", 1000), ("retry-after", 1)):
            try:
                seconds = float(self.headers.get(name, "")) / unit
            except ValueError:
                continue
            if math.isfinite(seconds):
                return max(seconds, 0.0)
        return None

    def failure(self) -> str | None:
        """The failure in words, or None when the answer was a usable one."""
        if self.status >= 400:
            error = self.error or {}
            code = error.get("code") or error.get("type")
            return f"HTTP {self.status}" + (f" ({code})" if code else "")
        if self.ended in _CUT:
            what = "stream" if self.stream else "JSON body"
            after = f" after {_plural(self.sent_events, 'event')}" if self.stream else ""
            return {"truncated": f"a {what} that ended early{after}",
                    "closed": f"a {what} whose connection was closed{after}",
                    "reset": f"a {what} whose connection was reset{after}",
                    "stalled": f"a {what} that stalled{after}"}[self.ended]
        if self.response_status == "failed":
            return "a stream that ended in response.failed"
        return None

    def broken(self) -> str:
        """How a stream that never completed ended, in words (for ``accepted-broken-stream``)."""
        after = f" after {_plural(self.sent_events, 'event')}"
        return {"truncated": f"ended early{after}, with no terminal event",
                "closed": f"lost its connection{after}",
                "reset": f"had its connection reset{after}",
                "stalled": f"stalled{after}"}.get(self.ended, "ended in response.failed")

    def retryable(self) -> bool:
        """A failure a client should retry: before any event, and retryable by its status."""
        should = self.headers.get("x-should-retry")
        if should == "false":
            return False
        if self.status >= 400:
            return should == "true" or self.status in _RETRYABLE_STATUS or self.status >= 500
        return self.ended in _DROPPED and self.sent_events == 0

    def non_retryable_status(self) -> bool:
        should = self.headers.get("x-should-retry")
        if should == "false":
            return self.status >= 400
        return 400 <= self.status < 500 and self.status not in _RETRYABLE_STATUS and (
            should != "true"
        )


def _key(body: Any, headers: Mapping[str, Any]) -> str:
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in _IGNORED_KEYS}
    scenario = next((v for k, v in headers.items() if str(k).lower() == "x-ormock-scenario"),
                    None)
    try:
        return json.dumps([body, scenario], sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr((body, scenario))


def _read(number: int, entry: JournalEntry | Mapping[str, Any]) -> _Request:
    data: Mapping[str, Any] = entry.to_dict() if isinstance(entry, JournalEntry) else entry
    headers = {str(k).lower(): str(v) for k, v in (data.get("reply_headers") or {}).items()}
    return _Request(
        number=number,
        at=float(data.get("at") or 0.0),
        status=int(data.get("status") or 0),
        stream=bool(data.get("stream")),
        body=data.get("body"),
        key=_key(data.get("body"), data.get("headers") or {}),
        response_id=data.get("response_id"),
        response_status=data.get("response_status"),
        ended=str(data.get("ended") or "whole"),
        headers=headers,
        output_ids=list(data.get("output_ids") or []),
        finished_at=data.get("finished_at"),
        events=list(data.get("events") or []),
        faults=list(data.get("faults") or []),
        error=data.get("error"),
    )


def _entries(source: Any) -> tuple[list[Any], float | None]:
    """The entries of a journal, an Engine, or the admin API's ``{"data": [...]}``."""
    if hasattr(source, "journal") and hasattr(source, "elapsed"):
        return list(source.journal), source.elapsed()
    if isinstance(source, Mapping):
        data = source.get("data")
        if not isinstance(data, list):
            raise ValueError("a journal is a list of entries, or {'data': [...]} as "
                             "GET /_ormock/journal answers")
        now = source.get("now")
        return data, float(now) if isinstance(now, (int, float)) else None
    return list(source), None


def judge(
    entries: Iterable[JournalEntry | Mapping[str, Any]] | Any,
    *,
    allow: Iterable[str] = (),
    now: float | None = None,
    rules: Rules | None = None,
) -> Verdict:
    """Judge the client behind a journal. ``entries``: ``JournalEntry`` objects, their dicts
    (``GET /_ormock/journal``'s ``data``, or the whole answer), or an ``Engine``. ``allow``:
    codes to leave out of ``findings`` (kept in ``allowed``). ``now``: the journal's clock at
    the verdict (seconds since the engine started; taken from an ``Engine``), to judge
    streams still stalled. ``rules``: the thresholds."""
    allowed_codes = set(allow)
    unknown = sorted(allowed_codes - set(CODES))
    if unknown:
        raise ValueError(f"unknown verdict code {unknown[0]!r}; the codes are "
                         f"{', '.join(CODES)}")
    rules = rules or Rules()
    items, found_now = _entries(entries)
    now = now if now is not None else found_now
    requests = [_read(n, e) for n, e in enumerate(items, 1)]
    findings = [*_retries(requests, rules), *_gave_up(requests, rules),
                *_built_on_broken(requests), *_stalls(requests, rules, now)]
    findings.sort(key=lambda f: (f.requests[0], list(CODES).index(f.code)))
    return Verdict(
        findings=tuple(f for f in findings if f.code not in allowed_codes),
        requests=len(requests),
        faults=sum(1 for r in requests if r.faults),
        allowed=tuple(f for f in findings if f.code in allowed_codes),
    )


def _chains(requests: Sequence[_Request]) -> list[list[_Request]]:
    """Each request with its retries: a retry follows a failed attempt of the same request."""
    chains: list[list[_Request]] = []
    last: dict[str, list[_Request]] = {}
    for request in requests:
        chain = last.get(request.key)
        if chain is not None and chain[-1].failure() is not None:
            chain.append(request)
            continue
        chain = [request]
        chains.append(chain)
        last[request.key] = chain
    return chains


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _retries(requests: Sequence[_Request], rules: Rules) -> list[Finding]:
    out: list[Finding] = []
    for chain in _chains(requests):
        if len(chain) < 2:
            continue
        first = chain[0]
        numbers = tuple(r.number for r in chain)
        repeated = [(a, b) for a, b in itertools.pairwise(chain)
                    if a.non_retryable_status()]
        if repeated:
            a, _ = repeated[0]
            said = " (the server said x-should-retry: false)" if a.headers.get(
                "x-should-retry") == "false" else ""
            out.append(Finding("retried-non-retryable", numbers, (
                f"request #{first.number} got {a.failure()}{said} and was sent again unchanged "
                f"{_plural(len(repeated), 'more time')}; the same request gets the same answer: "
                "fix the request (or report the error) instead of retrying it")))
        early, hasty = [], []
        for a, b in itertools.pairwise(chain):
            if a.non_retryable_status():
                continue  # retrying it at all is the finding
            gap = b.at - a.failed_at
            wait = a.retry_after()
            if wait is not None and wait > 0:
                if gap < wait * (1 - rules.retry_after_slack):
                    early.append((a, b, gap, wait))
            elif gap < rules.min_backoff:
                hasty.append((a, b, gap))
        if early:
            a, b, gap, wait = early[0]
            header = "retry-after-ms" if "retry-after-ms" in a.headers else "retry-after"
            more = f", and {_plural(len(early) - 1, 'more retry')} as early" if len(
                early) > 1 else ""
            out.append(Finding("ignored-retry-after", numbers, (
                f"request #{b.number} came {_seconds(max(gap, 0))} after #{a.number} failed "
                f"({a.failure()}), which asked to wait {_seconds(wait)} ({header}: "
                f"{a.headers[header]}){more}; wait at least what retry-after-ms, else "
                "retry-after, says")))
        if hasty:
            a, b, gap = hasty[0]
            more = f", and {_plural(len(hasty) - 1, 'more retry')} as fast" if len(
                hasty) > 1 else ""
            out.append(Finding("no-backoff", numbers, (
                f"request #{b.number} came {_seconds(max(gap, 0))} after #{a.number} failed "
                f"({a.failure()}){more}; wait before retrying, longer each time, with jitter "
                f"(at least {_seconds(rules.min_backoff)}; the openai SDK starts at 0.5 s)")))
        if len(chain) - 1 > rules.storm_retries:
            out.append(Finding("retry-storm", numbers, (
                f"request #{first.number} was sent {len(chain)} times in "
                f"{_seconds(chain[-1].at - first.at)}; cap retries (more than "
                f"{rules.storm_retries} is a storm; the openai SDK makes 2) and give up "
                "with a clear error")))
    return out


def _gave_up(requests: Sequence[_Request], rules: Rules) -> list[Finding]:
    out = []
    for chain in _chains(requests):
        request = chain[-1]
        if len(chain) > 1 or request.failure() is None or not request.retryable():
            continue
        wait = request.retry_after()
        if wait is not None and wait > rules.max_retry_after:
            continue
        hint = f", after the {_seconds(wait)} it asked for" if wait else ", with backoff"
        out.append(Finding("gave-up-too-early", (request.number,), (
            f"request #{request.number} got {request.failure()}, a failure worth retrying, and "
            f"was never sent again; retry it{hint} (the openai SDK retries twice by "
            "default: is max_retries 0?)")))
    return out


def _built_on_broken(requests: Sequence[_Request]) -> list[Finding]:
    out = []
    for index, broken in enumerate(requests):
        if broken.status != 200 or not broken.stream:
            continue
        cut = broken.ended in _CUT
        failed = broken.response_status == "failed" and not cut
        if not (cut or failed):
            continue
        ids = set(broken.output_ids)
        for later in requests[index + 1:]:
            continues = broken.response_id is not None and (
                later.previous_response_id == broken.response_id)
            if continues and failed:
                out.append(Finding("continued-failed-response", (broken.number, later.number), (
                    f"request #{later.number} continues {broken.response_id} "
                    f"(previous_response_id), which failed (request #{broken.number}: "
                    f"response.failed); retry the turn from the last good response instead")))
                continue
            carried = sorted(ids & _input_ids(later.body))
            if continues or carried:
                how = (f"continues the response of request #{broken.number} "
                       "(previous_response_id)" if continues else
                       f"sends back {', '.join(carried[:3])}"
                       + (f" and {len(carried) - 3} more" if len(carried) > 3 else "")
                       + f" from the stream of request #{broken.number}")
                out.append(Finding("accepted-broken-stream", (broken.number, later.number), (
                    f"request #{later.number} {how}, but that stream {broken.broken()}: it "
                    "never completed; treat a stream without response.completed as failed, "
                    "and retry the turn")))
    return out


def _input_ids(body: Any) -> set[str]:
    """The ids and call ids of the items a request sends."""
    items = body.get("input") if isinstance(body, dict) else None
    out: set[str] = set()
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            out.update(v for k in ("id", "call_id") if isinstance(v := item.get(k), str))
    return out


def _stalls(requests: Sequence[_Request], rules: Rules, now: float | None) -> list[Finding]:
    out = []
    for request in requests:
        if request.ended != "stalled":
            continue
        start = request.at + (request.last_offset if request.stream else 0.0)
        end = request.finished_at if request.finished_at is not None else now
        if end is None or end - start <= rules.stall_timeout:
            continue
        after = f" after {_plural(request.sent_events, 'event')}" if request.stream else ""
        held = (f"held it open {_seconds(end - start)} before leaving"
                if request.finished_at is not None
                else f"was still waiting {_seconds(end - start)} later")
        out.append(Finding("stalled-stream-held", (request.number,), (
            f"request #{request.number}'s {'stream' if request.stream else 'answer'} stalled"
            f"{after} and the client {held}; set a read timeout (more than "
            f"{_seconds(rules.stall_timeout)} of silence is a stall), then retry")))
    return out


def assert_resilient(
    entries: Iterable[JournalEntry | Mapping[str, Any]] | Any,
    *,
    allow: Iterable[str] = (),
    now: float | None = None,
    rules: Rules | None = None,
) -> Verdict:
    """Judge the journal (see ``judge``) and raise ``AssertionError`` listing every finding
    not in ``allow``, each with the way to allow it; returns the verdict when clean."""
    __tracebackhide__ = True
    allowed = tuple(allow)
    verdict = judge(entries, allow=allowed, now=now, rules=rules)
    if verdict.ok:
        return verdict
    codes = verdict.codes
    lines = [str(verdict), "",
             "If the client is meant to behave so, allow these findings: "
             f"assert_resilient(..., allow={tuple([*allowed, *codes])!r})"]
    raise AssertionError("\n".join(lines))
