"""Reading a ``POST /v1/responses`` body: checked field by field, normalised, echo prepared.

Requests are looser than responses: ``input`` may be a string, message items may lack ``type``,
content may be a string (the items are checked in ``ormock.protocol.input_items``, one field's
type and range in ``ormock.protocol.fields``). Every fault is an ``OpenResponsesError`` whose
``param`` names the field and whose message says what to change.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ormock.protocol.errors import invalid
from ormock.protocol.fields import (
    MAX_INPUT_TEXT,
    bounded_string,
    choice,
    expect,
    includes,
    metadata,
    number,
    reasoning_param,
    stream_options,
    text_param,
    type_name,
)
from ormock.protocol.input_items import (
    item_text,
    item_tokens,
    messages_text,
    parse_input,
    parse_items,
)
from ormock.protocol.openai_request import beyond_spec
from ormock.protocol.request_tools import (
    ToolDemand,
    additional_tools,
    check_tool_choice,
    check_tools,
    demand_of,
    echo_tool,
)
from ormock.protocol.sse import encode_json, encode_str
from ormock.protocol.tokens import count_tokens
from ormock.protocol.types import Json

__all__ = ["EXTENSION_PREFIX", "ResponseRequest", "content_seed", "inherit_extensions",
           "item_text", "item_tokens", "messages_text", "parse_items", "parse_request"]


# A project's own request fields (``x_interactive_media``): inherited along a chain, echoed.
EXTENSION_PREFIX = "x_"


def content_seed(seed: int, body: Json) -> int:
    """The seed for a request's content: the same request gets the same content."""
    return _seed_of(seed, _canonical(body))


# ``json.dumps(value, sort_keys=True, default=str)``'s encoder, made once (``dumps`` with an
# option makes one per call); no markers of circular references: a body that contains itself
# is a RecursionError, as in ``encode_json``.
_sorted_text = json.JSONEncoder(sort_keys=True, default=str, check_circular=False).encode
_UNSTABLE = frozenset(("stream", "stream_options", "background"))


def _canonical(body: Json) -> str:
    """The part of a body its content depends on, as one canonical JSON text: the text of
    ``json.dumps(stable, sort_keys=True, default=str)`` (tests/test_request.py holds them
    equal)."""
    if _UNSTABLE.isdisjoint(body):
        stable = body
    else:
        stable = {k: v for k, v in body.items() if k not in ("stream", "stream_options")
                  and not (k == "background" and v is True)}  # in the background: the same
    return _sorted_text(stable)


