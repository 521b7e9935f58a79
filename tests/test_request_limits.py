"""What a request's headers may cost, and refusals made before a body comes (issue 28, the
outside probe's findings 3 and 7): one test per finding, named after it, against a real
``OrmockServer`` and, where the finding is about bytes on the wire, a raw socket."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from raw_http import answer_to
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from ormock import Limits, OrmockServer
from ormock.engine.journal import ENTRY_FIELDS, entry_size
from ormock.protocol.errors import OpenResponsesError

_WAIT = 5.0  # seconds a refusal may take to come back (it comes at once: no body is awaited)
_LIMIT = 64 * 1024  # the default --max-header-bytes
# 70,000 bytes of headers, past the default limit, in lines of 7,000 (the websockets library
# refuses a line past 8 KiB itself, with a 400 of its own)
_PADS = {f"x-pad-{n}": "p" * (7000 - len(f"x-pad-{n}")) for n in range(10)}
_PAD_LINES = b"".join(b"%s: %s\r\n" % (k.encode(), v.encode()) for k, v in _PADS.items())


def _answer(server: OrmockServer, head: bytes, body: bytes = b"") -> bytes:
    """What the server answers a request of which only ``head`` and ``body`` were sent."""
    return answer_to(server.host, server.port, head + body, _WAIT)


def _error(answer: bytes) -> tuple[int, dict[str, Any]]:
    head, body = answer.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ", 2)[1])
    error = json.loads(body)
    assert set(error) == {"error"}, error
    return status, error["error"]


def _same(answer: bytes) -> bytes:
    """An answer with its date left out (the one thing two servers' answers may differ in)."""
    return re.sub(rb"\r\ndate: [^\r]*\r\n", b"\r\ndate: -\r\n", answer)


@pytest.fixture
def server() -> Iterator[OrmockServer]:
    with OrmockServer(seed=0) as running:
        yield running


# --- finding 3: a journal entry's size counts its headers; a request's headers are capped


def test_finding3_header_bytes_count_toward_the_journal_cap() -> None:
    pad = "h" * 60_000  # within the default limit on headers
    with OrmockServer(seed=0, limits=Limits(journal_bytes=500_000)) as running, \
            httpx.Client() as client:
        for n in range(40):
            response = client.post(f"{running.base_url}/responses",
                                   json={"model": "m", "input": f"request {n}"},
                                   headers={"x-pad": pad})
            assert response.status_code == 200
        journal = running.engine().journal
        assert journal.bytes <= 500_000 and journal.dropped >= 30
        assert journal.bytes == sum(map(entry_size, journal))
        assert all(entry_size(entry) > 60_000 for entry in journal)


def test_finding3_an_entrys_answer_counts_toward_the_journal_cap() -> None:
    from ormock import Engine

    engine = Engine(limits=Limits(journal_bytes=100 * ENTRY_FIELDS))
    engine.respond({"model": "m", "input": "a stream", "stream": True}, {})
    engine.respond({"model": "m", "input": "again"}, {"x-note": "n" * 300})
    with pytest.raises(OpenResponsesError):
        engine.respond({"model": "ormock:no-such-scenario", "input": "x"}, {})
    streamed = engine.journal[0]
    assert streamed.sent is not None and len(streamed.sent.types) > 3
    assert entry_size(streamed) > ENTRY_FIELDS + 24 * len(streamed.sent.types)
    assert engine.journal[-1].error is not None
    # each entry counted as it ended, answer and error in it
    assert engine.journal.bytes == sum(map(entry_size, engine.journal))


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/v1/responses"),
    ("POST", "/space/v1/responses"),
    ("POST", "/v1/responses/compact"),
    ("GET", "/v1/models"),
    ("GET", "/v1/responses/resp_nope"),
    ("GET", "/_ormock/journal"),  # the admin API
    ("POST", "/_ormock/scenarios"),
])
def test_finding3_oversized_headers_are_431(server: OrmockServer, method: str,
                                             path: str) -> None:
    head = (b"%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n" % (method.encode(), path.encode(), _PAD_LINES))
    answer = _answer(server, head, b"{" if method == "POST" else b"")
    status, error = _error(answer)
    assert status == 431 and b" 431 Request Header Fields Too Large\r\n" in answer
    assert error["code"] == error["type"] == "request_headers_too_large"
    assert error["param"] == "headers" and "--max-header-bytes" in error["message"]
    assert f"limit of {_LIMIT} bytes" in error["message"] and b"\r\nx-request-id: " in answer
    assert httpx.get(f"{server.url}/v1/models").status_code == 200  # still serving


def test_finding3_headers_up_to_the_limit_pass(server: OrmockServer) -> None:
    host = b"127.0.0.1"
    value = b"v" * (_LIMIT - len(b"host") - len(host) - len(b"x-pad"))  # exactly the limit

    def models(pad: bytes) -> int:
        answer = _answer(server, b"GET /v1/models HTTP/1.1\r\nHost: %s\r\nX-Pad: %s\r\n\r\n"
                         % (host, pad))
        return int(answer.split(b" ", 2)[1])

    assert models(value) == 200 and models(value + b"v") == 431


def test_finding3_oversized_headers_refuse_a_websocket_upgrade(server: OrmockServer) -> None:
    url = f"ws://{server.host}:{server.port}/v1/responses"
    with pytest.raises(InvalidStatus) as refused:
        connect(url, additional_headers=_PADS, open_timeout=_WAIT)
    response = refused.value.response
    assert response.status_code == 431
    error = json.loads(response.body)["error"]
    assert error["code"] == "request_headers_too_large" and error["param"] == "headers"
    with connect(url, additional_headers={"x-pad": "p" * 100}, open_timeout=_WAIT):
        pass  # within the limit: accepted


# --- finding 7: a create its headers refuse is answered before its body comes


def _refused(head: bytes, body: bytes) -> bytes:
    """The answer of a fresh server to a first request of which only ``head`` and ``body`` are
    sent (the rest of its body never comes)."""
    with OrmockServer(seed=0) as running:
        return _same(_answer(running, head, body))


def test_finding7_declared_oversize_body_is_413_at_once() -> None:
    head = (b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            b"\r\nContent-Length: 99999999999\r\n\r\n")
    status, error = _error(_refused(head, b"{"))
    assert status == 413 and error["code"] == "request_too_large" and error["param"] == "body"
    assert "--max-body" in error["message"]


def test_finding7_wrong_content_type_is_415_at_once() -> None:
    head = (b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
            b"Content-Length: 2000\r\n\r\n")
    status, error = _error(_refused(head, b"0123456789"))
    assert status == 415 and error["code"] == "unsupported_content_type"
    assert error["param"] == "content-type" and "'text/plain'" in error["message"]



def test_a_shared_journal_is_capped_with_the_headers_it_keeps(tmp_path: Path) -> None:
    # (a guard, not a finding: the store counts each entry as the bytes it keeps, headers in)
    from ormock import Engine

    engine = Engine(store=f"sqlite:{tmp_path / 'shared.db'}", shared=True,
                    limits=Limits(store_bytes=1_000_000))
    for n in range(30):
        engine.respond({"model": "m", "input": f"request {n}"}, {"x-pad": "h" * 60_000})
    kept = engine.backend.list("journal", limit=100)
    assert 1 <= len(kept) < 30 and sum(len(value) for _, value in kept) <= 1_000_000
    assert all(len(value) > 60_000 for _, value in kept)
