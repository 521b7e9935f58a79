"""vcrpy cassettes as projects keep them, served: a project's serializer, a folder with one
unreadable file, vcrpy's matching (``match_on``, null and empty alike where asked, multipart
part by part), Azure paths, a cassette picked by header, and misses that show where strings
differ."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from ormock import OrmockServer
from ormock.cassette import Cassette, CassetteMiss, Interaction, Player, RecordedRequest
from ormock.cassette.differences import body_differences, text_diff
from ormock.cassette.shape import load
from ormock.cassette.vcr import serializer_from
from ormock.commands.check import check_files
from ormock.engine.replays import CassetteSkipped, cassettes_in

ANSWER = {"id": "resp_1", "object": "response", "status": "completed", "output": []}


def _vcr(uri: str, body: object, answer: object = ANSWER) -> dict[str, object]:
    return {"request": {"method": "POST", "uri": uri, "body": json.dumps(body),
                        "headers": {"Content-Type": ["application/json"]}},
            "response": {"status": {"code": 200, "message": "OK"},
                         "headers": {"Content-Type": ["application/json"]},
                         "body": {"string": json.dumps(answer)}}}


def _write(path: Path, *interactions: dict[str, object]) -> Path:
    path.write_text(json.dumps({"version": 1, "interactions": list(interactions)}))
    return path


PARSED = '''
import json
import yaml


class Parsed:
    @staticmethod
    def serialize(cassette):
        return yaml.safe_dump(cassette)

    @staticmethod
    def deserialize(text):
        cassette = yaml.safe_load(text)
        for interaction in cassette["interactions"]:
            request = interaction["request"]
            request["body"] = json.dumps(request.pop("parsed_body"))
        return cassette
'''


@pytest.fixture
def parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cassette a project's serializer wrote (request bodies as ``parsed_body``)."""
    (tmp_path / "project_serializer.py").write_text(PARSED)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "parsed.yaml"
    path.write_text(textwrap.dedent("""\
        version: 1
        interactions:
        - request:
            method: POST
            uri: https://api.openai.com/v1/responses
            parsed_body: {model: m, input: hi}
            headers: {}
          response:
            status: {code: 200, message: OK}
            headers: {Content-Type: [application/json]}
            body: {string: '{"id": "resp_1", "object": "response", "output": []}'}
        """))
    yield path
    sys.modules.pop("project_serializer", None)


def test_a_project_serializer_reads_its_cassettes_and_check_tells_them_apart(
        parsed: Path) -> None:
    import argparse

    args = argparse.Namespace(profile=None, no_schema=True, vcr_serializer=None)
    [plain] = check_files([str(parsed)], args)
    assert plain["kind"] == "cassette" and not plain["ok"]
    assert "unknown key" not in plain["error"] and "--vcr-serializer" in plain["error"]
    args.vcr_serializer = "project_serializer:Parsed"
    [served] = check_files([str(parsed)], args)
    assert served["ok"] and served["interactions"] == 1
    cassette = load(parsed, serializer_from("project_serializer:Parsed"))
    assert cassette.interactions[0].request.body == {"model": "m", "input": "hi"}
    with pytest.raises(ValueError, match="has no serialize and deserialize"):
        serializer_from("json:dumps")


def test_one_unreadable_file_of_a_folder_is_named_and_the_rest_load(tmp_path: Path) -> None:
    _write(tmp_path / "a.json", _vcr("https://api.openai.com/v1/responses", {"input": "a"}))
    (tmp_path / "b.yaml").write_text("version: 1\ninteractions:\n- request: {method: GET}\n")
    with pytest.warns(CassetteSkipped, match=r"b\.yaml"):
        loaded = cassettes_in(tmp_path)
    assert [Path(c.file or "").name for c in loaded] == ["a.json"]


def test_vcrpy_matching_compares_what_match_on_names(tmp_path: Path) -> None:
    cassette = load(_write(tmp_path / "c.json",
                           _vcr("https://api.openai.com/v1/responses?x=1&y=2", {"input": "a"})))
    # vcrpy's default: method, scheme, host, port, path, query; the body is not compared
    assert Player.of(cassette).take("POST", "/v1/responses", "y=2&x=1", {"input": "b"},
                                    origin="https://api.openai.com:443")[0] == 0
    with pytest.raises(CassetteMiss, match=r"host: recorded api\.openai\.com, sent example\.com"):
        Player.of(cassette).take("POST", "/v1/responses", "x=1&y=2", {"input": "a"},
                                 origin="https://example.com")
    with_body = Cassette(cassette.interactions, origin="vcr",
                         match_on=("method", "path", "body"))
    with pytest.raises(CassetteMiss, match="input: recorded 'a', sent 'b'"):
        Player.of(with_body).take("POST", "/v1/responses", "", {"input": "b"})


def test_lenient_matching_takes_null_empty_and_absent_alike() -> None:
    recorded = RecordedRequest("POST", "/v1/responses", body={
        "input": "hi", "previous_response_id": None, "tools": [{"name": "f", "description": ""}]})
    sent = {"input": "hi", "tools": [{"name": "f", "description": None}]}
    strict = Cassette((Interaction(recorded),))
    with pytest.raises(CassetteMiss, match="previous_response_id: recorded None, not sent"):
        Player.of(strict).take("POST", "/v1/responses", "", sent)
    lenient = Cassette((Interaction(recorded),), match_lenient=True)
    assert Player.of(lenient).take("POST", "/v1/responses", "", sent)[0] == 0


