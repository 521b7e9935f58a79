"""The JSON Schema of scenario files, and validation with messages a person can act on.

The schema ships with the package (``ormock scenarios --schema`` prints it) so editors can
complete scenario files. Errors name the key, and for an unknown key suggest the near miss.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from ormock.protocol.checker import RULES
from ormock.protocol.hints import suggest
from ormock.protocol.types import Json
from ormock.scenario.matching import CHECKS
from ormock.scenario.source import Lines
from ormock.scenario.tool_items import TOOL_ITEM_SCHEMAS

__all__ = ["describe_error", "scenario_schema", "schema_text", "validate"]


_STRINGS = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
_TEXT_LIST = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
_ANNOTATION: Json = {
    "type": "object",
    "additionalProperties": False,
    "required": ["url"],
    "properties": {
        "type": {"const": "url_citation"},
        "url": {"type": "string"},
        "title": {"type": "string"},
        "start_index": {"type": "integer", "minimum": 0},
        "end_index": {"type": "integer", "minimum": 0},
        "cite": {"type": "string", "description": "the cited words: indexes are computed"},
    },
}
_PART: Json = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "text": {"type": "string"},
        "refusal": {"type": "string"},
        "annotations": {"type": "array", "items": _ANNOTATION},
    },
}
_MESSAGE: Json = {
    "oneOf": [
        {"type": "string"},
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "text": {"type": "string"},
                "parts": {"type": "array", "items": _PART, "minItems": 1},
                "annotations": {"type": "array", "items": _ANNOTATION},
                "phase": {"enum": ["commentary", "final_answer"]},
                "role": {"const": "assistant"},
                "id": {"type": "string"},
            },
        },
    ]
}
_ITEM_KINDS: Json = {
    "message": _MESSAGE,
    "refusal": {"type": "string"},
    "function_call": {
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "arguments": {"type": ["object", "string"]},
            "call_id": {"type": "string"},
            "id": {"type": "string"},
            "namespace": {"type": "string", "minLength": 1},
        },
    },
    "reasoning": {
        "oneOf": [
            {"type": "string"},
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "summary": _TEXT_LIST,
                    "content": _TEXT_LIST,
                    "encrypted_content": {"type": "string"},
                    "id": {"type": "string"},
                },
            },
        ]
    },
    "vendor_item": {
        "type": "object",
        "additionalProperties": False,
        "required": ["type"],
        "properties": {
            "type": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+:[A-Za-z0-9_.:-]+$"},
            "fields": {"type": "object"},
            "id": {"type": "string"},
        },
    },
    **TOOL_ITEM_SCHEMAS,
}
_PACING: Json = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "first_event": {"type": "number", "minimum": 0},
        "per_event": {"type": "number", "minimum": 0},
        "tokens_per_second": {"type": "number", "exclusiveMinimum": 0},
        "jitter": {"type": "number", "minimum": 0, "maximum": 1},
    },
}
_MATCH: Json = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "model": {"type": "string", "description": "exact, or a glob such as 'gpt-4o*'"},
        "model_regex": {"type": "string"},
        "input": {"type": "string", "description": "the input text, exactly"},
        "input_contains": _STRINGS,
        "input_regex": {"type": "string"},
        "instructions_contains": _STRINGS,
        "tools": {"type": "array", "items": {"type": "string"}},
        "tool_choice": {"type": ["string", "object"]},
        "function_call_output": {"oneOf": [{"type": "boolean"}, {"type": "string"},
                                           {"type": "array", "items": {"type": "string"}}]},
        "previous_response_id": {"oneOf": [{"type": "boolean"}, {"type": "string"}]},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
        "stream": {"type": "boolean"},
        "nth": {"type": "integer", "minimum": 1},
    },
}


def _reply(fault_schema: Json) -> Json:
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "minProperties": 1,
                    "maxProperties": 1,
                    "propertyNames": {"enum": sorted(_ITEM_KINDS)},
                    "properties": _ITEM_KINDS,
                },
            },
            "status": {"enum": ["completed", "incomplete", "failed"]},
            "incomplete_reason": {"enum": ["max_output_tokens", "content_filter"]},
            "error": {
                "type": "object",
                "additionalProperties": False,
                "properties": {k: {"type": "string"} for k in ("code", "message", "type", "param")},
            },
            "usage": {
                "oneOf": [
                    {"type": "null"},
                    {"const": "auto"},
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            k: {"type": "integer", "minimum": 0}
                            for k in ("input_tokens", "output_tokens", "reasoning_tokens",
                                      "cached_tokens")
                        },
                    },
                ]
            },
            "chunking": {"type": "string", "pattern": "^(words|whole|chars:[1-9][0-9]*|"
                                                      "tokens:[1-9][0-9]*)$"},
            "pacing": _PACING,
            "faults": {"type": "array", "items": fault_schema},
            "events": {"type": "array", "items": {"type": "object", "required": ["type"]},
                       "minItems": 1},
            "sse": {"type": "string", "minLength": 1},
            "breaks": {"type": "array", "items": {"enum": sorted(RULES)}},
            "model": {"type": "string"},
        },
    }


def _fault_schema() -> Json:
    from ormock.faults import fault_schema

    return fault_schema()


def _match() -> Json:
    """The ``match`` mapping: the built-in checks, and any a plugin registered."""
    properties = dict(_MATCH["properties"])
    for name in sorted(CHECKS):
        properties.setdefault(name, {"description": "a check registered by a plugin"})
    return {**_MATCH, "properties": properties}


def scenario_schema() -> Json:
    """The JSON Schema (draft 2020-12) of a scenario file, with what plugins registered."""
    from ormock.faults import FAULTS

    return _schema(tuple(sorted(CHECKS)), tuple(sorted(FAULTS)))


@lru_cache(maxsize=8)
def _schema(checks: tuple[str, ...], faults: tuple[str, ...]) -> Json:
    """Built once per set of registered checks and faults."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://ormock.dev/schema/scenario.json",
        "title": "ormock scenario",
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "steps"],
        "properties": {
            "$schema": {"type": "string"},
            "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$"},
            "description": {"type": "string"},
            "seed": {"type": "integer"},
            "order": {"enum": ["first", "sequence", "best"]},
            "strict": {"type": "boolean"},
            "chaos": {
                "description": "seeded random faults for the requests this scenario answers: "
                "'rate=0.2,seed=7,faults=http_error:429|disconnect' or a mapping",
                "type": ["string", "object"],
            },
            "profile": {
                "description": "the provider this scenario's steps play (its request rules, "
                "usage, spellings): openresponses, openai, platform or a plugin's profile; "
                "by default the server's",
                "type": "string",
                "minLength": 1,
            },
            "steps": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["reply"],
                    "properties": {
                        "name": {"type": "string"},
                        "match": _match(),
                        "times": {"oneOf": [{"type": "integer", "minimum": 1},
                                            {"const": "forever"}]},
                        "count_faulted": {
                            "description": "true: an attempt a fault ended (an HTTP error, a "
                            "failed, cut or stalled stream) uses the step up too, as every "
                            "request counts toward times; by default such an attempt leaves "
                            "the step to the client's retry",
                            "type": "boolean",
                        },
                        "reply": _reply(_fault_schema()),
                    },
                },
            },
        },
    }


