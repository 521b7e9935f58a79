"""vcrpy / pytest-recording cassettes: recorded by vcrpy itself of real traffic to a running
ormock server, read as they are (``ormock.cassette.load``), written back (``to_vcr``) and
replayed by vcrpy, imported as ormock cassettes with the secrets redacted."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import openai
import pytest
import vcr
from vcr.persisters.filesystem import FilesystemPersister
from vcr.request import Request as VcrRequest
from vcr.serializers import yamlserializer

from ormock.cassette import (
    Cassette,
    CassetteError,
    Interaction,
    RecordedRequest,
    Recording,
    from_vcr,
    load,
    load_cassette,
    save_cassette,
    to_vcr,
)
from ormock.cassette.fileformat import response_bytes
from ormock.cassette.model import SocketFrame, SocketSession
from ormock.cassette.replay import answer_frames
from ormock.cassette.schema import schema_text
from ormock.cassette.vcr import is_vcr_document
from ormock.cli import main
from ormock.protocol.sse import json_events, parse_sse

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-" + "proj-abcdefghijklmnopqrstuvwxyz012345"  # key-shaped: the secret scan knows it
REQUEST = {"model": "gpt-4o-mini", "input": "Tell me about ducks."}


def _sdk(base_url: str, api_key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)


def _record(path: Path, base_url: str, **options: Any) -> dict[str, Any]:
    """Traffic to the running server inside vcrpy's ``use_cassette``; what the clients saw."""
    seen: dict[str, Any] = {}
    with vcr.VCR(record_mode="once", **options).use_cassette(str(path)), _sdk(base_url) as sdk:
        seen["json"] = sdk.responses.create(**REQUEST)  # type: ignore[call-overload]
        seen["events"] = list(sdk.responses.create(**REQUEST, stream=True))  # type: ignore[call-overload]
        with httpx.Client(timeout=10) as http:
            with http.stream("POST", f"{base_url}/responses",
                             json={**REQUEST, "stream": True}) as streamed:
                seen["stream_headers"] = streamed.headers
                seen["stream_status"] = streamed.status_code
                seen["stream_bytes"] = b"".join(streamed.iter_raw())
            seen["models"] = http.get(f"{base_url}/models?limit=5")
    return seen


def _events(interaction: Interaction) -> list[dict[str, Any]]:
    assert interaction.response is not None and interaction.response.messages is not None
    return [m.event for m in interaction.response.messages if m.event is not None]


def test_a_vcrpy_recording_of_sdk_and_httpx_traffic_loads_as_the_clients_saw_it(
        tmp_path: Path, base_url: str) -> None:
    path = tmp_path / "cassette.yaml"
    seen = _record(path, base_url)
    prefix = urlsplit(base_url).path  # /tN/v1: the namespace the test got

    cassette = load(path)
    assert cassette.origin == "vcr" and cassette.file == str(path)
    assert cassette.upstream == f"http://{urlsplit(base_url).netloc}"
    plain, sdk_stream, raw_stream, models = cassette.interactions

    assert (plain.request.method, plain.request.path, plain.request.body) == (
        "POST", f"{prefix}/responses", REQUEST)
    assert sdk_stream.request.body == {**REQUEST, "stream": True}
    assert (models.request.method, models.request.path, models.request.query) == (
        "GET", f"{prefix}/models", "limit=5")
    assert plain.request.headers["authorization"] == f"Bearer {KEY}"  # in memory, as recorded
    assert "host" not in plain.request.headers and "content-length" not in plain.request.headers

    assert plain.response is not None and plain.response.body is not None
    assert plain.response.status == 200 and not plain.response.streamed
    assert plain.response.body.json == seen["json"].to_dict(mode="json")
    assert plain.response.headers["content-type"] == "application/json"
    assert "content-length" not in plain.response.headers  # a replay makes its own

    # the SSE body string split back into the events the SDK got, in order
    assert _events(sdk_stream) == [e.to_dict(mode="json") for e in seen["events"]]
    assert sdk_stream.response is not None and sdk_stream.response.messages is not None
    assert sdk_stream.response.messages[-1].done or _events(sdk_stream)[-1]["type"] == (
        "response.completed")

    # the raw stream: the very bytes, status and headers the client got
    response = raw_stream.response
    assert response is not None and response.streamed
    assert response_bytes(response) == seen["stream_bytes"]
    assert _events(raw_stream) == list(json_events(parse_sse(seen["stream_bytes"])))
    assert response.status == seen["stream_status"] == 200
    assert response.headers["content-type"] == seen["stream_headers"]["content-type"]
    assert response.headers["x-request-id"] == seen["stream_headers"]["x-request-id"]

    assert models.response is not None and models.response.body is not None
    assert models.response.body.json == seen["models"].json()

    # no timing: every offset 0, so a replay at any speed writes it unpaced
    for interaction in cassette.interactions:
        assert interaction.response is not None
        assert interaction.response.headers_at == 0 and interaction.response.end_at == 0
        assert interaction.response.chunks == ()
        assert {m.at for m in interaction.response.messages or ()} <= {0.0}
        frames = answer_frames(interaction.response, speed=1.0, timed=False)
        assert frames and all(frame.delay == 0 for frame in frames)


