"""The JSON Schema of a cassette file: the one declaration that checks a cassette at load (with
file, line and key in the message) and ships with the package for editors
(``ormock/cassette/cassette.schema.json``, printed by ``ormock cassette schema``)."""

from __future__ import annotations

import json
from typing import Any

from ormock.cassette.model import CASSETTE_VERSION, ENDINGS
from ormock.protocol.types import Json
from ormock.scenario.schema import describe_error
from ormock.scenario.source import Lines

__all__ = ["cassette_schema", "schema_text", "validate"]

_MS = {"type": "number", "minimum": 0, "description": "milliseconds from the request"}
_HEADERS = {
    "type": "object",
    "description": "header names in lower case; a repeated header as a list",
    "additionalProperties": {"oneOf": [{"type": "string"},
                                       {"type": "array", "items": {"type": "string"}}]},
}


def _closed(properties: Json, required: tuple[str, ...] = (), **extra: Any) -> Json:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False, **extra}


_MESSAGE = _closed({
    "at": _MS,
    "event": {"type": "object", "description": "the JSON of the data line"},
    "done": {"const": True, "description": "data: [DONE]"},
    "raw": {"type": "string",
            "description": "the exact bytes, only where they differ from the canonical framing"},
}, ("at",), anyOf=[{"required": ["event"]}, {"required": ["done"]}, {"required": ["raw"]}])

_BODY = _closed({
    "at": _MS,
    "json": {"description": "the document"},
    "style": {"type": "string", "pattern": r"^(compact|indent-2|indent-2-ascii|compact-ascii)"
                                            r"(\+newline)?$"},
    "raw": {"type": "string", "description": "the exact text, where no style gives it"},
    "binary": {"type": "string", "contentEncoding": "base64"},
}, anyOf=[{"required": ["json"]}, {"required": ["raw"]}, {"required": ["binary"]}])

_RESPONSE = _closed({
    "status": {"type": "integer", "minimum": 100, "maximum": 599},
    "headers": _HEADERS,
    "headers_at": _MS,
    "style": {"enum": ["event+data", "data"]},
    "events": {"type": "array", "items": _MESSAGE},
    "body": _BODY,
    "chunks": {"type": "array", "description": "each upstream write: [ms, bytes]",
               "items": {"type": "array", "prefixItems": [_MS, {"type": "integer",
                                                                "minimum": 0}],
                         "minItems": 2, "maxItems": 2}},
    "ended": {"enum": list(ENDINGS)},
    "end_at": _MS,
}, ("status",))

_FRAME = _closed({
    "at": _MS,
    "from": {"enum": ["client", "server"]},
    "event": {"type": "object"},
    "text": {"type": "string"},
}, ("at", "from"), anyOf=[{"required": ["event"]}, {"required": ["text"]}])

_SOCKET = _closed({
    "frames": {"type": "array", "items": _FRAME},
    "close": _closed({"at": _MS, "code": {"type": "integer", "minimum": 1000, "maximum": 4999},
                      "by": {"enum": ["client", "server"]}}),
}, ("frames",))

_REQUEST = _closed({
    "method": {"type": "string", "pattern": "^[A-Z]+$"},
    "path": {"type": "string", "pattern": "^/"},
    "query": {"type": "string"},
    "headers": _HEADERS,
    "body": {"description": "a JSON request body"},
    "text": {"type": "string", "description": "a body that is not JSON"},
}, ("method", "path"))


def cassette_schema() -> Json:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://ormock.dev/schema/cassette.json",
        "title": "ormock cassette",
        **_closed({
            "$schema": {"type": "string"},
            "version": {"const": CASSETTE_VERSION},
            "profile": {"type": "string"},
            "upstream": {"type": ["string", "null"]},
            "recorded_at": {"type": ["string", "null"]},
            "recorded_with": {"type": ["string", "null"]},
            "interactions": {"type": "array", "items": _closed(
                {"request": _REQUEST, "response": _RESPONSE, "socket": _SOCKET},
                ("request",), oneOf=[{"required": ["response"]}, {"required": ["socket"]}])},
        }, ("version", "interactions")),
    }


def validate(data: Any, lines: Lines) -> None:
    """Raise ``ScenarioError`` (file, line, key) for the first schema violation."""
    import jsonschema

    errors = list(jsonschema.Draft202012Validator(cassette_schema()).iter_errors(data))
    if errors:
        message, path = describe_error(jsonschema.exceptions.best_match(errors))
        raise lines.error(message, path)


def schema_text() -> str:
    return json.dumps(cassette_schema(), indent=2) + "\n"