def test_multipart_bodies_are_compared_part_by_part_boundaries_aside() -> None:
    def upload(boundary: str, content: str) -> str:
        return (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n"
                f"assistants\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                f"filename=\"a.txt\"\r\n\r\n{content}\r\n--{boundary}--\r\n")

    assert body_differences(upload("aaa111", "hello"), upload("bbb222", "hello")) == []
    [difference] = body_differences(upload("aaa111", "hello"), upload("bbb222", "hullo"))
    assert difference.startswith("(part)[1]: ") and "h\u2039e\u203allo" in difference


def test_a_long_string_is_shown_around_its_first_difference() -> None:
    head = "Always respond with a JSON object that's compatible with "
    shown = text_diff(head + "the schema below, and nothing else.",
                      head + "this schema below, and nothing else.")
    assert "compatible with th\u2039e\u203a schema" in shown
    assert "compatible with th\u2039is\u203a schema" in shown
    assert "(character 60)" in shown and not shown.startswith("recorded 'Always")


def test_azure_paths_and_a_cassette_picked_by_header_are_answered(tmp_path: Path) -> None:
    azure = _write(tmp_path / "azure.json",
                   _vcr("https://res.openai.azure.com/openai/v1/responses", {"input": "a"},
                        {**ANSWER, "id": "resp_azure"}))
    other = _write(tmp_path / "other.json",
                   _vcr("https://api.openai.com/v1/responses", {"input": "a"},
                        {**ANSWER, "id": "resp_other"}))
    with OrmockServer(cassettes=[azure, other]) as server, httpx.Client() as client:
        reply = client.post(f"{server.url}/openai/v1/responses", json={"input": "a"})
        assert reply.status_code == 200 and reply.json()["id"] == "resp_azure"
        picked = client.post(f"{server.url}/v1/responses", json={"input": "a"},
                             headers={"X-Ormock-Cassette": "other"})
        assert picked.json()["id"] == "resp_other"
        unknown = client.post(f"{server.url}/v1/responses", json={"input": "a"},
                              headers={"X-Ormock-Cassette": "nope"})
        assert unknown.status_code == 400
        assert "x-ormock-cassette: nope names no loaded cassette; loaded: azure.json, " \
            "other.json" in unknown.json()["error"]["message"]


def test_serve_gives_each_cassette_of_a_folder_a_namespace(tmp_path: Path) -> None:
    from tests.stores import serve

    _write(tmp_path / "first test.json",
           _vcr("https://api.openai.com/v1/responses", {"input": "a"}, {**ANSWER, "id": "r1"}))
    _write(tmp_path / "second.json",
           _vcr("https://api.openai.com/v1/responses", {"input": "a"}, {**ANSWER, "id": "r2"}))
    with serve("--cassette", str(tmp_path), "--cassette-namespaces") as served, \
            httpx.Client() as client:
        root = served.base_url.removesuffix("/v1")
        assert client.post(f"{root}/second/v1/responses", json={}).json()["id"] == "r2"
        assert client.post(f"{root}/first-test/v1/responses", json={}).json()["id"] == "r1"
        # one namespace per cassette: the first test's answer is not the second's to give
        assert client.post(f"{root}/second/v1/responses", json={}).status_code == 400


def test_a_chat_completions_stream_is_served_as_its_data_lines(tmp_path: Path) -> None:
    # Chat Completions chunks have no `type`, so no `event:` line: loading the cassette, and
    # `ormock check` of the ormock cassette it imports to, framed them as Responses events.
    chunks = [{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
              for word in ("Hello", " there")]
    stream = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    cassette = _write(tmp_path / "chat.json", {
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                    "body": json.dumps({"model": "m", "stream": True}), "headers": {}},
        "response": {"status": {"code": 200, "message": "OK"},
                     "headers": {"Content-Type": ["text/event-stream; charset=utf-8"]},
                     "body": {"string": stream}}})
    assert [m.event for m in load(cassette).interactions[0].response.messages][:2] == chunks
    with OrmockServer(cassettes=[cassette]) as server, httpx.Client() as client:
        reply = client.post(f"{server.url}/v1/chat/completions",
                            json={"model": "m", "stream": True})
        assert reply.status_code == 200 and reply.text == stream
    # by hand, as an ormock cassette (the default style): checked, not a traceback
    hand = tmp_path / "hand.yaml"
    hand.write_text("version: 1\ninteractions:\n"
                    "- request: {method: POST, path: /v1/chat/completions}\n"
                    "  response:\n    status: 200\n    headers: {content-type: text/event-stream}\n"
                    f"    events:\n    - {{at: 0, event: {json.dumps(chunks[0])}}}\n"
                    "    - {at: 0, done: true}\n    ended: whole\n")
    args = argparse.Namespace(profile=None, no_schema=False, vcr_serializer=None)
    [checked] = check_files([str(hand)], args)
    assert checked["kind"] == "cassette" and "a string 'type'" in json.dumps(checked)
