"""The recorder's cassette file: its text is the one ``dump_cassette`` gives for the whole
cassette, interactions in request order, a refused interaction left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from ormock.cassette import Redaction, SecretFound, dump_cassette, load_cassette
from ormock.cassette.model import (
    Body,
    Interaction,
    Message,
    RecordedRequest,
    RecordedResponse,
    SocketFrame,
    SocketSession,
)
from ormock.server.recorder_file import CassetteFile, check_name, default_name

STREAM = Interaction(
    RecordedRequest("POST", "/v1/responses", headers={"authorization": "Bearer sk-x"},
                    body={"model": "m", "input": "line one\nline two", "stream": True}),
    RecordedResponse(200, {"content-type": "text/event-stream"}, 1.5, messages=(
        Message(2.0, event={"type": "response.created", "sequence_number": 0}),
        Message(3.0, raw=": a comment\n\n"),
        Message(4.0, done=True)), ended="closed", end_at=5.0))
JSON = Interaction(
    RecordedRequest("GET", "/v1/models", query="limit=2"),
    RecordedResponse(429, {"retry-after": "1", "x-ratelimit-a": ["1", "2"]}, 0.5,
                     body=Body(json={"error": {"message": "slow down"}}, style="compact",
                               at=0.6), end_at=0.7))
SOCKET = Interaction(
    RecordedRequest("GET", "/v1/responses"),
    socket=SocketSession((SocketFrame(1.0, "client", {"type": "response.create"}),
                          SocketFrame(2.0, "server", text="not json")), 1000, "client", 3.0))


def test_the_file_is_what_dump_cassette_gives(tmp_path: Path) -> None:
    file = CassetteFile(tmp_path / "c.yaml", upstream="https://user:pw@api.example.com/v1")
    file.create()
    empty = load_cassette(file.path)
    assert empty.interactions == () and empty.upstream == "https://api.example.com/v1"
    for sequence, interaction in ((2, SOCKET), (0, STREAM), (1, JSON)):  # finished in any order
        file.add(sequence, interaction)
    text = file.path.read_text(encoding="utf-8")
    assert text == dump_cassette(file._meta(file.interactions))
    loaded = load_cassette(file.path)
    assert [i.request.path for i in loaded.interactions] == ["/v1/responses", "/v1/models",
                                                              "/v1/responses"]
    assert loaded.interactions[0].request.headers["authorization"] == "REDACTED"
    assert loaded.interactions[0].request.body == STREAM.request.body
    assert loaded.interactions[2].socket == SOCKET.socket
    assert loaded.recorded_with is not None and loaded.recorded_with.startswith("ormock ")


def test_a_refused_interaction_changes_nothing(tmp_path: Path) -> None:
    file = CassetteFile(tmp_path / "c.yaml", Redaction.of(headers=["x-mine"]))
    file.create()
    file.add(0, JSON)
    before = file.path.read_text(encoding="utf-8")
    leaky = Interaction(RecordedRequest("POST", "/v1/responses",
                                        headers={"x-trace": "sk-" + "proj-abcdefghijklmnopqrstuv"}),
                        JSON.response)
    with pytest.raises(SecretFound, match="refusing to write"):
        file.add(1, leaky)
    assert file.path.read_text(encoding="utf-8") == before
    mine = Interaction(RecordedRequest("POST", "/v1/responses",
                                       headers={"x-mine": "sk-" + "proj-abcdefghijklmnopqrstuv"}),
                       JSON.response)
    file.add(2, mine)
    assert len(load_cassette(file.path).interactions) == 2
    assert "sk-proj" not in file.path.read_text(encoding="utf-8")


def test_create_refuses_a_file_that_is_there(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("keep me")
    with pytest.raises(FileExistsError):
        CassetteFile(tmp_path / "c.yaml").create()
    assert (tmp_path / "c.yaml").read_text() == "keep me"


def test_names() -> None:
    assert check_name("run") == "run.yaml" and check_name("a.yml") == "a.yml"
    for bad in ("", "a/b", ".x", ".."):
        with pytest.raises(ValueError, match="--name"):
            check_name(bad)
    assert default_name().startswith("recording-") and default_name().endswith("Z.yaml")
