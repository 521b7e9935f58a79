"""A Response that was served, written back as a scenario step's ``reply:``: the inverse of
``replies`` (``ormock journal export ID --as scenario`` of a JSON answer).

``reply_of(response, model)`` gives the mapping whose ``items`` (messages with their parts and
url citations, refusals, function calls, reasoning, vendor items, each with its own ids),
``usage``, ``status`` (with ``incomplete_reason`` or ``error``) and ``model`` make that output
again; OpenAI's tool calls (``web_search_call``, ``mcp_call``, ...) as the items of their type,
each with its fields (a scenario of them plays the ``openai`` profile: ``needs_openai``). It is
then built as a step would build it and compared with the response: whatever the scenario
format cannot say (a field of a tool call the format does not know, logprobs, a ``{{`` a
template would read, an item status the format does not give) raises ``Inexpressible``
naming it, never dropped.
"""

from __future__ import annotations

import json
from typing import Any

from ormock.protocol.ids import IdFactory
from ormock.protocol.tools import KINDS
from ormock.protocol.types import Json
from ormock.scenario.generated_text import FAKER_LOCK, Draws, shared_faker
from ormock.scenario.model import load_scenario
from ormock.scenario.source import ScenarioError
from ormock.scenario.templates import has_template

__all__ = ["Inexpressible", "needs_openai", "reply_of"]

_ITEM_TYPES = ("message, function_call, reasoning, OpenAI's tool calls (web_search_call, "
               "mcp_call, custom_tool_call, ...) and vendor-prefixed (acme:...) items")
_STATUSES = ("completed", "incomplete", "failed")


def needs_openai(reply: Json) -> bool:
    """Whether a reply holds OpenAI's tool items: its scenario plays the ``openai`` profile."""
    return any(next(iter(item)) in KINDS for item in reply.get("items") or [])


class Inexpressible(ValueError):
    """Something in a response that a scenario step's reply cannot say; the message names it."""


def _text(value: Any, where: str) -> str:
    """A string the reply may carry as written: one with ``{{`` would be read as a template."""
    if not isinstance(value, str):
        raise Inexpressible(f"{where} is not a string ({value!r})")
    if has_template(value):
        raise Inexpressible(f"{where} holds '{{{{', which a scenario reads as a template")
    return value


def _given(**fields: Any) -> Json:
    """The fields that have a value: a missing id or call id is left for the step to draw."""
    return {k: v for k, v in fields.items() if v is not None}


def _annotation(note: Json, where: str) -> Json:
    kind = note.get("type")
    if kind != "url_citation":
        raise Inexpressible(f"{where} is a {kind} annotation (a scenario's are url_citation)")
    return {"url": _text(note.get("url"), f"{where}.url"),
            "title": _text(note.get("title"), f"{where}.title"),
            "start_index": note.get("start_index"), "end_index": note.get("end_index")}


def _text_part(part: Json, where: str) -> Json:
    if part.get("logprobs"):
        raise Inexpressible(f"{where} carries logprobs")
    out: Json = {"text": _text(part.get("text"), f"{where}.text")}
    notes = part.get("annotations") or []
    if notes:
        out["annotations"] = [_annotation(n, f"{where}.annotations[{i}]")
                              for i, n in enumerate(notes)]
    return out


def _message(item: Json, where: str) -> Json:
    parts: list[Json] = []
    for index, part in enumerate(item.get("content") or []):
        at = f"{where}.content[{index}]"
        if part.get("type") == "output_text":
            parts.append(_text_part(part, at))
        elif part.get("type") == "refusal":
            parts.append({"refusal": _text(part.get("refusal"), f"{at}.refusal")})
        else:
            raise Inexpressible(f"{at} is a {part.get('type')} part (a scenario's are "
                                "output_text and refusal)")
    body = _given(id=item.get("id"))
    # one text part is written as the message's text; anything else as its list of parts
    body.update(parts[0] if len(parts) == 1 and "text" in parts[0] else {"parts": parts})
    if item.get("phase") is not None:
        body["phase"] = item["phase"]
    return {"message": body}


def _arguments(arguments: Any, where: str) -> Any:
    """A mapping when sending it again as compact JSON gives the same string (easier to read
    and edit), else the string as it was."""
    text = _text(arguments, where)
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    compact = json.dumps(parsed, ensure_ascii=False, separators=(",", ":"))
    return parsed if isinstance(parsed, dict) and parsed and compact == text else text


def _reasoning(item: Json, where: str) -> Json:
    body = _given(id=item.get("id"))
    for key, kind in (("summary", "summary_text"), ("content", "reasoning_text")):
        parts = item.get(key) or []
        for index, part in enumerate(parts):
            if part.get("type") != kind:
                raise Inexpressible(f"{where}.{key}[{index}] is a {part.get('type')} part "
                                    f"(a scenario's are {kind})")
        if parts:
            body[key] = [_text(p.get("text"), f"{where}.{key}[{i}].text")
                         for i, p in enumerate(parts)]
    if item.get("encrypted_content") is not None:
        body["encrypted_content"] = item["encrypted_content"]
    return {"reasoning": body}