def test_vcrpy_json_cassettes_load_too(tmp_path: Path, base_url: str) -> None:
    path = tmp_path / "cassette.json"
    seen = _record(path, base_url, serializer="json")
    assert is_vcr_document(json.loads(path.read_text()))
    cassette = load(path)
    assert cassette.origin == "vcr" and len(cassette.interactions) == 4
    assert _events(cassette.interactions[1]) == [e.to_dict(mode="json") for e in seen["events"]]
    assert response_bytes(cassette.interactions[2].response) == seen["stream_bytes"]  # type: ignore[arg-type]


def _ormock_cassette(base_url: str) -> Cassette:
    """An ormock cassette with timing: the server's answers recorded chunk by chunk, a stream
    framed data-only with a comment between events, and a WebSocket session."""
    interactions = []
    with httpx.Client(timeout=10) as http:
        for body in ({**REQUEST, "stream": True}, REQUEST):
            request = RecordedRequest("POST", f"{urlsplit(base_url).path}/responses",
                                      headers={"authorization": f"Bearer {KEY}"}, body=body)
            recording = Recording(request)
            with http.stream("POST", f"{base_url}/responses", json=body) as answer:
                recording.answer(answer.status_code, list(answer.headers.multi_items()))
                for chunk in answer.iter_raw():
                    recording.chunk(chunk)
            interactions.append(recording.interaction())
    odd = Recording(RecordedRequest("POST", "/v1/responses", body={"model": "m", "input": "x"}))
    odd.answer(200, [("Content-Type", "text/event-stream"), ("X-Trace", "a"), ("X-Trace", "b")])
    odd.chunk(b'data: {"type":"response.created","sequence_number":0}\n\n: keep-alive\n\n')
    odd.chunk(b'data: {"type":"response.in_progress","sequence_number":1}\n\ndata: [DONE]\n\n')
    interactions.append(odd.interaction(ended="reset"))
    socket = Interaction(RecordedRequest("GET", "/v1/responses"), socket=SocketSession(
        (SocketFrame(0, "client", {"type": "response.create"}),), close_code=1000))
    return Cassette((*interactions, socket), upstream="http://127.0.0.1:1")


