"""What an exchange is judged by: findings and their severities, the checks every exchange gets
(a stream by the checker, a JSON body as a Response, an error answer by the envelope, the status
class), and each probe's own checks of what its request asked for."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ormock.protocol.checker import check_stream
from ormock.protocol.errors import ERROR_STATUS
from ormock.protocol.schema import validate_error, validate_response
from ormock.protocol.types import Json

if TYPE_CHECKING:
    from ormock.probe.battery import Context, Exchange

__all__ = ["Finding", "Severity", "answers_text", "calls_a_tool", "calls_the_forced_tool",
           "check_error", "check_response_object", "completed", "cut_by_max_output_tokens",
           "echoes_previous", "function_calls", "judge", "must", "should"]

Severity = Literal["MUST", "SHOULD"]
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


# -- each probe's own checks -------------------------------------------------------------------

def function_calls(response: Json | None) -> list[Json]:
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
    calls = function_calls(exchange.response)
    if not calls:
        yield should("tool-call", "the model answered without calling the offered tool "
                     "(tool_choice auto: its choice, but the round trip cannot be probed)")
    for call in calls:
        yield from _call_shape(call, _offered(exchange))


def calls_the_forced_tool(exchange: Exchange, context: Context) -> Iterable[Finding]:
    choice = (exchange.request or {}).get("tool_choice") or {}
    wanted = choice.get("name") if isinstance(choice, dict) else None
    calls = function_calls(exchange.response)
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


def judge(exchange: Exchange, data: bytes, context: Context) -> None:
    """Judge the answer ``data`` to ``exchange``: fill in its findings, its event count, the
    parsed body and the Response it came to; the probe's own checks run on a 2xx only."""
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

