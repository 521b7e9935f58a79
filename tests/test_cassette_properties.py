"""Issue 28, findings 5 and 6, as a property: whatever a cassette holds (offsets infinite, NaN,
huge or negative; any status with or without a body; header names and values with CR, LF, NUL,
spaces, or the headers that frame a connection; gzip bodies small or inflating past the bound;
an answer that ends whole or closed), loading it either refuses it at ``file:line`` or replays
it as well-formed HTTP/1.1: two requests on one keep-alive connection to a real
``OrmockServer`` get two answers a strict parser reads (``raw_http``), with the recorded status
and bytes. Every read has a socket timeout; nothing asserts a wall-clock time.

ormock's own cassettes go in through the admin API, vcrpy's through ``ormock.cassette.load``
and ``Engine.use_cassette``; one server (``speed=0``) serves every example, each in a fresh
namespace.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import re
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from raw_http import Connection, post
from vcr.persisters.filesystem import FilesystemPersister
from vcr.request import Request as VcrRequest
from vcr.serializers import yamlserializer

from ormock import OrmockServer
from ormock.cassette import CassetteError, load, parse_cassette
from ormock.cassette.encoding import MAX_INFLATED, MIB
from ormock.cassette.fileformat import response_bytes
from ormock.cassette.model import Cassette

REQUEST = {"model": "m", "input": "hi"}
RAW_REQUEST = json.dumps(REQUEST, separators=(",", ":")).encode()
_namespaces = itertools.count()


def _gzip(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def _bomb() -> bytes:
    """A little past the bound in zeros, gzipped (about 34 KB), made a MiB at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MIB)
    return b"".join(packer.compress(zeros) for _ in range(MAX_INFLATED // MIB + 1)) \
        + packer.flush()


BOMB = _bomb()
EVENTS = [{"type": "response.created", "sequence_number": 0},
          {"type": "response.in_progress", "sequence_number": 1}]

offsets = st.one_of(st.floats(0, 20), st.sampled_from(
    [math.inf, -math.inf, math.nan, 1e300, -1.0, 3_600_000.0, 3_600_000.5]))
statuses = st.sampled_from([100, 101, 103, 200, 201, 204, 304, 400, 429, 500, 503])
header_names = st.sampled_from([
    "content-type", "x-a", "x a", "x:a", "x\tb", "content-length", "transfer-encoding",
    "connection", "keep-alive", "te", "trailer", "upgrade", "proxy-connection",
    "content-encoding"])
header_values = st.one_of(
    st.sampled_from(["b", "chunked", "3", "999", "close", "gzip", "b\r\nx-injected: 1",
                     "b\nc", "b\rc", "b\0c", "b\x7fc", "é", "€", " b ", ""]),
    st.text(st.characters(codec="latin-1"), max_size=8))
bodies = st.sampled_from(["none", "json", "events", "gzip", "bomb"])
# what a replay can send: framing headers included (dropped at load), no bomb in a vcrpy one
sound_offsets = st.floats(0, 3_600_000)
sound_names = st.sampled_from(["content-type", "x-a", "content-length", "transfer-encoding",
                               "connection", "keep-alive", "te", "upgrade"])
sound_values = st.sampled_from(["b", "chunked", "3", "close", "text/plain", " b ", "é", ""])


@st.composite
def responses(draw: st.DrawFn) -> dict[str, Any]:
    """What one recorded answer holds, before it is written in either format: half of them
    sound (each part one a replay can send), half drawn from everything."""
    sound = draw(st.booleans())
    at = sound_offsets if sound else offsets
    status = draw(st.sampled_from([200, 201, 204, 304, 429, 500]) if sound else statuses)
    body = draw(bodies)
    if sound and (status in (204, 304) or body == "bomb"):
        body = "none"
    names, values = (sound_names, sound_values) if sound else (header_names, header_values)
    return {"status": status, "body": body,
            "headers": draw(st.dictionaries(names, values, max_size=3)),
            "ended": draw(st.sampled_from(["whole", "whole", "closed"])),
            "headers_at": draw(at), "at": draw(at), "end_at": draw(at),
            "chunks": draw(st.booleans()), "chunk_at": draw(at)}


def _body_bytes(kind: str) -> bytes:
    if kind == "json":
        return b'{"ok":true}'
    if kind == "gzip":
        return _gzip(b'{"id":"resp_1","object":"response"}')
    return BOMB if kind == "bomb" else b""


def ormock_text(answer: dict[str, Any]) -> str:
    """An ormock cassette of the same exchange twice."""
    response: dict[str, Any] = {"status": answer["status"], "headers": answer["headers"],
                                "headers_at": answer["headers_at"]}
    kind, size = answer["body"], 0
    if kind == "events":
        response["events"] = [{"at": answer["at"], "event": e} for e in EVENTS]
    elif kind == "json":
        response["body"] = {"at": answer["at"], "json": {"ok": True}, "style": "compact"}
        size = 11
    elif kind in ("gzip", "bomb"):
        data = _body_bytes(kind)
        response["body"] = {"at": answer["at"], "binary": base64.b64encode(data).decode()}
        size = len(data)
    if answer["chunks"] and size:
        response["chunks"] = [[answer["chunk_at"], size]]
    response.update(ended=answer["ended"], end_at=answer["end_at"])
    interaction = {"request": {"method": "POST", "path": "/v1/responses", "body": REQUEST},
                   "response": response}
    return yaml.safe_dump({"version": 1, "profile": "openai",
                           "interactions": [interaction, interaction]}, sort_keys=False)


def vcr_file(answer: dict[str, Any], folder: Path) -> Path:
    """A vcrpy cassette of the same exchange twice, as vcrpy's persister writes it."""
    kind = answer["body"]
    body = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in EVENTS) \
        if kind == "events" else _body_bytes(kind)
    headers = {name: [value] for name, value in answer["headers"].items()}
    if kind == "events":
        headers["content-type"] = ["text/event-stream"]
    if kind in ("gzip", "bomb"):
        headers["content-encoding"] = ["gzip"]
    request = VcrRequest("POST", "https://api.openai.com/v1/responses", RAW_REQUEST,
                         {"content-type": "application/json"})
    response = {"status": {"code": answer["status"], "message": "X"}, "headers": headers,
                "body": {"string": body}}
    path = folder / "prop.yaml"
    FilesystemPersister.save_cassette(path, {"requests": [request, request],
                                             "responses": [response, response]},
                                      yamlserializer)
    return path


@pytest.fixture(scope="module")
def server() -> Iterator[OrmockServer]:
    with OrmockServer(speed=0) as running:
        yield running


def _refused_at_a_line(message: str, file: str) -> None:
    assert re.search(re.escape(file) + r":\d+: ", message), message


def _replayed(server: OrmockServer, namespace: str, cassette: Cassette) -> None:
    """Two requests on one connection get the recorded answer twice, each well-formed."""
    response = cassette.interactions[0].response
    assert response is not None
    expected = response_bytes(response)
    with Connection("127.0.0.1", server.port, timeout=5.0) as connection:
        for _ in range(2):
            connection.send(post(f"/{namespace}/v1/responses", RAW_REQUEST))
            answer = connection.read_answer()
            assert answer.status == response.status
            if response.ended != "whole":  # the recorded drop: the connection ends, in time
                assert expected.startswith(answer.body)
                assert connection.ends()
                return
            assert answer.complete and answer.body == expected


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=responses(), kind=st.sampled_from(["ormock", "vcr"]))
def test_findings5_and_6_a_cassette_is_refused_at_a_line_or_replayed_well_formed(
        server: OrmockServer, answer: dict[str, Any], kind: str) -> None:
    namespace = f"p{next(_namespaces)}"
    server.namespaces.open(namespace)
    if kind == "ormock":
        text = ormock_text(answer)
        loaded = httpx.post(f"{server.url}/{namespace}/_ormock/cassettes", content=text,
                            headers={"content-type": "application/yaml"},
                            params={"file": "prop.yaml"}, timeout=10)
        if loaded.status_code == 400:
            _refused_at_a_line(loaded.json()["error"]["message"], "prop.yaml")
            event("ormock: refused")
            return
        assert loaded.status_code == 201, loaded.text
        _replayed(server, namespace, parse_cassette(text, "prop.yaml"))
        event(f"ormock: replayed, {answer['ended']}")
        return
    with tempfile.TemporaryDirectory() as folder:
        path = vcr_file(answer, Path(folder))
        try:
            cassette = load(path)
        except CassetteError as error:
            _refused_at_a_line(str(error), str(path))
            event("vcr: refused")
            return
    server.engine(namespace).use_cassette(cassette)
    _replayed(server, namespace, cassette)
    event("vcr: replayed")