def _seed_of(seed: int, canonical: str) -> int:
    digest = hashlib.sha256(f"{seed}:{canonical}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


T = TypeVar("T")


class _once(Generic[T]):  # lower case: a decorator, as ``cached_property`` is
    """``functools.cached_property`` without its lock (Python 3.11's takes one on every first
    read, and 3.12 dropped it): the value made on the first read is kept in the instance's
    ``__dict__``, where later reads find it first. Two threads racing on a first read both
    compute the same value."""

    def __init__(self, make: Callable[[Any], T]) -> None:
        self.make, self.name = make, make.__name__
        self.__doc__ = make.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> T:
        if instance is None:  # read on the class (help, docs): the descriptor itself
            return self  # type: ignore[return-value]
        value = instance.__dict__[self.name] = self.make(instance)
        return value


@dataclass
class ResponseRequest:
    """A checked request. ``echo`` holds what the Response object repeats back."""

    body: Json
    model: str | None
    input: list[Json]
    stream: bool
    previous_response_id: str | None
    tools: list[Json] = field(default_factory=list)
    echo: Json = field(default_factory=dict)
    extensions: Json = field(default_factory=dict)  # its own top-level ``x_`` fields, as sent
    _seeds: dict[int, int] = field(default_factory=dict, repr=False, compare=False)
    _text: str | None = field(default=None, repr=False, compare=False)  # its canonical body

    def content_seed(self, seed: int) -> int:
        """The seed of this request's content under a server seed (``content_seed``), computed
        once."""
        seeds = self._seeds
        value = seeds.get(seed)
        if value is None:
            value = seeds[seed] = _seed_of(seed, self._canonical_text())
        return value

    def content_key(self) -> int:
        """This request's content as a key of a cache of this process: the hash of the
        canonical body ``content_seed`` digests (made once), equal for two requests whose
        canonical bodies are (and, but for a 64-bit hash's collisions, as the seed's, only
        then), without the digest a reply that draws nothing from its seed need not make."""
        return hash(self._canonical_text())

    def _canonical_text(self) -> str:
        """Its canonical body (``_canonical``), made once whatever is asked of it."""
        text = self._text
        if text is None:
            text = self._text = _canonical(self.body)
        return text

    @_once
    def input_tokens(self) -> int:
        """The tokens of this request's own ``input`` items (not a parent's), counted once: a
        request the server has read before is the same object."""
        total = 0
        for item in self.input:  # a loop: no generator made, for the one item most send
            total += item_tokens(item)
        return total

    @_once
    def new_input_text(self) -> str:
        """The text of the messages this request adds (``messages_text`` of its ``input``; not
        the history a ``previous_response_id`` brings in)."""
        return messages_text(self.input)

    @_once
    def input_json(self) -> str:
        """Its own ``input`` as ``encode_json`` writes it (a stored response's header holds
        it), made once. A text input is ``parse_request``'s one message: only its text is
        encoded, the rest is that message's fixed text (tests/test_request.py holds it)."""
        given = self.body.get("input")
        if given.__class__ is str:
            return f'[{{"type":"message","role":"user","content":{encode_str(given)}}}]'
        return encode_json(self.input)

    @_once
    def prompt_tokens(self) -> int:
        """The tokens of its ``instructions`` and function tools, which a reply's input tokens
        count beside the context's, counted once."""
        instructions = self.echo.get("instructions")
        total = count_tokens(instructions) if instructions else 0
        for tool in self.function_tools:
            total += count_tokens(encode_json(tool))
        return total

    @_once
    def sends_reasoning(self) -> bool:
        """Its ``input`` holds a reasoning item (restored from its encrypted content:
        ``ormock.engine.context.restored``)."""
        return any(item.get("type") == "reasoning" for item in self.input)

    @_once
    def function_tools(self) -> list[Json]:
        """Its function tools (made once: the engine reads them twice a request)."""
        return _function_tools(self.tools)

    @property
    def tool_choice(self) -> Any:
        return self.echo.get("tool_choice", "auto")

    @_once
    def offered_tools(self) -> list[Json]:
        """Every tool offered: ``tools``, then those of its ``additional_tools`` input
        items."""
        extra = additional_tools(self.input) if self.input else []
        return [*self.tools, *extra] if extra else self.tools

    @_once
    def beyond_spec(self) -> list[str]:
        """The params of what it holds beyond the Open Responses spec in OpenAI's vocabulary
        (``input[i]``, ``tools[i]``, ``tool_choice``): what a profile takes or refuses
        (``ormock.protocol.openai_request``)."""
        return beyond_spec(self)

    @_once
    def tool_demand(self) -> ToolDemand:
        """What its ``tool_choice`` asks of the answer (``ToolDemand``: must it call a tool,
        which it may call, the one forced)."""
        return demand_of(self.tool_choice, self.offered_tools)


def parse_request(body: Any, *, require_model: bool = True) -> ResponseRequest:
    """Check a request body and normalise it; raise ``OpenResponsesError`` on the first fault.
    ``require_model=False``: a body may name neither ``model`` nor ``previous_response_id``
    (``POST /v1/responses/input_tokens``)."""
    if not isinstance(body, dict):
        raise invalid(
            f"The request body must be a JSON object, not {type_name(body)}.", None,
            "invalid_json",
        )
    # each check's usual case inline (an exact ``str``, an absent field), the check itself
    # for anything else: the same faults, in the same order (tests/test_request.py holds the
    # results equal to the field-by-field checks)
    get = body.get
    model = get("model")
    previous = get("previous_response_id")
    if previous is not None and previous.__class__ is not str:
        expect(previous, str, "previous_response_id", "a response id string")
    if model is None and previous is None and require_model:
        raise invalid("'model' is required: name the model to answer, e.g. \"gpt-4o-mini\".",
                      "model", "missing_required_parameter")
    if model is not None:
        if model.__class__ is not str:
            expect(model, str, "model", "a string")
        if not model:
            raise invalid("'model' must not be empty.", "model")
    tools = get("tools")
    tools = [] if tools is None else check_tools(tools)
    echo: Json = {"tools": [echo_tool(t) for t in tools] if tools else []}
    if model is not None:
        echo["model"] = model
    echo["previous_response_id"] = previous
    tool_choice = get("tool_choice")
    echo["tool_choice"] = "auto" if tool_choice is None else check_tool_choice(
        tool_choice, tools, get("input"))
    instructions = get("instructions")
    if instructions is not None:
        if instructions.__class__ is not str:
            expect(instructions, str, "instructions", "a string")
        echo["instructions"] = instructions
    parallel, store, background, stream = (get("parallel_tool_calls"), get("store"),
                                           get("background"), get("stream"))
    if ((parallel is not None and parallel.__class__ is not bool)
            or (store is not None and store.__class__ is not bool)
            or (background is not None and background.__class__ is not bool)
            or (stream is not None and stream.__class__ is not bool)):
        _flags(body)  # the first that is not true or false, in this order, is the fault
    if parallel is not None:
        echo["parallel_tool_calls"] = parallel
    if store is not None:
        echo["store"] = store
    if background:
        echo["background"] = True
        if store is False:
            raise invalid("Background mode keeps the response: send 'store': true or leave "
                          "it out with 'background': true.", "store", "invalid_value")
    extensions: Json = {}
    if not body.keys() <= _PLAIN:  # most bodies: neither an optional field nor an extension
        if not _OPTIONAL.isdisjoint(body):  # each check below passes a field that is absent
            _optional_fields(body, echo)
        for key in body:  # a loop, not a comprehension: most bodies have none
            if key.startswith(EXTENSION_PREFIX):
                extensions[key] = body[key]
    given = get("input")  # a string: ``parse_input``'s one user message, made here
    if isinstance(given, str) and len(given) > MAX_INPUT_TEXT:
        bounded_string(given, "input", MAX_INPUT_TEXT)
    items = ([{"type": "message", "role": "user", "content": given}]
             if given.__class__ is str else parse_input(given))
    # ``ResponseRequest(body, model, items, bool(stream), previous, tools, echo,
    # extensions)``, made without the dataclass's ``__init__`` as every create makes one: its
    # fields set, ``_text`` read from the class's default (tests/test_request.py holds the
    # two equal)
    request: ResponseRequest = _new(ResponseRequest)
    request.body, request.model, request.input, request.stream = body, model, items, bool(stream)
    request.previous_response_id, request.tools, request.echo = previous, tools, echo
    request.extensions, request._seeds = extensions, {}
    # values ``_once`` makes on a first read, made here because every answer reads them: the
    # function tools, with neither tools nor instructions no prompt tokens, and a text input's
    # tokens (``input_tokens`` of its one message) and no reasoning item
    made = request.__dict__
    made["function_tools"] = _function_tools(tools)
    if not tools and not instructions:
        made["prompt_tokens"] = 0
    if given.__class__ is str:
        made["input_tokens"] = count_tokens(given)
        made["sends_reasoning"] = False
        # a text input is one message: it offers no tools of its own, and with no tools and no
        # ``tool_choice`` nothing the request holds is beyond the spec
        made["offered_tools"] = tools
        if not tools and tool_choice is None:
            made["beyond_spec"] = []
    return request


_new = object.__new__


def _function_tools(tools: list[Json]) -> list[Json]:
    """The function tools among ``tools`` (``ResponseRequest.function_tools``)."""
    return [t for t in tools if t.get("type") == "function"] if tools else []


def _flags(body: Json) -> None:
    for name in ("parallel_tool_calls", "store", "background", "stream"):
        if body.get(name) is not None:
            expect(body[name], bool, name, "true or false")


# the fields ``_optional_fields`` checks (most requests send none of them)
_OPTIONAL = frozenset((
    "temperature", "top_p", "presence_penalty", "frequency_penalty", "top_logprobs",
    "max_output_tokens", "max_tool_calls", "truncation", "service_tier", "safety_identifier",
    "prompt_cache_key", "metadata", "text", "reasoning", "include", "generate", "stream_options",
))
# fields ``parse_request`` reads itself, or leaves to others (``conversation``, ``user``): a
# body of only these sends no optional field (none is in ``_OPTIONAL``) and no extension (none
# starts with ``EXTENSION_PREFIX``)
_PLAIN = frozenset((
    "model", "input", "stream", "tools", "tool_choice", "instructions", "previous_response_id",
    "parallel_tool_calls", "store", "background", "conversation", "user", "prompt",
))


def _optional_fields(body: Json, echo: Json) -> None:
    """Check the sampling, limit and output fields a body sent, and echo them."""
    for name, low, high in (("temperature", 0, 2), ("top_p", 0, 1),
                            ("presence_penalty", -2, 2), ("frequency_penalty", -2, 2)):
        value = number(body, name, low, high)
        if value is not None:
            echo[name] = float(value)
    value = number(body, "top_logprobs", 0, 20, integer=True)
    if value is not None:
        echo["top_logprobs"] = value
    value = body.get("max_output_tokens")
    if value is not None:
        expect(value, int, "max_output_tokens", "an integer")
        if value < 16:
            raise invalid(f"'max_output_tokens' must be at least 16; got {value}.",
                          "max_output_tokens", "integer_below_min_value")
        echo["max_output_tokens"] = value
    value = body.get("max_tool_calls")
    if value is not None:
        expect(value, int, "max_tool_calls", "an integer")
        if value < 1:
            raise invalid(f"'max_tool_calls' must be at least 1; got {value}.", "max_tool_calls",
                          "integer_below_min_value")
        echo["max_tool_calls"] = value
    for name, allowed in (("truncation", ("auto", "disabled")),
                          ("service_tier", ("auto", "default", "flex", "priority"))):
        value = choice(body, name, allowed)
        if value is not None:
            echo[name] = value
    for name in ("safety_identifier", "prompt_cache_key"):
        if body.get(name) is not None:
            echo[name] = bounded_string(body[name], name, 64)
    if body.get("metadata") is not None:
        echo["metadata"] = metadata(body["metadata"])
    if body.get("text") is not None:
        echo["text"] = text_param(body["text"])
    if body.get("reasoning") is not None:
        echo["reasoning"] = reasoning_param(body["reasoning"])
    if body.get("generate") is not None:  # false: a warm-up, answered with no output
        expect(body["generate"], bool, "generate", "true or false")
    if body.get("include") is not None:
        includes(body["include"])
    if body.get("stream_options") is not None:
        stream_options(body["stream_options"], body.get("stream"))


def inherit_extensions(inherited: Json, own: Json) -> Json:
    """The extension fields in effect for a continuation: its parent's (``inherited``) with its
    own laid over them key by key, mappings merged at every depth; any other value (a list, a
    string, null) replaces what was there. Neither argument is changed."""
    merged = dict(inherited)
    for key, value in own.items():
        below = merged.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            merged[key] = inherit_extensions(below, value)
        else:
            merged[key] = value
    return merged
