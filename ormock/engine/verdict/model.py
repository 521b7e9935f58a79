"""The verdict's data: the rules' thresholds, a finding, the verdict and its report."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from ormock.protocol.types import Json

__all__ = ["CODES", "PER_ATTEMPT", "Finding", "Rules", "Verdict", "numbers", "plural", "rules_from",
           "seconds"]

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


# fields a client changes between attempts of one request: Codex's client_metadata carries the
# time each attempt started (x-codex-ws-stream-request-start-ms); a cache key may be fresh
PER_ATTEMPT = ("client_metadata", "prompt_cache_key")


@dataclass(frozen=True)
class Rules:
    """The thresholds of the verdict (seconds unless named otherwise).

    ``min_backoff``: a retry sooner than this after the failure, with no delay named by the
    server, has no backoff (the openai SDK waits at least 0.375 s). ``retry_after_slack``: the
    share of a ``retry-after`` a retry may come early by (timer and clock jitter).
    ``storm_retries``: more retries of one request than this is a storm (the openai SDK makes 2).
    ``max_retry_after``: a failure that asks for a longer wait may go unretried (the openai SDK
    gives up past 120 s). ``stall_timeout``: how long a stalled stream may be held open.
    ``per_attempt``: the top-level body fields a client may change from one attempt of a
    request to the next (a timestamp in ``client_metadata``, a fresh ``prompt_cache_key``):
    left out when telling whether two requests are the same attempt.
    """

    min_backoff: float = 0.05
    retry_after_slack: float = 0.1
    storm_retries: int = 5
    max_retry_after: float = 120.0
    stall_timeout: float = 30.0
    per_attempt: tuple[str, ...] = PER_ATTEMPT

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
        if not isinstance(self.per_attempt, tuple) or not all(
                isinstance(name, str) and name for name in self.per_attempt):
            raise ValueError(f"verdict rule per_attempt must be a tuple of field names, not "
                             f"{self.per_attempt!r}")


def rules_from(values: Mapping[str, str]) -> Rules:
    """``Rules`` from strings (query parameters, command-line options): the names of its
    fields; ``ValueError`` says what is wrong."""
    known = [f.name for f in fields(Rules)]
    out: dict[str, Any] = {}
    for name, text in values.items():
        if name not in known:
            raise ValueError(f"unknown verdict rule {name!r}; the rules are "
                             f"{', '.join(known)}")
        if name == "per_attempt":  # field names, comma-separated (none: empty)
            out[name] = tuple(part.strip() for part in text.split(",") if part.strip())
            continue
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
        return f"{self.code} ({numbers(self.requests)}): {self.message}"

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
        served = f"{plural(self.requests, 'request')}, {self.faults} with a fault"
        if self.ok:
            head = f"ormock verdict: the client coped well ({served})"
        else:
            head = f"ormock verdict: {plural(len(self.findings), 'finding')} ({served})"
        lines = [head + (f"; {len(self.allowed)} allowed" if self.allowed else "")]
        lines += [f"  {finding}" for finding in self.findings]
        return "\n".join(lines)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        """The verdict again from its ``to_dict`` (``GET /_ormock/verdict``'s answer)."""
        def found(rows: Any) -> tuple[Finding, ...]:
            return tuple(Finding(str(r["code"]), tuple(int(n) for n in r["requests"]),
                                 str(r["message"])) for r in rows)

        return cls(findings=found(data.get("findings", ())), requests=int(data["requests"]),
                   faults=int(data.get("faults", 0)), allowed=found(data.get("allowed", ())))

    def to_dict(self) -> Json:
        return {"ok": self.ok, "requests": self.requests, "faults": self.faults,
                "findings": [f.to_dict() for f in self.findings],
                "allowed": [f.to_dict() for f in self.allowed], "report": str(self)}


def numbers(numbers: Sequence[int]) -> str:
    """``#1, #2, #3, #7`` as ``#1-#3, #7``."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(f"#{r[0]}-#{r[-1]}" if len(r) > 2 else ", ".join(f"#{n}" for n in r)
                     for r in runs)


def plural(count: int, word: str) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word[:-1] + 'ies' if word.endswith('y') else word + 's'}"


def seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"
