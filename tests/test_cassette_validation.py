"""Issue 28, findings 5 and 6: cassettes that ``ormock check`` called ok and that broke a replay
(offsets a replay waits on for ever or fails converting, bodies on statuses that have none,
header bytes HTTP forbids, recorded framing headers) or the loader itself (a gzip bomb in a vcrpy
cassette). Each is refused at load, at its file, line and key, by every way a cassette gets in:
``ormock check``, ``ormock serve --cassette`` / ``OrmockServer(cassettes=...)``, the pytest
plugin's shared server and the admin API; framing headers are dropped and the writer frames
the body itself."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path

import httpx
import pytest
from raw_http import Connection, post
from vcr.persisters.filesystem import FilesystemPersister
from vcr.request import Request as VcrRequest
from vcr.serializers import yamlserializer

from ormock import OrmockServer
from ormock.cassette import Cassette, CassetteError, Interaction, RecordedRequest, load
from ormock.cassette.encoding import MAX_INFLATED, MIB, Inflater, TooLarge, inflate
from ormock.cassette.model import Body, RecordedResponse
from ormock.cli import main
from ormock.engine.replays import cassettes_in

REQUEST = b'{"model":"m","input":"hi"}'


def cassette_text(*, status: int = 200, headers: str = "content-type: application/json",
                  headers_at: str = "1", body_at: str = "2", end_at: str = "3",
                  body: str = "json: {ok: true}\n      style: compact") -> str:
    """An ormock cassette of one JSON answer: ``headers_at`` on line 11, ``body`` on 12."""
    return f"""version: 1
profile: openai
interactions:
- request:
    method: POST
    path: /v1/responses
    body: {{model: m, input: hi}}
  response:
    status: {status}
    headers: {{{headers}}}
    headers_at: {headers_at}
    body:
      at: {body_at}
      {body}
    ended: whole
    end_at: {end_at}
