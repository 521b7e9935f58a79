"""Fault specs as written in YAML: parsing with paths and near-miss hints, and the JSON Schema.

An entry of a ``faults:`` list is a fault name (``no_done``) or a mapping with exactly one
fault key and an optional ``when``::

    - http_error: {status: 429, retry_after: 1}
      when: {nth: 1}
    - http_error: 503          # a scalar sets the fault's main parameter
    - disconnect: {mode: reset, after_bytes: 900}

``fault_schema()`` describes exactly what ``parse_fault`` accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from ormock.faults.base import FAULTS, Fault, FaultSpecError, Trigger, _default
from ormock.protocol.hints import suggest

__all__ = ["TRIGGER_SCHEMA", "fault_schema", "parse_fault", "parse_trigger"]

_TRIGGER_KEYS = ("nth", "first", "probability")


def parse_trigger(value: Any, where: str = "when") -> Trigger:
    """``always`` | ``{nth: N}`` | ``{first: N}`` | ``{probability: P}``."""
    if value is None or value == "always":
        return Trigger()
    if isinstance(value, str):
        raise FaultSpecError(where, f"write 'always', or a mapping such as {{nth: 1}}, "
                             f"{{first: 2}} or {{probability: 0.5}}, not {value!r}")
    if not isinstance(value, Mapping) or len(value) != 1:
        raise FaultSpecError(where, "write one of always, {nth: N}, {first: N}, "
                             f"{{probability: P}}, not {value!r}")
    ((kind, number),) = value.items()
    if kind not in _TRIGGER_KEYS:
        raise FaultSpecError(f"{where}.{kind}", "unknown trigger"
                             + suggest(str(kind), _TRIGGER_KEYS)
                             + "; use nth, first or probability")
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise FaultSpecError(f"{where}.{kind}", f"must be a number, not {number!r}")
    try:
        return Trigger(kind, number)
    except FaultSpecError as error:
        raise FaultSpecError(f"{where}.{kind}", error.message) from None


def parse_fault(spec: Mapping[str, Any] | str, where: str = "faults[0]") -> Fault:
    """A fault from its YAML form; errors raise ``FaultSpecError`` with the path at fault."""
    if isinstance(spec, str):
        name, body, when = spec, None, None
    elif isinstance(spec, Mapping):
        keys = [k for k in spec if k != "when"]
        if not keys:
            raise FaultSpecError(where, "names no fault; write one of " + ", ".join(FAULTS))
        if len(keys) > 1:
            raise FaultSpecError(where, _several(keys))
        name, body, when = keys[0], spec[keys[0]], spec.get("when")
    else:
        raise FaultSpecError(where, "a fault is a name (no_done) or a mapping such as "
                             f"{{http_error: {{status: 429}}}}, not {spec!r}")
    if not isinstance(name, str) or name not in FAULTS:
        raise FaultSpecError(where, f"unknown fault {name!r}" + suggest(str(name), FAULTS)
                             + f"; known faults: {', '.join(sorted(FAULTS))}")
    cls = FAULTS[name]
    path = f"{where}.{name}"
    if body is None:
        body = {}
    elif not isinstance(body, Mapping):
        if cls.main is None:
            raise FaultSpecError(path, f"takes a mapping of parameters ({', '.join(cls.params)})"
                                 f", not {body!r}")
        body = {cls.main: body}
    for key in body:
        if key == "when":
            raise FaultSpecError(f"{path}.when", f"'when' goes beside {name}, not under it "
                                 f"(- {name}: ...\n  when: ...)")
        if key not in cls.params:
            known = ", ".join(cls.params) or "none"
            raise FaultSpecError(f"{path}.{key}", f"unknown parameter of {name}"
                                 + suggest(str(key), cls.params)
                                 + f"; its parameters: {known}")
    trigger = parse_trigger(when, f"{where}.when")
    try:
        return cls(trigger=trigger, **body)
    except FaultSpecError as error:
        raise FaultSpecError(f"{where}.{error.path}", error.message) from None


def _several(keys: list[Any]) -> str:
    names = [k for k in keys if k in FAULTS]
    for key in keys:
        owner = next((n for n in names if key in FAULTS[n].params), None)
        if owner is not None:
            return f"{key!r} is a parameter of {owner}: indent it under {owner}"
    if len(names) > 1:
        return (f"one fault per entry, found {', '.join(map(repr, names))}; write each as its "
                "own list entry")
    return f"one fault key (plus 'when') per entry, found {', '.join(map(repr, keys))}"


TRIGGER_SCHEMA: dict[str, Any] = {
    "description": "When the fault fires: always (default), the nth request, the first N "
                   "requests, or each request with a seeded probability.",
    "oneOf": [
        {"enum": ["always", None]},
        {"type": "object", "properties": {"nth": {"type": "integer", "minimum": 1}},
         "required": ["nth"], "additionalProperties": False},
        {"type": "object", "properties": {"first": {"type": "integer", "minimum": 1}},
         "required": ["first"], "additionalProperties": False},
        {"type": "object",
         "properties": {"probability": {"type": "number", "minimum": 0, "maximum": 1}},
         "required": ["probability"], "additionalProperties": False},
    ],
}


def _fault_value_schema(cls: type[Fault]) -> dict[str, Any]:
    defaults = {f.name: _default(f) for f in fields(cls)}
    params = {name: p.schema(defaults.get(name)) for name, p in cls.params.items()}
    body: dict[str, Any] = {"type": "object", "properties": params, "additionalProperties": False}
    if cls.exclusive:
        body["allOf"] = [{"not": {"required": [a, b]}} for a, b in cls.exclusive]
    options: list[dict[str, Any]] = [{"type": "null"}, body]
    if cls.main is not None:
        main = dict(params[cls.main])
        main.pop("default", None)
        if isinstance(main.get("type"), list):  # null is its own option already
            main["type"] = next(t for t in main["type"] if t != "null")
            if "enum" in main:
                main["enum"] = [v for v in main["enum"] if v is not None]
        options.append(main)
    doc = (cls.__doc__ or cls.name).strip().split("\n\n")[0]
    return {"description": " ".join(doc.split()), "anyOf": options}


def fault_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one entry of a ``faults:`` list, for the registered
    faults (plugins' included); self-contained, so it can sit anywhere in a larger schema."""
    names = sorted(FAULTS)
    properties = {name: _fault_value_schema(FAULTS[name]) for name in names}
    properties["when"] = TRIGGER_SCHEMA
    return {
        "oneOf": [
            {"type": "string", "enum": names},
            {
                "type": "object",
                "properties": properties,
                "additionalProperties": False,
                "oneOf": [{"required": [name]} for name in names],
            },
        ]
    }
