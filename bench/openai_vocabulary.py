"""Regenerate ``ormock/protocol/openai_vocabulary.json``: what OpenAI's clients speak, read from
the installed openai SDK, so it is never a hand-kept list.

Read from ``openai.types.responses``: the input item union (``ResponseInputItemParam``), the tool
union (``ToolParam``), the ``tool_choice`` union of ``response_create_params``, the output item
union (``ResponseOutputItem``) and the stream event union (``ResponseStreamEvent``). The SDK is
a test-only dependency; ormock reads the generated file at run time (``ormock.protocol.
openai_vocabulary``), and ``tests/test_openai_vocabulary.py`` regenerates it and fails when the
committed file differs or when the SDK knows a type ormock does not handle.

The file is plain JSON::

    {
     "openai_sdk": "3.63.0",
     "input_items": {"<type>": ["<model>", ...]},   # the SDK's params declaring that type
     "tools": {"<type>": ["<model>"]},
     "tool_choice": {"modes": ["auto", "none", "required"],
                     "forms": {"<type>": ["<model>"]}},
     "output_items": {"<type>": "<model>"},          # pydantic models' names, as events'
     "events": {"<type>": "<model>"},
     "models": {"<model>": {"required": ["<field>", ...], "fields": {"<field>": <shape>}}}
    }

A ``<model>`` of the params is ``module.Name`` (``response_input_item_param.ShellCall``: names
repeat across modules). A ``<shape>`` is what a field's JSON value may be:
``"string"``, ``"integer"``, ``"number"`` (an integer too), ``"boolean"``, ``"null"``,
``"any"`` (any JSON value, ``object`` in the SDK), ``{"enum": [values]}`` (a Literal),
``{"array": <shape>}``, ``{"map": <shape>}`` (an object of string keys),
``{"model": "<model>"}`` (a TypedDict, in ``models``) and ``{"any_of": [<shape>, ...]}``.

    python bench/openai_vocabulary.py            # rewrite the file
    python bench/openai_vocabulary.py --check    # exit 1 when it is stale
"""

from __future__ import annotations

import collections.abc
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

OUTPUT = (Path(__file__).resolve().parent.parent / "ormock" / "protocol"
          / "openai_vocabulary.json")

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean",
            type(None): "null", object: "any"}
_ARRAYS = {list, tuple, collections.abc.Iterable, collections.abc.Sequence}


def _members(union: Any) -> list[Any]:
    while typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    return list(typing.get_args(union)) or [union]


def _is_typed_dict(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, dict) and hasattr(value, "__total__")


class _Models:
    """The TypedDicts met while reading the unions, each read once (a model may hold itself)."""

    def __init__(self) -> None:
        self.models: dict[str, Any] = {}

    def key(self, model: Any) -> str:
        return f"{model.__module__.rsplit('.', 1)[-1]}.{model.__qualname__}"

    def add(self, model: Any) -> str:
        key = self.key(model)
        if key in self.models:
            return key
        self.models[key] = None  # a model met again while reading its own fields
        hints = typing.get_type_hints(model, include_extras=True)
        fields: dict[str, Any] = {}
        required: list[str] = []
        for name, hint in hints.items():
            wire, hint, must = self._field(name, hint, bool(model.__total__))
            fields[wire] = self.shape(hint)
            if must:
                required.append(wire)
        self.models[key] = {"required": sorted(required),
                            "fields": {n: fields[n] for n in sorted(fields)}}
        return key

    def _field(self, name: str, hint: Any, total: bool) -> tuple[str, Any, bool]:
        must, wire = total, name
        while True:
            origin = typing.get_origin(hint)
            if origin is typing.Required or origin is typing.NotRequired:
                must = origin is typing.Required
                hint = typing.get_args(hint)[0]
            elif origin is typing.Annotated:
                hint, *extras = typing.get_args(hint)
                for extra in extras:
                    wire = getattr(extra, "alias", None) or wire
            else:
                return wire, hint, must

    def shape(self, hint: Any) -> Any:
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin is typing.Annotated:
            return self.shape(args[0])
        if hint in _SCALARS:
            return _SCALARS[hint]
        if origin is typing.Literal:
            return {"enum": list(args)}
        if origin in (typing.Union, types.UnionType):
            shapes: list[Any] = []
            for arg in args:
                shape = self.shape(arg)
                if shape not in shapes:
                    shapes.append(shape)
            return shapes[0] if len(shapes) == 1 else {"any_of": shapes}
        if origin in _ARRAYS:
            return {"array": self.shape(args[0]) if args else "any"}
        if origin in (dict, collections.abc.Mapping):
            return {"map": self.shape(args[1]) if args else "any"}
        if _is_typed_dict(hint):
            return {"model": self.add(hint)}
        if typing.get_origin(hint) is None and getattr(hint, "__name__", "") == "SequenceNotStr":
            return {"array": "any"}
        if origin is not None and getattr(origin, "__name__", "") == "SequenceNotStr":
            return {"array": self.shape(args[0])}
        raise TypeError(f"the vocabulary has no shape for {hint!r}: teach _Models.shape it")