def _no_template(fields: Json, where: str) -> None:
    for key, value in fields.items():
        if has_template(json.dumps(value, ensure_ascii=False)):
            raise Inexpressible(f"{where}.{key} holds '{{{{', which a scenario reads as a "
                                "template")


def _item(item: Json, where: str) -> Json:
    kind = item.get("type")
    if kind == "message":
        return _message(item, where)
    if kind == "function_call":
        return {"function_call": _given(
            name=item.get("name"), arguments=_arguments(item.get("arguments"),
                                                        f"{where}.arguments"),
            call_id=item.get("call_id"), id=item.get("id"))}
    if kind == "reasoning":
        return _reasoning(item, where)
    if kind in KINDS:  # one of OpenAI's tool calls: its own fields, as sent
        fields = {k: v for k, v in item.items() if k not in ("type", "status")}
        _no_template(fields, where)
        return {str(kind): fields}
    if isinstance(kind, str) and ":" in kind:  # an extension item: its own fields, as sent
        fields = {k: v for k, v in item.items() if k not in ("id", "type", "status")}
        _no_template(fields, where)
        return {"vendor_item": _given(type=kind, fields=fields, id=item.get("id"))}
    raise Inexpressible(f"{where} is a {kind} item; a scenario step's items are {_ITEM_TYPES}")


def _usage(usage: Any, output: list[Json]) -> Any:
    """The counts as given: a replay reports them whatever its request or items count."""
    if not isinstance(usage, dict):
        return usage
    out = {"input_tokens": usage.get("input_tokens"),
           "output_tokens": usage.get("output_tokens")}
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens", 0)
    if reasoning or any(item.get("type") == "reasoning" for item in output):
        out["reasoning_tokens"] = reasoning
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens", 0)
    if cached:
        out["cached_tokens"] = cached
    return out


def _first_difference(made: Any, sent: Any, where: str) -> str | None:
    """Where the reply's build and the response first differ, and how; None when equal."""
    if isinstance(made, dict) and isinstance(sent, dict):
        for key in [*sent, *(k for k in made if k not in sent)]:
            found = _first_difference(made.get(key), sent.get(key), f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(made, list) and isinstance(sent, list) and len(made) == len(sent):
        for index, (one, other) in enumerate(zip(made, sent, strict=True)):
            found = _first_difference(one, other, f"{where}[{index}]")
            if found:
                return found
        return None
    if made == sent:
        return None
    return f"{where} is {json.dumps(sent)[:80]}, a step would send {json.dumps(made)[:80]}"


def _check(reply: Json, response: Json) -> None:
    """Load ``reply`` as a scenario's step (the schema, the protocol), build it for this
    response as the step would, and compare what it says."""
    openai = needs_openai(reply)
    try:
        step = load_scenario({"name": "export", "steps": [{"reply": reply}],
                              **({"profile": "openai"} if openai else {})}).steps[0].reply
    except ScenarioError as error:
        raise Inexpressible(f"a step with this reply does not load ({error})") from None
    try:
        usage = response.get("usage") or {}
        with FAKER_LOCK:
            final = step.build(Draws(shared_faker(), 0), {}, dict(response), IdFactory(0),
                               input_tokens=int(usage.get("input_tokens") or 0),
                               completed_at=0, openai_items=openai)[-1]["response"]
    except (ValueError, KeyError, TypeError) as error:
        raise Inexpressible(f"a step with this reply cannot be built ({error})") from None
    for key in ("status", "output", "usage", "incomplete_details", "error"):
        found = _first_difference(final.get(key), response.get(key), key)
        if found:
            raise Inexpressible(found)


def reply_of(response: Json, model: str | None = None) -> Json:
    """The ``reply:`` of a step that answers as ``response`` did (``model``: the request's,
    which a step echoes; a response that names another gets ``model:``). ``Inexpressible``
    names what it cannot say."""
    status = response.get("status")
    if status not in _STATUSES:
        raise Inexpressible(f"the response's status is {status!r} (a step's is one of "
                            f"{', '.join(_STATUSES)})")
    output = response.get("output") or []
    reply: Json = {"items": [_item(item, f"output[{i}]") for i, item in enumerate(output)]}
    reply["usage"] = _usage(response.get("usage"), output)
    if status != "completed":
        reply["status"] = status
    if status == "incomplete":
        reply["incomplete_reason"] = (response.get("incomplete_details") or {}).get("reason")
    if status == "failed":
        reply["error"] = {k: v for k, v in (response.get("error") or {}).items()
                          if k in ("code", "message")}
    if response.get("model") != model:
        reply["model"] = response.get("model")
    _check(reply, response)
    return reply
