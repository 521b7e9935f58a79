"""No secret reaches a cassette file; writes are atomic."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ormock.cassette import (
    Cassette,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    Redaction,
    SecretFound,
    load_cassette,
    save_cassette,
)
from ormock.cassette.model import Body
from ormock.cassette.redact import REDACTED, scan

KEY = "sk-proj-" + "A1b2C3d4" * 5


def _cassette(headers: dict[str, str | list[str]], body: object = None,
              answer: object = None) -> Cassette:
    request = RecordedRequest("POST", "/v1/responses", headers=headers,
                              body=body or {"model": "m", "input": "hi"})
    response = RecordedResponse(200, headers={"set-cookie": ["a=1", "b=2"], "x-request-id":
                                              "req_" + "f" * 48},
                                body=Body(json=answer or {"id": "resp_1"}, style="compact"))
    return Cassette((Interaction(request, response),))


@pytest.mark.parametrize("name", ["Authorization", "api-key", "x-api-key",
                                  "OpenAI-Organization", "OpenAI-Project", "cookie",
                                  "x-custom-token"])
def test_secret_headers_are_redacted_before_writing(name: str, tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    save_cassette(_cassette({name.lower(): f"Bearer {KEY}"}), file)
    text = file.read_text()
    assert KEY not in text and "A1b2C3d4" not in text
    interaction = load_cassette(file).interactions[0]
    assert interaction.request.headers[name.lower()] == REDACTED
    assert interaction.response is not None
    assert interaction.response.headers["set-cookie"] == [REDACTED, REDACTED]
    assert interaction.response.headers["x-request-id"] == "req_" + "f" * 48  # an id, kept


def test_configured_headers_and_json_paths_are_redacted(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    body = {"model": "m", "input": [{"role": "user", "content": "my card 4242"}],
            "metadata": {"user_email": "a@b.c"}}
    save_cassette(_cassette({"x-tenant": "acme"}, body, {"id": "r", "user": "a@b.c"}), file,
                  Redaction.of(headers=["X-Tenant"],
                               paths=["metadata.user_email", "input[*].content", "user"]))
    interaction = load_cassette(file).interactions[0]
    assert interaction.request.headers["x-tenant"] == REDACTED
    assert interaction.request.body == {"model": "m", "input": [{"role": "user", "content":
                                        REDACTED}], "metadata": {"user_email": REDACTED}}
    assert interaction.response is not None and interaction.response.body is not None
    assert interaction.response.body.json == {"id": "r", "user": REDACTED}


@pytest.mark.parametrize(("where", "secret"), [
    ("body", KEY),
    ("body", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9"),
    ("body", "Bearer " + "abcdefghijklmnopqrstuvwxyz0123"),
    ("header", "0123456789abcdef" * 4),
])
def test_the_last_scan_refuses_to_write_and_says_where(where: str, secret: str,
                                                      tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text("previous\n")
    cassette = (_cassette({}, {"model": "m", "input": f"use {secret}"}) if where == "body"
                else _cassette({"x-signature": secret}))
    with pytest.raises(SecretFound) as caught:
        save_cassette(cassette, file)
    message = str(caught.value)
    assert str(file) in message and ("line " in message or "x-signature" in message)
    assert secret not in message  # the refusal shows a few characters only
    assert file.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]  # no temporary left


def test_scan_finds_nothing_in_ordinary_text() -> None:
    assert scan("input: the sky is blue\nid: resp_0123456789abcdef0123456789abcdef01234567\n"
                "authorization: REDACTED\n") == []


def test_a_write_replaces_the_file_in_one_rename(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "c.yaml"
    save_cassette(_cassette({}), file)
    before = file.read_text()
    calls: list[tuple[str, str]] = []
    real = os.replace

    def replace(src: str, dst: str) -> None:
        calls.append((os.path.basename(src), os.path.basename(dst)))
        assert Path(dst).read_text() == before  # the old file is whole until the rename
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    save_cassette(_cassette({}, {"model": "m", "input": "changed"}), file)
    assert len(calls) == 1 and calls[0][0].startswith(".c.yaml.") and calls[0][1] == "c.yaml"
    assert "changed" in file.read_text()
