"""The resilience verdict: how a client coped with the faults it was served, from the journal.

``judge(entries)`` reads a journal (``JournalEntry`` objects, their ``to_dict()`` form as the
admin API serves it, or an ``Engine``) and returns a ``Verdict``: a list of ``Finding``s, each
with a code, the requests it concerns (numbered from 1, as ``#1``) and a sentence saying what
the client did and what to do instead. ``assert_resilient(entries, allow=(...))`` raises an
``AssertionError`` listing the findings not allowed.

Two requests are *the same request* (two attempts of it) when their JSON bodies are equal once
``stream``, ``stream_options`` and the fields a client changes per attempt are left out
(``Rules.per_attempt``: ``client_metadata`` and ``prompt_cache_key`` by default; a client that
retries a failed stream without streaming, or with a new timestamp in its metadata, is still
retrying): the same input, tools, previous response, model and settings; and they name the same
``X-Ormock-Scenario`` (other headers do not count). Over HTTP and WebSocket alike.
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
                           ``max_retry_after`` or was a warm-up (``generate: false``)
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

from collections.abc import Iterable, Mapping
from typing import Any

from ormock.engine.journal import JournalEntry
from ormock.engine.verdict.findings import find_all
from ormock.engine.verdict.model import CODES, PER_ATTEMPT, Finding, Rules, Verdict, rules_from
from ormock.engine.verdict.reading import read_all

__all__ = ["CODES", "PER_ATTEMPT", "Finding", "Rules", "Verdict", "assert_resilient", "judge",
           "resilient", "rules_from"]


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
    requests = read_all(items, rules.per_attempt)
    findings = find_all(requests, rules, now)
    findings.sort(key=lambda f: (f.requests[0], list(CODES).index(f.code)))
    return Verdict(
        findings=tuple(f for f in findings if f.code not in allowed_codes),
        requests=len(requests),
        faults=sum(1 for r in requests if r.faults),
        allowed=tuple(f for f in findings if f.code in allowed_codes),
    )


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
    return resilient(judge(entries, allow=allowed, now=now, rules=rules), allowed)


def resilient(verdict: Verdict, allowed: tuple[str, ...] = ()) -> Verdict:
    """The verdict when it is clean; else ``AssertionError`` listing every finding, with the
    ``allow=(...)`` that would accept them (``allowed``: the codes allowed already)."""
    __tracebackhide__ = True
    if verdict.ok:
        return verdict
    codes = verdict.codes
    lines = [str(verdict), "",
             "If the client is meant to behave so, allow these findings: "
             f"assert_resilient(..., allow={tuple([*allowed, *codes])!r})"]
    raise AssertionError("\n".join(lines))