"""


# each broken cassette, the line and key its refusal names, and words of its message
BROKEN = {
    "infinite_headers_at": (dict(headers_at=".inf"), 11, "response.headers_at",
                            "inf is not an offset"),
    "nan_headers_at": (dict(headers_at=".nan"), 11, "response.headers_at",
                       "nan is not an offset"),
    "huge_headers_at": (dict(headers_at="1.0e+300"), 11, "response.headers_at",
                        "from 0 to 3600000 (one hour"),
    "huge_body_offset": (dict(body_at="1.0e+300"), 13, "response.body.at", "1e+300 is not"),
    "huge_end_at": (dict(end_at="1.0e+300"), 17, "response.end_at", "1e+300 is not"),
    "status_101": (dict(status=101), 9, "response.status", "a 1xx is informational"),
    "status_204_with_a_body": (dict(status=204), 12, "response.body",
                               "status 204 carries no body, but this answer has 11 bytes"),
    "status_304_with_a_body": (dict(status=304), 12, "response.body",
                               "status 304 carries no body"),
    "crlf_in_a_header_value": (dict(headers='x-a: "b\\r\\nx-injected: 1"'), 10,
                               "response.headers.x-a", "holds '\\r', which HTTP forbids"),
    "nul_in_a_header_value": (dict(headers='x-a: "b\\0c"'), 10, "response.headers.x-a",
                              "holds '\\x00'"),
    "space_in_a_header_name": (dict(headers='"x a": b'), 10, "response.headers.x a",
                               "is not an HTTP token"),
}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", list(BROKEN))
def test_finding5_broken_cassettes_are_refused_by_ormock_check(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    options, line, key, words = BROKEN[name]
    path = _write(tmp_path, name, cassette_text(**options))  # type: ignore[arg-type]
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:{line}: interactions[0].{key}: " in out and words in out


@pytest.mark.parametrize("name", list(BROKEN))
def test_finding5_broken_cassettes_are_refused_by_ormock_server(name: str,
                                                                tmp_path: Path) -> None:
    options, line, key, words = BROKEN[name]
    path = _write(tmp_path, name, cassette_text(**options))  # type: ignore[arg-type]
    with pytest.raises(CassetteError) as caught, OrmockServer(cassettes=[path], speed=0):
        pass
    assert f"{path}:{line}: interactions[0].{key}: " in str(caught.value)
    assert words in str(caught.value)


@pytest.mark.parametrize("name", list(BROKEN))
def test_finding5_broken_cassettes_are_refused_by_the_admin_api(
        name: str, base_url: str) -> None:
    options, line, key, words = BROKEN[name]
    admin = base_url.removesuffix("/v1") + "/_ormock/cassettes"
    answer = httpx.post(admin, content=cassette_text(**options),  # type: ignore[arg-type]
                        headers={"content-type": "application/yaml"},
                        params={"file": f"{name}.yaml"}, timeout=10)
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert f"{name}.yaml:{line}: interactions[0].{key}: " in message and words in message
    assert httpx.get(admin, timeout=10).json()["data"] == []  # nothing was loaded


def test_finding5_infinite_headers_at_is_refused_at_load_by_ormock_serve(
        tmp_path: Path) -> None:
    path = _write(tmp_path, "inf", cassette_text(headers_at=".inf"))
    done = subprocess.run([sys.executable, "-m", "ormock", "serve", "--port", "0",
                           "--cassette", str(path)], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 2
    assert f"{path}:11: interactions[0].response.headers_at: inf is not an offset" in done.stderr


def test_finding5_a_cassette_built_in_python_is_checked_too() -> None:
    request = RecordedRequest("POST", "/v1/responses", body={"model": "m", "input": "hi"})
    response = RecordedResponse(200, {"content-type": "application/json"},
                                headers_at=float("inf"), body=Body(json={}, style="compact"))
    cassette = Cassette((Interaction(request, response, line=4),), file="built.yaml")
    with pytest.raises(CassetteError, match=r"^built\.yaml:4: interactions\[0\]\.response"
                       r"\.headers_at: inf is not an offset"), OrmockServer(
                           cassettes=[cassette], speed=0):
        pass


def test_finding5_recorded_framing_headers_are_dropped_and_the_connection_stays_in_sync(
        tmp_path: Path) -> None:
    framing = ('content-type: application/json, transfer-encoding: chunked, '
               'content-length: "3", connection: close, keep-alive: "timeout=5"')
    text = cassette_text(headers=framing)
    two = text + text[text.index("- request:"):]  # the same exchange twice
    path = _write(tmp_path, "framing", two)
    (interaction, _) = load(path).interactions
    assert interaction.response is not None
    assert interaction.response.headers == {"content-type": "application/json"}
    with OrmockServer(cassettes=[path], speed=0) as server, \
            Connection("127.0.0.1", server.port) as connection:
        for _ in range(2):  # the second answer parses only if the first was framed right
            connection.send(post("/v1/responses", REQUEST))
            answer = connection.read_answer()
            assert (answer.status, answer.body) == (200, b'{"ok":true}')
            assert answer.header("content-length") == ["11"]
            assert answer.header("transfer-encoding") == answer.header("connection") == []


@pytest.mark.parametrize("status", [204, 304])
def test_finding5_an_empty_204_or_304_is_sent_with_no_length_and_keeps_the_connection(
        status: int, tmp_path: Path) -> None:
    text = cassette_text(status=status, body='raw: ""')
    path = _write(tmp_path, "empty", text + text[text.index("- request:"):])
    with OrmockServer(cassettes=[path], speed=0) as server, \
            Connection("127.0.0.1", server.port) as connection:
        for _ in range(2):
            connection.send(post("/v1/responses", REQUEST))
            answer = connection.read_answer()  # a content-length on a 204 is refused there
            assert (answer.status, answer.body, answer.header("content-length")) == (
                status, b"", [])


def _bomb(size: int) -> bytes:
    """``size`` zero bytes gzipped (about a thousandth of the size), made without holding them."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MIB)
    return b"".join(packer.compress(zeros) for _ in range(size // MIB)) + packer.flush()


def _vcr_cassette(path: Path, body: bytes, encoding: str = "gzip") -> Path:
    """A vcrpy cassette as vcrpy writes one recorded without ``decode_compressed_response``
    (the body a ``!!binary`` string)."""
    request = VcrRequest("POST", "https://api.openai.com/v1/responses", REQUEST,
                         {"content-type": "application/json"})
    response = {"status": {"code": 200, "message": "OK"},
                "headers": {"Content-Type": ["application/json"],
                            "Content-Encoding": [encoding]},
                "body": {"string": body}}
    FilesystemPersister.save_cassette(path, {"requests": [request], "responses": [response]},
                                      yamlserializer)
    return path


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bomb")
    return _vcr_cassette(folder / "bomb.yaml", _bomb(100 * MIB))  # 100 KB of gzip


def test_finding6_gzip_bomb_is_refused_by_ormock_check_in_bounded_memory(
        bomb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tracemalloc.start()
    try:
        status = main(["check", str(bomb)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    out = capsys.readouterr().out
    assert status == 1
    assert f"{bomb}:" in out and "interactions[0].response.body.string: interaction 1: " \
        "the gzip body inflates past 32 MiB (MAX_INFLATED)" in out
    line = int(out.split(f"{bomb}:", 1)[1].split(":", 1)[0])
    assert bomb.read_text().splitlines()[line - 1].strip().startswith("string:")
    assert peak < 2 * MAX_INFLATED  # the limit and what loading holds, never 100 MiB


def test_finding6_gzip_bomb_is_refused_by_ormock_server_and_the_plugin(
        bomb: Path) -> None:
    with pytest.raises(CassetteError, match="inflates past 32 MiB"), OrmockServer(
            cassettes=[bomb], speed=0):
        pass
    # what the pytest plugin reads a test's cassettes with, for its own server and before
    # sending them to a shared one (--ormock-url)
    with pytest.raises(CassetteError, match="inflates past 32 MiB"):
        cassettes_in(bomb)


def _gzip(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def test_finding6_gzip_and_deflate_within_the_bound_are_decoded(tmp_path: Path) -> None:
    body = b'{"id":"resp_1","object":"response"}'
    for encoding, packed in (("gzip", _gzip(body)), ("x-gzip", _gzip(body)),
                             ("deflate", zlib.compress(body))):
        cassette = load(_vcr_cassette(tmp_path / f"{encoding}.yaml", packed, encoding))
        response = cassette.interactions[0].response
        assert response is not None and response.body is not None
        assert response.body.json == {"id": "resp_1", "object": "response"}
        assert "content-encoding" not in response.headers


def test_finding6_the_decoder_stops_one_byte_past_its_limit() -> None:
    packed = _bomb(4 * MIB)
    assert inflate(packed, "gzip", limit=4 * MIB) == bytes(4 * MIB)
    with pytest.raises(TooLarge, match="inflates past 3 MiB"):
        inflate(packed, "x-gzip", limit=3 * MIB)
    inflater = Inflater("gzip", limit=MIB)

    def pieces() -> None:  # as the relay gets a body, a piece at a time
        for start in range(0, len(packed), 100):
            inflater.decompress(packed[start:start + 100])

    with pytest.raises(TooLarge):
        pieces()
    assert inflater.total == MIB + 1  # what it held: never more than the limit and a byte