def _by_type(models: _Models, union: Any) -> dict[str, list[str]]:
    """Each ``type`` the union's TypedDicts declare, with the models declaring it."""
    found: dict[str, list[str]] = {}
    for member in _members(union):
        if not _is_typed_dict(member):
            continue
        key = models.add(member)
        shape = models.models[key]["fields"]["type"]
        for value in shape["enum"] if "enum" in shape else shape["any_of"][0]["enum"]:
            found.setdefault(value, []).append(key)
    return {name: found[name] for name in sorted(found)}


def _pydantic(union: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    for model in _members(union):
        (name,) = typing.get_args(model.model_fields["type"].annotation)
        found[name] = model.__name__
    return {name: found[name] for name in sorted(found)}


def vocabulary() -> dict[str, Any]:
    """Everything the installed SDK knows of the Responses API's items, tools and events."""
    import openai
    from openai.types.responses import (
        ResponseInputItemParam,
        ResponseOutputItem,
        ResponseStreamEvent,
        ToolParam,
    )
    from openai.types.responses.response_create_params import ToolChoice

    models = _Models()
    input_items = _by_type(models, ResponseInputItemParam)
    tools = _by_type(models, ToolParam)
    modes = sorted(v for m in _members(ToolChoice) if typing.get_origin(m) is typing.Literal
                   for v in typing.get_args(m))
    forms = _by_type(models, ToolChoice)
    return {
        "openai_sdk": openai.__version__,
        "input_items": input_items,
        "tools": tools,
        "tool_choice": {"modes": modes, "forms": forms},
        "output_items": _pydantic(ResponseOutputItem),
        "events": _pydantic(ResponseStreamEvent),
        "models": {key: models.models[key] for key in sorted(models.models)},
    }


def render(data: dict[str, Any]) -> str:
    """The file's text: one line per type and per model, so a new SDK's changes read as a short
    diff."""
    def block(mapping: dict[str, Any], indent: str) -> str:
        lines = [f"{indent} {json.dumps(k)}: {json.dumps(v)}" for k, v in mapping.items()]
        return "{\n" + ",\n".join(lines) + f"\n{indent}}}"

    choice = data["tool_choice"]
    parts = [
        f' "openai_sdk": {json.dumps(data["openai_sdk"])}',
        f' "input_items": {block(data["input_items"], " ")}',
        f' "tools": {block(data["tools"], " ")}',
        f' "tool_choice": {{\n  "modes": {json.dumps(choice["modes"])},\n'
        f'  "forms": {block(choice["forms"], "  ")}\n }}',
        f' "output_items": {block(data["output_items"], " ")}',
        f' "events": {block(data["events"], " ")}',
        f' "models": {block(data["models"], " ")}',
    ]
    return "{\n" + ",\n".join(parts) + "\n}\n"


def counts(data: dict[str, Any]) -> str:
    return (f"{len(data['input_items'])} input item types, {len(data['tools'])} tool types, "
            f"{len(data['tool_choice']['modes'])} tool_choice modes and "
            f"{len(data['tool_choice']['forms'])} forms, {len(data['output_items'])} output item "
            f"types, {len(data['events'])} event types, {len(data['models'])} models")


def main(argv: list[str]) -> int:
    data = vocabulary()
    text = render(data)
    if "--check" in argv:
        stale = not OUTPUT.exists() or OUTPUT.read_text() != text
        print(f"{OUTPUT.name}: {'stale' if stale else 'up to date'}")
        return 1 if stale else 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT} ({counts(data)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
