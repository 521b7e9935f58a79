"""One entry point for every cassette file: ormock's own, or vcrpy's (pytest-recording's), told
apart by their shape.

An ormock cassette's interactions have ``request: {method, path}``; a vcrpy cassette's have
``request: {method, uri, body, headers}`` and ``response: {status: {code, message}, headers,
body: {string}}``. Both say ``version: 1``. The file is peeked at with the bounded safe loader
(JSON for a ``.json`` file) and then read by the reader of its kind: ``parse_cassette`` (checked
against the schema, mistakes at file:line) or ``vcr.from_vcr`` (through vcrpy's persister).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from os import PathLike
from typing import Any, Literal

from ormock.cassette.fileformat import CassetteError, parse_cassette
from ormock.cassette.model import Cassette
from ormock.cassette.vcr import VCR_SHAPE, from_vcr, is_vcr_document
from ormock.scenario.source import (
    ScenarioError,
    TagNotAllowed,
    load_yaml,
    read_text,
    untagged_document,
)

__all__ = ["load", "shape_of"]

Shape = Literal["ormock", "vcr"]

ORMOCK_SHAPE = ("`version: 1` and `interactions:`, each a `request:` with `method` and `path` "
                "and a `response:` (or `socket:`)")


def _is_ormock_document(data: Any) -> bool:
    if not (isinstance(data, Mapping) and "version" in data
            and isinstance(data.get("interactions"), list)):
        return False
    return all(isinstance(item, Mapping) and isinstance(item.get("request"), Mapping)
               and "path" in item["request"] and "uri" not in item["request"]
               for item in data["interactions"])


def _is_vcr_like(data: Any) -> bool:
    """vcrpy's shape written by a project's own serializer: each request has a ``uri`` (its
    body perhaps under another key, such as ``parsed_body``)."""
    return (isinstance(data, Mapping) and isinstance(data.get("interactions"), list)
            and bool(data["interactions"])
            and all(isinstance(item, Mapping) and isinstance(item.get("request"), Mapping)
                    and "uri" in item["request"] and "response" in item
                    for item in data["interactions"]))


def shape_of(data: Any) -> Shape | None:
    """``"vcr"``, ``"ormock"``, or None for parsed data that is neither kind of cassette. An
    empty ``interactions: []`` under ``version: 1`` with nothing else of vcrpy's (its files
    hold only those two keys, and ``metadata``) is vcrpy's."""
    if is_vcr_document(data) and (data["interactions"]
                                  or set(data) <= {"version", "interactions", "metadata"}):
        return "vcr"
    if _is_ormock_document(data):
        return "ormock"
    if _is_vcr_like(data):  # read by vcrpy, which says what it lacks
        return "vcr"
    return None


def _peek(text: str, file: str) -> Any:
    """The parsed document, or ``vcr`` for YAML that only vcrpy's loader reads (the Python
    tags vcrpy writes for tuples and file bodies, which no ormock cassette holds)."""
    if file.lower().endswith(".json"):
        try:
            return json.loads(text)
        except ValueError as error:
            raise CassetteError(f"not JSON: {error}", file=file) from None
    try:
        return load_yaml(text, file)[0]
    except TagNotAllowed as refused:
        # vcrpy writes Python tags (tuples, file bodies) that its own loader reads; an ormock
        # cassette (or anything not vcrpy's) never holds one: there it is refused at its line
        if (refused.tag.startswith("tag:yaml.org,2002:python/")
                and shape_of(untagged_document(text, file)) == "vcr"):
            return "vcr"
        raise CassetteError(refused.message, file=refused.file, line=refused.line,
                            key=refused.key) from None
    except ScenarioError as error:
        raise CassetteError(error.message, file=error.file, line=error.line,
                            key=error.key) from None


def load(path: str | PathLike[str], serializer: Any = None) -> Cassette:
    """Read a cassette file of either kind: ``origin`` says which (``"vcr"``: no timing, every
    offset 0, replayed unpaced). Neither shape is a ``CassetteError`` naming both.
    ``serializer``: a project's vcrpy serializer (``deserialize(text)``): the file is a vcrpy
    cassette written by it."""
    file = os.fspath(path)
    if serializer is not None:
        return from_vcr(file, serializer)
    try:
        text = read_text(file)
    except ScenarioError as error:
        raise CassetteError(error.message.replace("scenario", "cassette"), file=error.file,
                            line=error.line) from None
    data = _peek(text, file)
    shape = "vcr" if data == "vcr" else shape_of(data)
    if shape == "vcr":
        return from_vcr(file)
    if shape == "ormock":
        return parse_cassette(text, file)
    raise CassetteError(f"not a cassette: expected an ormock cassette ({ORMOCK_SHAPE}) or a "
                        f"vcrpy / pytest-recording cassette ({VCR_SHAPE})", file=file)
