"""The openai SDK's vocabulary, and a value checked against the types it declares.

``openai_vocabulary.json`` is generated from the installed openai SDK by
``bench/openai_vocabulary.py`` (``make openai-vocabulary``; its docstring describes the format):
the input item types, tool types, ``tool_choice`` forms, output item types and stream event types
OpenAI's clients speak, with the fields each param type declares. The ``openai`` profile accepts
those input items, tools and ``tool_choice`` forms and checks their fields here (``check_model``):
required fields present, literal values among the declared ones, JSON types as declared, nested
objects and arrays alike. A field the SDK does not declare is let through, and so is ``null`` for
a field that is not required (clients send back output items' empty fields as ``null``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from ormock.protocol.errors import invalid
from ormock.protocol.fields import type_name

__all__ = ["OPENAI_VOCABULARY", "check_model", "openai_input_types", "openai_tool_choice_forms",
           "openai_tool_types", "openai_vocabulary"]

OPENAI_VOCABULARY = Path(__file__).with_name("openai_vocabulary.json")

_Fault = tuple[str, str, str]  # message, param, code


@cache
def openai_vocabulary() -> dict[str, Any]:
    """The generated vocabulary: ``{"openai_sdk", "input_items", "tools", "tool_choice",
    "output_items", "events", "models"}`` (the format: ``bench/openai_vocabulary.py``)."""
    data: dict[str, Any] = json.loads(OPENAI_VOCABULARY.read_text(encoding="utf-8"))
    return data


@cache
def openai_input_types() -> frozenset[str]:
    """The input item types of the SDK's ``ResponseInputItemParam``."""
    return frozenset(openai_vocabulary()["input_items"])


@cache
def openai_tool_types() -> frozenset[str]:
    """The tool types of the SDK's ``ToolParam``."""
    return frozenset(openai_vocabulary()["tools"])


@cache
def openai_tool_choice_forms() -> frozenset[str]:
    """The ``type`` of each object form of the SDK's ``tool_choice``."""
    return frozenset(openai_vocabulary()["tool_choice"]["forms"])


def check_model(value: Any, models: list[str], param: str) -> None:
    """Raise ``invalid`` (400, ``param`` naming the field at fault) unless ``value`` is one of
    ``models`` as the SDK declares it; of several, the fault of the first is told."""
    faults = [_model_fault(value, key, param) for key in models]
    if None in faults:
        return
    message, where, code = faults[0]  # type: ignore[misc]
    raise invalid(message, where, code)


# the spec's own types among the SDK's, checked by ormock's rules wherever they appear (the SDK
# declares a function tool's ``strict`` and ``parameters`` required; the spec and OpenAI's API
# let them out): ``ormock.protocol.request_tools``
SPEC_MODELS = frozenset({"function_tool_param.FunctionToolParam"})


def _model_fault(value: Any, key: str, param: str) -> _Fault | None:
    if not isinstance(value, dict):
        return f"'{param}' must be an object, not {type_name(value)}.", param, "invalid_type"
    if key in SPEC_MODELS:
        return None
    model = openai_vocabulary()["models"][key]
    kind = value.get("type")
    what = f"a {kind} item" if isinstance(kind, str) else "this object"
    for name in model["required"]:
        if name not in value:
            return (f"'{param}.{name}' is required on {what}.", f"{param}.{name}",
                    "missing_required_parameter")
    for name, shape in model["fields"].items():
        if name not in value or (value[name] is None and name not in model["required"]):
            continue
        fault = _fault(value[name], shape, f"{param}.{name}")
        if fault is not None:
            return fault
    return None


_KINDS: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,),
                                       "number": (int, float), "boolean": (bool,),
                                       "null": (type(None),)}


def _fault(value: Any, shape: Any, param: str) -> _Fault | None:
    """What is wrong with ``value`` as ``shape`` says it may be, or None."""
    if shape == "any":
        return None
    if isinstance(shape, str):
        kinds = _KINDS[shape]
        if isinstance(value, kinds) and not (isinstance(value, bool) and shape != "boolean"):
            return None
        return f"'{param}' must be {_describe(shape)}, not {type_name(value)}.", param, \
            "invalid_type"
    if "enum" in shape:
        if any(value == v and type(value) is type(v) for v in shape["enum"]):
            return None
        return (f"'{param}' must be {_describe(shape)}; got {value!r}.", param,
                "invalid_value")
    if "array" in shape:
        if not isinstance(value, list):
            return f"'{param}' must be an array, not {type_name(value)}.", param, "invalid_type"
        for index, element in enumerate(value):
            fault = _fault(element, shape["array"], f"{param}[{index}]")
            if fault is not None:
                return fault
        return None
    if "map" in shape:
        if not isinstance(value, dict):
            return f"'{param}' must be an object, not {type_name(value)}.", param, "invalid_type"
        for key, element in value.items():
            fault = _fault(element, shape["map"], f"{param}.{key}")
            if fault is not None:
                return fault
        return None
    if "model" in shape:
        return _model_fault(value, shape["model"], param)
    return _any_of(value, shape["any_of"], param)


def _any_of(value: Any, shapes: list[Any], param: str) -> _Fault | None:
    """One of ``shapes``: the first that fits; else, for an object whose ``type`` one of the
    models declares, that model's fault (the most telling), else what it may be."""
    faults = [_fault(value, shape, param) for shape in shapes]
    if None in faults:
        return None
    if isinstance(value, dict):
        for shape, fault in zip(shapes, faults, strict=True):
            if isinstance(shape, dict) and "model" in shape and value.get("type") in \
                    _declared_types(shape["model"]):
                return fault
        typed = sorted({t for s in shapes if isinstance(s, dict) and "model" in s
                        for t in _declared_types(s["model"])})
        if typed:
            return (f"'{param}.type' must be one of {', '.join(map(repr, typed))}; got "
                    f"{value.get('type')!r}.", f"{param}.type", "invalid_value")
    for shape, fault in zip(shapes, faults, strict=True):
        if _same_kind(value, shape):  # a value of the right JSON type: what is wrong inside
            return fault
    return (f"'{param}' must be {' or '.join(_describe(s) for s in shapes)}, not "
            f"{type_name(value)}.", param, "invalid_type")


def _same_kind(value: Any, shape: Any) -> bool:
    if not isinstance(shape, dict):
        return False
    if "enum" in shape:
        return any(type(value) is type(v) for v in shape["enum"])
    return isinstance(value, list) if "array" in shape else isinstance(value, dict)


def _declared_types(key: str) -> tuple[Any, ...]:
    shape = openai_vocabulary()["models"][key]["fields"].get("type")
    if isinstance(shape, dict) and "enum" in shape:
        return tuple(shape["enum"])
    return ()


def _describe(shape: Any) -> str:
    if isinstance(shape, str):
        return {"string": "a string", "integer": "an integer", "number": "a number",
                "boolean": "true or false", "null": "null", "any": "any value"}[shape]
    if "enum" in shape:
        values = [repr(v) for v in shape["enum"]]
        return values[0] if len(values) == 1 else f"one of {', '.join(values)}"
    if "array" in shape:
        return "an array"
    if "map" in shape or "model" in shape:
        return "an object"
    return " or ".join(_describe(s) for s in shape["any_of"])