_TYPE_WORDS = {"string": "a string", "integer": "an integer", "number": "a number",
               "boolean": "true or false", "object": "a mapping", "array": "a list",
               "null": "null"}


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "a mapping", list: "a list", str: "a string", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def describe_error(error: Any) -> tuple[str, tuple[str | int, ...]]:
    """A person's message for one jsonschema error, and the path it is at."""
    path = tuple(error.absolute_path)
    validator = error.validator
    schema = error.schema
    if validator == "additionalProperties":
        properties = schema.get("properties", {})
        known = sorted(properties)
        key = str(sorted((k for k in error.instance if k not in properties), key=str)[0])
        owners = [name for name, sub in properties.items()
                  if isinstance(sub, dict) and key in sub.get("properties", {})]
        hint = (f" ({key!r} belongs under {owners[0]!r}: is it indented too little?)"
                if owners else suggest(key, known))
        return (f"unknown key {key!r}{hint}; known keys: {', '.join(known)}", (*path, key))
    if validator == "propertyNames" or (
        validator == "enum" and "propertyNames" in error.schema_path
    ):
        if validator == "enum":  # jsonschema reports the name that failed propertyNames
            kinds, name = sorted(error.validator_value), str(error.instance)
        else:
            kinds = sorted(schema.get("properties", {}))
            name = next((str(k) for k in error.instance if k not in kinds), "?")
        return (f"unknown item type {name!r}{suggest(name, kinds)}; an item is one of "
                f"{', '.join(kinds)}", (*path, name))
    if validator in ("minProperties", "maxProperties") and "propertyNames" in schema:
        return ("each item is a mapping with exactly one key naming its type (message, "
                "function_call, ...)", path)
    if validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        return f"missing required key {missing[0]!r}", path
    if validator == "type":
        wanted = error.validator_value
        wanted = [wanted] if isinstance(wanted, str) else wanted
        words = " or ".join(_TYPE_WORDS.get(w, w) for w in wanted)
        return f"must be {words}, not {_describe(error.instance)}", path
    if validator in ("enum", "const"):
        allowed = error.validator_value if validator == "enum" else [error.validator_value]
        choices = [str(a) for a in allowed]
        near = suggest(str(error.instance), choices) if isinstance(error.instance, str) else ""
        return (f"{error.instance!r} is not allowed{near}; use one of "
                f"{', '.join(map(repr, allowed))}", path)
    if validator == "oneOf" and all("required" in s for s in error.validator_value):
        keys = [key for s in error.validator_value for key in s["required"]]  # one key each
        found = [key for key in keys if key in error.instance]
        return (f"must have one of the keys {' or '.join(map(repr, keys))}, not "
                f"{' and '.join(map(repr, found)) if found else 'none'}", path)
    if validator == "oneOf":
        options = [_TYPE_WORDS.get(str(s.get("type")), "") or repr(s.get("const"))
                   for s in error.validator_value]
        return (f"must be {' or '.join(o for o in options if o)}, not "
                f"{_describe(error.instance)}", path)
    return error.message, path


def validate(data: Any, lines: Lines) -> None:
    """Raise ``ScenarioError`` (file, line, key, near miss) for the first schema violation."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(scenario_schema())
    errors = list(validator.iter_errors(data))
    if not errors:
        return
    error = jsonschema.exceptions.best_match(errors)
    message, path = describe_error(error)
    raise lines.error(message, path)


def schema_text() -> str:
    return json.dumps(scenario_schema(), indent=2) + "\n"
