"""Cassette files: YAML, checked at load against the shipped schema (mistakes name file, line and
key), written so a person can read and edit them: events and JSON bodies as mappings, never an
escaped blob; offsets in milliseconds; defaults left out.

Only the bounded safe YAML loader of ``ormock.scenario.source`` reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import yaml

from ormock.cassette import framing
from ormock.cassette.model import (
    Body,
    Cassette,
    Ended,
    Headers,
    Interaction,
    Message,
    RecordedRequest,
    RecordedResponse,
    SocketFrame,
    SocketSession,
)
from ormock.cassette.schema import validate
from ormock.cassette.validation import CassetteError, checked
from ormock.protocol.types import Json
from ormock.scenario.source import Lines, ScenarioError, load_yaml, read_text

__all__ = ["CassetteError", "dump_cassette", "load_cassette", "parse_cassette", "to_document"]


def _ms(value: float) -> float | int:
    rounded = round(value, 3)
    return int(rounded) if rounded == int(rounded) else rounded


def _request_doc(request: RecordedRequest) -> Json:
    doc: Json = {"method": request.method, "path": request.path}
    if request.query:
        doc["query"] = request.query
    if request.headers:
        doc["headers"] = dict(request.headers)
    if request.body is not None:
        doc["body"] = request.body
    if request.text is not None:
        doc["text"] = request.text
    return doc


def _message_doc(message: Message) -> Json:
    doc: Json = {"at": _ms(message.at)}
    if message.event is not None:
        doc["event"] = message.event
    if message.done:
        doc["done"] = True
    if message.raw is not None:
        doc["raw"] = message.raw
    return doc


def _body_doc(body: Body) -> Json:
    doc: Json = {"at": _ms(body.at)}
    if body.style is not None:
        doc["json"] = body.json
        doc["style"] = body.style
    elif body.json is not None:
        doc["json"] = body.json
    for name in ("raw", "binary"):
        if getattr(body, name) is not None:
            doc[name] = getattr(body, name)
    return doc


def _response_doc(response: RecordedResponse) -> Json:
    doc: Json = {"status": response.status, "headers": dict(response.headers),
                 "headers_at": _ms(response.headers_at)}
    if response.messages is not None:
        if response.style != "event+data":
            doc["style"] = response.style
        doc["events"] = [_message_doc(m) for m in response.messages]
    if response.body is not None:
        doc["body"] = _body_doc(response.body)
    if response.chunks:
        doc["chunks"] = [[_ms(at), size] for at, size in response.chunks]
    doc["ended"] = response.ended
    doc["end_at"] = _ms(response.end_at)
    return doc


def _socket_doc(session: SocketSession) -> Json:
    frames: list[Json] = []
    for frame in session.frames:
        item: Json = {"at": _ms(frame.at), "from": frame.sender}
        if frame.event is not None:
            item["event"] = frame.event
        if frame.text is not None:
            item["text"] = frame.text
        frames.append(item)
    doc: Json = {"frames": frames}
    if session.close_code is not None or session.closed_by is not None:
        close: Json = {"at": _ms(session.close_at)}
        if session.close_code is not None:
            close["code"] = session.close_code
        if session.closed_by is not None:
            close["by"] = session.closed_by
        doc["close"] = close
    return doc


def to_document(cassette: Cassette) -> Json:
    """The cassette as the mapping its file holds."""
    doc: Json = {"version": cassette.version, "profile": cassette.profile}
    for name in ("upstream", "recorded_at", "recorded_with"):
        if getattr(cassette, name) is not None:
            doc[name] = getattr(cassette, name)
    interactions: list[Json] = []
    for interaction in cassette.interactions:
        item: Json = {"request": _request_doc(interaction.request)}
        if interaction.response is not None:
            item["response"] = _response_doc(interaction.response)
        if interaction.socket is not None:
            item["socket"] = _socket_doc(interaction.socket)
        interactions.append(item)
    doc["interactions"] = interactions
    return doc


class _Dumper(yaml.SafeDumper):
    """Block style, keys in their order, text with line breaks as literal blocks where YAML
    can keep them exactly."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # the emitter falls back to a quoted scalar where a literal block could not keep the text
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump_cassette(cassette: Cassette) -> str:
    """The YAML text of a cassette (which ``parse_cassette`` reads back equal)."""
    return yaml.dump(to_document(cassette), Dumper=_Dumper, sort_keys=False,
                     allow_unicode=True, width=100_000, default_flow_style=None)


