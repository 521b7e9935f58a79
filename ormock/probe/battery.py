"""The battery: the ``Probe`` declaration, an ``Exchange`` (one probe's request and what came
back) and the ``Context`` a probe builds on, and ``BATTERY`` itself, in the order it is sent."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from ormock.cassette.model import Ended
from ormock.probe.checks import (
    Finding,
    answers_text,
    calls_a_tool,
    calls_the_forced_tool,
    completed,
    cut_by_max_output_tokens,
    echoes_previous,
    function_calls,
)
from ormock.protocol.types import Json

__all__ = ["BATTERY", "CLOCK", "MAX_TOKENS", "WEATHER", "Build", "Check", "Context",
           "Exchange", "Probe", "Skip"]

MAX_TOKENS = 16  # the least OpenAI accepts, and far less than the story the probe asks for


class Skip(Exception):
    """A probe cannot be built: what it builds on did not come (the reason says what)."""


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
    data: bytes = field(default=b"", repr=False)  # the body's bytes, as they came

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


def _round_trip(context: Context) -> Json:
    response = context.response_of("tool-call")
    calls = function_calls(response)
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