def test_an_ormock_cassette_survives_the_trip_through_vcrpy(tmp_path: Path,
                                                           base_url: str) -> None:
    saved = tmp_path / "ormock.yaml"
    save_cassette(_ormock_cassette(base_url), saved)
    original = load(saved)
    assert original.origin == "ormock"
    assert any(i.response is not None and i.response.chunks for i in original.interactions)

    out = tmp_path / "exported.yaml"
    warnings = to_vcr(original, out)
    assert len(warnings) == 2
    assert "interaction 4 (GET /v1/responses) is a WebSocket session" in warnings[1]
    assert "interaction 3" in warnings[0] and "reset" in warnings[0]
    assert is_vcr_document(yamlserializer.deserialize(out.read_text()))

    back = from_vcr(out)
    assert back.origin == "vcr" and back.upstream == "http://127.0.0.1:1"
    http_ones = [i for i in original.interactions if i.response is not None]
    assert len(back.interactions) == len(http_ones) == 3
    for before, after in zip(http_ones, back.interactions, strict=True):
        assert before.response is not None and after.response is not None
        assert after.request.body == before.request.body
        assert (after.request.method, after.request.target) == (
            before.request.method, before.request.target)
        assert response_bytes(after.response) == response_bytes(before.response)
        assert after.response.status == before.response.status
        assert after.response.headers == before.response.headers
        assert after.response.streamed == before.response.streamed
        assert after.request.headers == before.request.headers
    assert back.interactions[0].request.headers == {"authorization": "REDACTED"}
    assert back.interactions[2].response is not None
    assert back.interactions[2].response.headers["x-trace"] == ["a", "b"]
    assert back.interactions[2].response.style == "data"


def test_vcrpy_replays_an_exported_cassette_to_the_openai_sdk(tmp_path: Path,
                                                              base_url: str) -> None:
    recorded = tmp_path / "recorded.yaml"
    seen = _record(recorded, base_url)
    exported = tmp_path / "exported.yaml"
    # to another host: nothing listens there, so only vcrpy can answer
    assert to_vcr(load(recorded), exported, base_url="https://api.openai.com") == []
    replay_url = f"https://api.openai.com{urlsplit(base_url).path}"
    with vcr.VCR(record_mode="none").use_cassette(str(exported)) as played, \
            _sdk(replay_url, api_key="sk-other") as sdk:
        again = sdk.responses.create(**REQUEST)  # type: ignore[call-overload]
        events = list(sdk.responses.create(**REQUEST, stream=True))  # type: ignore[call-overload]
        assert played.play_count == 2
    assert again.to_dict(mode="json") == seen["json"].to_dict(mode="json")
    assert [e.to_dict(mode="json") for e in events] == [
        e.to_dict(mode="json") for e in seen["events"]]


