"""The findings: each rule reads the requests in order and says what the client did wrong."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ormock.engine.verdict.model import Finding, Rules, plural, seconds
from ormock.engine.verdict.reading import CUT, Request

__all__ = ["find_all"]


def find_all(requests: Sequence[Request], rules: Rules, now: float | None) -> list[Finding]:
    """Every finding, in no particular order."""
    return [*_retries(requests, rules), *_gave_up(requests, rules),
            *_built_on_broken(requests), *_stalls(requests, rules, now)]


def _chains(requests: Sequence[Request]) -> list[list[Request]]:
    """Each request with its retries: a retry follows a failed attempt of the same request."""
    chains: list[list[Request]] = []
    last: dict[str, list[Request]] = {}
    for request in requests:
        chain = last.get(request.key)
        if chain is not None and chain[-1].failure() is not None:
            chain.append(request)
            continue
        chain = [request]
        chains.append(chain)
        last[request.key] = chain
    return chains


def _retries(requests: Sequence[Request], rules: Rules) -> list[Finding]:
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
                f"{plural(len(repeated), 'more time')}; the same request gets the same answer: "
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
            more = f", and {plural(len(early) - 1, 'more retry')} as early" if len(
                early) > 1 else ""
            out.append(Finding("ignored-retry-after", numbers, (
                f"request #{b.number} came {seconds(max(gap, 0))} after #{a.number} failed "
                f"({a.failure()}), which asked to wait {seconds(wait)} ({header}: "
                f"{a.headers[header]}){more}; wait at least what retry-after-ms, else "
                "retry-after, says")))
        if hasty:
            a, b, gap = hasty[0]
            more = f", and {plural(len(hasty) - 1, 'more retry')} as fast" if len(
                hasty) > 1 else ""
            out.append(Finding("no-backoff", numbers, (
                f"request #{b.number} came {seconds(max(gap, 0))} after #{a.number} failed "
                f"({a.failure()}){more}; wait before retrying, longer each time, with jitter "
                f"(at least {seconds(rules.min_backoff)}; the openai SDK starts at 0.5 s)")))
        if len(chain) - 1 > rules.storm_retries:
            out.append(Finding("retry-storm", numbers, (
                f"request #{first.number} was sent {len(chain)} times in "
                f"{seconds(chain[-1].at - first.at)}; cap retries (more than "
                f"{rules.storm_retries} is a storm; the openai SDK makes 2) and give up "
                "with a clear error")))
    return out


def _gave_up(requests: Sequence[Request], rules: Rules) -> list[Finding]:
    out = []
    for chain in _chains(requests):
        request = chain[-1]
        if len(chain) > 1 or request.failure() is None or not request.retryable() or (
                request.warm_up):
            continue
        wait = request.retry_after()
        if wait is not None and wait > rules.max_retry_after:
            continue
        hint = f", after the {seconds(wait)} it asked for" if wait else ", with backoff"
        out.append(Finding("gave-up-too-early", (request.number,), (
            f"request #{request.number} got {request.failure()}, a failure worth retrying, and "
            f"was never sent again; retry it{hint} (the openai SDK retries twice by "
            "default: is max_retries 0?)")))
    return out


def _built_on_broken(requests: Sequence[Request]) -> list[Finding]:
    out = []
    for index, broken in enumerate(requests):
        if broken.status != 200 or not broken.stream:
            continue
        cut = broken.ended in CUT
        failed = broken.response_status == "failed" and not cut
        if not (cut or failed):
            continue
        ids = set(broken.output_ids)
        for later in requests[index + 1:]:
            # an id a later whole answer sent again is that answer's from then on (a retry
            # of the broken turn may give the same call ids)
            carried = sorted(ids & _input_ids(later.body))
            if later.delivered():
                ids -= set(later.output_ids)
            continues = broken.response_id is not None and (
                later.previous_response_id == broken.response_id)
            if continues and failed:
                out.append(Finding("continued-failed-response", (broken.number, later.number), (
                    f"request #{later.number} continues {broken.response_id} "
                    f"(previous_response_id), which failed (request #{broken.number}: "
                    f"response.failed); retry the turn from the last good response instead")))
                continue
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


def _stalls(requests: Sequence[Request], rules: Rules, now: float | None) -> list[Finding]:
    out = []
    for request in requests:
        if request.ended != "stalled":
            continue
        start = request.at + (request.last_offset if request.stream else 0.0)
        end = request.finished_at if request.finished_at is not None else now
        if end is None or end - start <= rules.stall_timeout:
            continue
        after = f" after {plural(request.sent_events, 'event')}" if request.stream else ""
        held = (f"held it open {seconds(end - start)} before leaving"
                if request.finished_at is not None
                else f"was still waiting {seconds(end - start)} later")
        out.append(Finding("stalled-stream-held", (request.number,), (
            f"request #{request.number}'s {'stream' if request.stream else 'answer'} stalled"
            f"{after} and the client {held}; set a read timeout (more than "
            f"{seconds(rules.stall_timeout)} of silence is a stall), then retry")))
    return out