def _headers(doc: Any) -> Headers:
    return {str(k).lower(): v for k, v in (doc or {}).items()}


def _request(doc: Json) -> RecordedRequest:
    return RecordedRequest(method=doc["method"], path=doc["path"], query=doc.get("query", ""),
                           headers=_headers(doc.get("headers")), body=doc.get("body"),
                           text=doc.get("text"))


def _body(doc: Json) -> Body:
    raw, binary, style = doc.get("raw"), doc.get("binary"), doc.get("style")
    return Body(json=doc.get("json"), style=None if raw is not None else style, raw=raw,
                binary=binary, at=float(doc.get("at", 0)))


def _response(doc: Json, lines: Lines, where: tuple[str | int, ...]) -> RecordedResponse:
    messages = None
    if "events" in doc:
        messages = tuple(Message(at=float(m["at"]), event=m.get("event"),
                                 done=bool(m.get("done", False)), raw=m.get("raw"))
                         for m in doc["events"])
    body = _body(doc["body"]) if "body" in doc else None
    if messages is not None and body is not None:
        raise lines.error("an answer has either events (a stream) or a body, not both",
                          (*where, "body"))
    chunks = tuple((float(at), int(size)) for at, size in doc.get("chunks", ()))
    response = RecordedResponse(
        status=doc["status"], headers=_headers(doc.get("headers")),
        headers_at=float(doc.get("headers_at", 0)), messages=messages, body=body,
        chunks=chunks, ended=cast(Ended, doc.get("ended", "whole")),
        end_at=float(doc.get("end_at", 0)), style=doc.get("style", "event+data"))
    if chunks:
        size = len(response_bytes(response))
        written = sum(n for _, n in chunks)
        if written != size:
            raise lines.error(
                f"the chunks add up to {written} bytes but the body is {size}: the body was "
                "edited; delete `chunks:` to write each event at its `at`", (*where, "chunks"))
    return response


def response_bytes(response: RecordedResponse) -> bytes:
    """The exact body bytes of a recorded answer."""
    if response.messages is not None:
        return framing.joined(response.messages, response.style)
    if response.body is not None:
        return framing.body_bytes(response.body)
    return b""


def _socket(doc: Json) -> SocketSession:
    frames = tuple(SocketFrame(at=float(f["at"]), sender=f["from"], event=f.get("event"),
                               text=f.get("text")) for f in doc["frames"])
    close = doc.get("close") or {}
    return SocketSession(frames, close_code=close.get("code"), closed_by=close.get("by"),
                         close_at=float(close.get("at", 0)))


def parse_cassette(text: str, file: str | None = None) -> Cassette:
    """A cassette from its YAML text; a mistake is a ``CassetteError`` at file:line."""
    try:
        data, lines = load_yaml(text, file)
        if not isinstance(data, dict):
            raise lines.error("a cassette is a mapping with `version:` and `interactions:`")
        validate(data, lines)
    except CassetteError:
        raise
    except ScenarioError as error:
        raise CassetteError(error.message, file=error.file, line=error.line,
                            key=error.key) from None
    interactions = []
    for index, doc in enumerate(data["interactions"]):
        where: tuple[str | int, ...] = ("interactions", index)
        try:
            response = (_response(doc["response"], lines, (*where, "response"))
                        if "response" in doc else None)
        except ScenarioError as error:
            raise CassetteError(error.message, file=error.file, line=error.line,
                                key=error.key) from None
        interactions.append(Interaction(
            request=_request(doc["request"]), response=response,
            socket=_socket(doc["socket"]) if "socket" in doc else None,
            line=lines.line(where)))
    # what the schema cannot say (offsets, statuses, headers): refused here, at file:line
    return checked(Cassette(tuple(interactions), version=data["version"],
                            profile=data.get("profile", "openai"),
                            upstream=data.get("upstream"), recorded_at=data.get("recorded_at"),
                            recorded_with=data.get("recorded_with"), file=file), lines)


def load_cassette(path: str | Path) -> Cassette:
    """Read an ormock cassette file (``ormock.cassette.load`` also tells vcrpy's apart)."""
    try:
        text = read_text(path)
    except ScenarioError as error:
        raise CassetteError(error.message.replace("scenario", "cassette"),
                            file=error.file, line=error.line) from None
    return parse_cassette(text, str(path))