def test_import_writes_an_ormock_cassette_with_the_secrets_redacted(
        tmp_path: Path, base_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "vcr.yaml"
    _record(source, base_url)
    assert KEY in source.read_text()  # vcrpy records Authorization unless told otherwise

    assert main(["cassette", "import", str(source)]) == 0
    out = tmp_path / "vcr.ormock.yaml"
    assert f"wrote {out} (4 interactions)" in capsys.readouterr().err
    text = out.read_text()
    assert KEY not in text and "authorization: REDACTED" in text
    imported, direct = load(out), load(source)
    assert imported.origin == "ormock" and "no timing" in (imported.recorded_with or "")
    for a, b in zip(imported.interactions, direct.interactions, strict=True):
        assert a.request.body == b.request.body
        assert a.response is not None and b.response is not None
        assert response_bytes(a.response) == response_bytes(b.response)

    assert main(["cassette", "import", str(out)]) == 2  # it is ormock's already
    assert "an ormock cassette already" in capsys.readouterr().err


def test_import_refuses_a_key_in_a_body_until_it_is_redacted(
        tmp_path: Path, base_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "vcr.yaml"
    body = {**REQUEST, "metadata": {"note": KEY}}
    with vcr.VCR(record_mode="once").use_cassette(str(source)), _sdk(base_url) as sdk:
        sdk.responses.create(**body)  # type: ignore[call-overload]
    out = tmp_path / "out.yaml"
    assert main(["cassette", "import", str(source), "-o", str(out)]) == 2
    assert "refusing to write" in capsys.readouterr().err and not out.exists()
    assert main(["cassette", "import", str(source), "-o", str(out),
                 "--redact-path", "metadata.note"]) == 0
    assert KEY not in out.read_text()
    assert load(out).interactions[0].request.body == {
        **REQUEST, "metadata": {"note": "REDACTED"}}


def test_export_on_the_command_line_names_what_vcrpy_cannot_hold(
        tmp_path: Path, base_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "c.yaml"
    save_cassette(_ormock_cassette(base_url), saved)
    assert main(["cassette", "export", str(saved), "--to", "vcr", "-o",
                 str(tmp_path / "v.json")]) == 0
    err = capsys.readouterr().err
    assert "warning: interaction 4 (GET /v1/responses) is a WebSocket session" in err
    assert len(json.loads((tmp_path / "v.json").read_text())["interactions"]) == 3
    assert main(["cassette", "export", str(saved), "--to", "vcr",
                 "--base-url", "http://h/v1"]) == 2
    assert "has a path" in capsys.readouterr().err
    assert main(["cassette", "export", str(saved), "--to", "vcr"]) == 0
    assert (tmp_path / "c.vcr.yaml").is_file()


def _vcrpy_writes(path: Path, headers: dict[str, list[str]], body: bytes) -> None:
    """A cassette written by vcrpy's own persister, as it records an answer it did not
    decode (``decode_compressed_response`` off)."""
    request = VcrRequest("POST", "https://api.openai.com/v1/responses",
                         json.dumps(REQUEST).encode(), {"content-type": "application/json"})
    response = {"status": {"code": 200, "message": "OK"}, "headers": headers,
                "body": {"string": body}}
    FilesystemPersister.save_cassette(path, {"requests": [request], "responses": [response]},
                                      yamlserializer)


def test_a_gzip_compressed_body_is_decoded(tmp_path: Path) -> None:
    stream = (b'event: response.created\ndata: {"type":"response.created","sequence_number":0}'
              b"\n\n")
    path = tmp_path / "gzip.yaml"
    _vcrpy_writes(path, {"Content-Type": ["text/event-stream"], "Content-Encoding": ["gzip"],
                         "Content-Length": ["99"]}, gzip.compress(stream))
    (interaction,) = load(path).interactions
    assert interaction.response is not None
    assert response_bytes(interaction.response) == stream
    assert interaction.response.headers == {"content-type": "text/event-stream"}
    assert _events(interaction) == [{"type": "response.created", "sequence_number": 0}]


@pytest.mark.skipif(importlib.util.find_spec("brotli") is not None
                    or importlib.util.find_spec("brotlicffi") is not None,
                    reason="with brotli installed vcrpy decodes br bodies")
def test_a_brotli_body_without_brotli_installed_says_so(tmp_path: Path) -> None:
    path = tmp_path / "br.yaml"
    _vcrpy_writes(path, {"content-type": ["application/json"], "content-encoding": ["br"]},
                  b"\x8b\x02\x80{}\x03")
    with pytest.raises(CassetteError, match=r"br-compressed .*install the brotli package"):
        load(path)


def test_load_tells_the_shapes_apart_and_names_both_otherwise(tmp_path: Path) -> None:
    neither = tmp_path / "neither.yaml"
    neither.write_text("version: 1\ninteractions:\n  - request: {method: GET}\n")
    with pytest.raises(CassetteError) as caught:
        load(neither)
    message = str(caught.value)
    assert str(neither) in message
    assert "ormock cassette (`version: 1`" in message and "`path`" in message
    assert "vcrpy / pytest-recording cassette" in message and "`body: {string}`" in message

    with pytest.raises(CassetteError, match="not a vcrpy cassette"):
        from_vcr(neither)
    with pytest.raises(CassetteError, match="cannot read the cassette file"):
        load(tmp_path / "missing.yaml")

    # vcrpy's Python tags: only its loader reads them, and the file is vcrpy's
    tagged = tmp_path / "tagged.yaml"
    tagged.write_text(
        "interactions:\n- request:\n    body: null\n    headers: {x-a: !!python/tuple [v]}\n"
        "    method: GET\n    uri: https://api.openai.com/v1/models\n"
        "  response:\n    body: {string: '{}'}\n    headers: {content-type: [application/json]}\n"
        "    status: {code: 200, message: OK}\nversion: 1\n")
    cassette = load(tagged)
    assert cassette.origin == "vcr"
    assert cassette.interactions[0].request.headers == {"x-a": "v"}

    ormock = tmp_path / "ormock.yaml"
    ormock.write_text("version: 1\ninteractions:\n  - request: {method: GET, path: /v1/models}\n"
                      "    response: {status: 200, body: {json: {}, style: compact}}\n")
    assert load(ormock).origin == "ormock"


@pytest.mark.parametrize(("where", "text"), [
    ("interactions[0].response.status", "version: 1\ninteractions:\n"
     "- request: {method: POST, path: /v1/responses}\n"
     "  response:\n    status: !!python/object/apply:os.system ['echo pwned']\n"),
    ("interactions[0].request", "version: 1\ninteractions:\n"
     "- request: !!python/name:os.system\n"),
    ("interactions[0].request.path", "version: 1\ninteractions:\n"
     "- request: {method: GET, path: !!str/x /v1/models}\n  response: {status: 200}\n"),
])
def test_a_tag_in_an_ormock_cassette_is_not_allowed_at_its_line(tmp_path: Path, where: str,
                                                                 text: str) -> None:
    """Once vcrpy's loader read any file with a Python tag, whose message said "delete it and
    re-record"; an ormock cassette (or a file of no cassette's shape) is refused at the tag."""
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "!!" in row)
    tag = text.split("!!", 1)[1].split()[0]
    for read in (load, load_cassette):
        with pytest.raises(CassetteError) as caught:
            read(path)
        assert str(caught.value).replace(str(path), "bad.yaml") == (
            f"bad.yaml:{line}: {where}: the YAML tag '!!{tag}' is not allowed: ormock reads "
            "plain YAML, never a Python object or any other tag; write the value without it")


VCR_REQUEST = "- request: {method: POST, uri: 'http://x/v1/responses', headers: {}, body: %s}\n"
VCR_RESPONSE = "  response: {status: {code: %s, message: OK}, headers: {}, body: {string: ''}}\n"


@pytest.mark.parametrize(("body", "code", "message"), [
    ("null", "abc", "bad.yaml:3: interactions[0].response.status.code: interaction 1: the status "
     "code 'abc' is not a number; write the HTTP status, such as 200"),
    ("!!python/object/apply:builtins.iter {args: [[1, 2]]}", "200",
     "bad.yaml:2: interactions[0].request.body: interaction 1: the body is not text or bytes; "
     "write it as a string, as vcrpy records it"),
])
def test_a_vcrpy_field_of_the_wrong_kind_is_named_at_its_line(
        tmp_path: Path, body: str, code: str, message: str) -> None:
    """A status code that is no number, or a body vcrpy's loader builds as an iterator of
    numbers: once a bare ValueError without the file, and a TypeError traceback."""
    path = tmp_path / "bad.yaml"
    path.write_text("interactions:\n" + VCR_REQUEST % body + VCR_RESPONSE % code
                    + "version: 1\n")
    with pytest.raises(CassetteError) as caught:
        load(path)
    assert str(caught.value).replace(str(path), "bad.yaml") == message


def test_the_shipped_cassette_schema_is_the_generated_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    shipped = ROOT / "ormock" / "cassette" / "cassette.schema.json"
    assert shipped.read_text() == schema_text(), (
        "ormock/cassette/cassette.schema.json is stale: regenerate it with "
        "`ormock cassette schema > ormock/cassette/cassette.schema.json` (make schema)")
    assert main(["cassette", "schema"]) == 0
    out = capsys.readouterr().out
    assert out == shipped.read_text()
    assert json.loads(out)["title"] == "ormock cassette"
