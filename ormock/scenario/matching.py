"""The matching language: named checks over a request, each saying why it did not match.

A step's ``match`` mapping reads like the request it matches::

    match:
      model: gpt-4o*               # exact, or a glob
      input_contains: weather      # the request's input text (one string, or all of a list)
      tools: [get_weather]         # these function (or custom) tools are offered
      function_call_output: true   # tool outputs came back (or a list of their call ids):
                                   # function_call_output, custom_tool_call_output and the
                                   # other client tools' outputs (protocol/openai_items.py)
      previous_response_id: step:1 # continues the response step 1 produced

Each check returns None when it passes and a one-line reason when it does not, so a miss can be
explained. Plugins add checks with ``register_check``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ormock.protocol.hints import short
from ormock.protocol.secrets import shown_value

__all__ = ["CHECKS", "Check", "RequestView", "compile_check", "register_check"]


@dataclass
class RequestView:
    """What the checks look at in a request."""

    model: str
    input_text: str
    instructions: str = ""
    tools: list[str] = field(default_factory=list)
    tool_choice: Any = "auto"
    call_outputs: list[str] = field(default_factory=list)
    previous_response_id: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names
    metadata: Mapping[str, str] = field(default_factory=dict)
    stream: bool = False


StepResponses = Callable[[int], "str | None"]
CheckFn = Callable[[RequestView, Any, StepResponses], "str | None"]
Prepare = Callable[[Any], Any]

CHECKS: dict[str, tuple[Prepare, CheckFn]] = {}


def register_check(name: str, prepare: Prepare | None = None) -> Callable[[CheckFn], CheckFn]:
    """Register a check under its YAML key; ``prepare`` compiles the expected value at load."""

    def add(fn: CheckFn) -> CheckFn:
        CHECKS[name] = (prepare or (lambda value: value), fn)  # the schema follows CHECKS
        return fn

    return add


@dataclass(frozen=True)
class Check:
    key: str
    expected: Any
    prepared: Any

    def test(self, view: RequestView, responses: StepResponses) -> str | None:
        return CHECKS[self.key][1](view, self.prepared, responses)


def compile_check(key: str, value: Any) -> Check:
    """Compile one ``match`` entry; ``ValueError`` says what is wrong with it."""
    if key not in CHECKS:
        raise KeyError(key)
    return Check(key, value, CHECKS[key][0](value))


def _regex(value: Any) -> re.Pattern[str]:
    try:
        return re.compile(str(value))
    except re.error as error:
        raise ValueError(f"not a valid regular expression: {error}") from None


def _strings(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value]


@register_check("model")
def _model(view: RequestView, pattern: str, _: StepResponses) -> str | None:
    if fnmatch.fnmatchcase(view.model, pattern):
        return None
    return f"model {view.model!r} does not match {pattern!r}"


@register_check("model_regex", _regex)
def _model_regex(view: RequestView, pattern: re.Pattern[str], _: StepResponses) -> str | None:
    if pattern.search(view.model):
        return None
    return f"model {view.model!r} does not match /{pattern.pattern}/"


@register_check("input")
def _input(view: RequestView, text: str, _: StepResponses) -> str | None:
    if view.input_text.strip() == text.strip():
        return None
    return f"input {short(view.input_text)} is not {short(text)}"


@register_check("input_contains", _strings)
def _input_contains(view: RequestView, words: list[str], _: StepResponses) -> str | None:
    missing = [w for w in words if w not in view.input_text]
    if not missing:
        return None
    return f"input {short(view.input_text)} does not contain {missing[0]!r}"


@register_check("input_regex", _regex)
def _input_regex(view: RequestView, pattern: re.Pattern[str], _: StepResponses) -> str | None:
    if pattern.search(view.input_text):
        return None
    return f"input {short(view.input_text)} does not match /{pattern.pattern}/"


@register_check("instructions_contains", _strings)
def _instructions(view: RequestView, words: list[str], _: StepResponses) -> str | None:
    missing = [w for w in words if w not in view.instructions]
    if not missing:
        return None
    return f"instructions {short(view.instructions)} do not contain {missing[0]!r}"


@register_check("tools", _strings)
def _tools(view: RequestView, names: list[str], _: StepResponses) -> str | None:
    if not names and view.tools:
        return f"tools {view.tools} were offered; the step wants none"
    missing = [n for n in names if n not in view.tools]
    if not missing:
        return None
    return f"tool {missing[0]!r} is not offered (offered: {', '.join(view.tools) or 'none'})"


@register_check("tool_choice")
def _tool_choice(view: RequestView, wanted: Any, _: StepResponses) -> str | None:
    if view.tool_choice == wanted:
        return None
    return f"tool_choice is {view.tool_choice!r}, not {wanted!r}"


def _outputs(value: Any) -> Any:
    return value if isinstance(value, bool) else _strings(value)


@register_check("function_call_output", _outputs)
def _function_call_output(view: RequestView, wanted: Any, _: StepResponses) -> str | None:
    if wanted is True:
        return None if view.call_outputs else "the input has no function_call_output"
    if wanted is False:
        if not view.call_outputs:
            return None
        return f"the input has function_call_output for {', '.join(view.call_outputs)}"
    missing = [c for c in wanted if c not in view.call_outputs]
    if not missing:
        return None
    return f"no function_call_output for call_id {missing[0]!r}"


_STEP = re.compile(r"^step:([1-9][0-9]*)$")


def _previous(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    match = _STEP.match(str(value))
    return int(match.group(1)) if match else str(value)


@register_check("previous_response_id", _previous)
def _previous_response_id(view: RequestView, wanted: Any, responses: StepResponses) -> str | None:
    got = view.previous_response_id
    if wanted is True:
        return None if got else "the request has no previous_response_id"
    if wanted is False:
        return None if not got else f"the request continues {got!r}"
    if isinstance(wanted, int):
        produced = responses(wanted)
        if produced is None:
            return f"step {wanted} has not answered yet, so nothing can continue it"
        if got == produced:
            return None
        return f"previous_response_id {got!r} is not step {wanted}'s response {produced!r}"
    return None if got == wanted else f"previous_response_id {got!r} is not {wanted!r}"


@register_check("headers")
def _headers(view: RequestView, wanted: Mapping[str, str], _: StepResponses) -> str | None:
    for name, pattern in wanted.items():
        value = view.headers.get(name.lower())
        if value is None:
            return f"header {name!r} is missing"
        if not fnmatch.fnmatchcase(value, pattern):
            return f"header {name!r} is {shown_value(name, value)}, not {pattern!r}"
    return None


@register_check("metadata")
def _metadata(view: RequestView, wanted: Mapping[str, str], _: StepResponses) -> str | None:
    for key, value in wanted.items():
        if view.metadata.get(key) != value:
            return f"metadata {key!r} is {view.metadata.get(key)!r}, not {value!r}"
    return None


@register_check("stream")
def _stream(view: RequestView, wanted: bool, _: StepResponses) -> str | None:
    if view.stream == wanted:
        return None
    return "the request streams" if view.stream else "the request does not stream"
