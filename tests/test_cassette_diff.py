"""``ormock cassette diff OLD NEW``: two cassette files compared by shape, as ``ormock drift``
compares a cassette with the live answers; pairs recorded from an ``OrmockServer`` through the
real recorder, the example cassettes, and vcrpy's files; every report field and exit status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from recordings import namespace, recorded

from ormock import OrmockServer
from ormock.cassette import load, to_vcr
from ormock.cassette.drift import Change, Ignore, Outline, compare, outline
from ormock.cli import main
from ormock.server.recorder import RecorderServer

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "cassettes"


def _scenario(reply: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    return {"name": "s", "seed": seed, "steps": [{"times": "forever", "reply": reply}]}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same two requests recorded from four upstreams: ``base``, ``values`` (other text,
    ids and numbers), ``vendor`` (an extension event more), ``short`` (the first request only)."""
    folder = tmp_path_factory.mktemp("pair")
    replies = {
        "base": _scenario({"items": [{"message": "one two three"}]}),
        "values": _scenario({"items": [{"message": "other words, and more of them"}]}, 9),
        "vendor": _scenario({"items": [{"message": "one two three"}],
                             "faults": [{"vendor_event": {"type": "acme:trace"}}]}),
    }
    bodies = [{"model": "m", "input": "hi", "stream": True}, {"model": "m", "input": "hi"}]
    out = {}
    with OrmockServer(seed=0) as upstream:
        for name, scenario in [*replies.items(), ("short", replies["base"])]:
            url = namespace(upstream, scenario)
            sent = bodies[:1] if name == "short" else bodies
            with RecorderServer(url, folder, name=f"{name}.yaml", log=lambda _: None) as rec:
                for body in sent:
                    httpx.post(f"{rec.base_url}/responses", json=body, timeout=10)
                recorded(rec, len(sent))
            out[name] = Path(rec.cassette)
    return out


def diff(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["cassette", "diff", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_values_only_is_no_change(pair: dict[str, Path],
                                  capsys: pytest.CaptureFixture[str]) -> None:
    base, values = pair["base"], pair["values"]
    code, out, err = diff(capsys, str(base), str(values))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"ormock cassette diff {base} {values}",
        f"{base} against {values}: no shape change (2 interactions)",
        "1 cassette, 2 interactions: 0 changed shape (0 changes), 2 unchanged, 0 not compared"]


def test_a_change_as_text_json_and_markdown(pair: dict[str, Path],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    base, vendor = pair["base"], pair["vendor"]
    code, out, _ = diff(capsys, str(base), str(vendor))
    assert code == 1
    assert out.splitlines() == [
        f"ormock cassette diff {base} {vendor}",
        f"{base} against {vendor}: 1 of 2 interactions changed shape (1 change)",
        "  interaction 1 (line 7): POST /v1/responses",
        "    event added: acme:trace",
        "1 cassette, 2 interactions: 1 changed shape (1 change), 1 unchanged, 0 not compared"]
    code, out, _ = diff(capsys, str(base), str(vendor), "--json")
    assert code == 1
    second_line = load(base).interactions[1].line
    assert json.loads(out) == {
        "title": f"ormock cassette diff {base} {vendor}",
        "changed": True,
        "summary": {"cassettes": 1, "changed_cassettes": 1, "interactions": 2, "changed": 1,
                    "changes": 1, "unchanged": 1, "not_compared": 0},
        "cassettes": [{
            "file": str(base), "against": str(vendor), "changed": True, "changes": 1,
            "written": None, "problem": None,
            "interactions": [
                {"interaction": 1, "line": 7, "method": "POST", "path": "/v1/responses",
                 "note": None, "changes": [{"kind": "event added", "where": "acme:trace",
                                            "old": None, "new": None,
                                            "message": "event added: acme:trace"}]},
                {"interaction": 2, "line": second_line, "method": "POST",
                 "path": "/v1/responses", "note": None, "changes": []}]}]}
    code, out, _ = diff(capsys, str(base), str(vendor), "--markdown")
    assert code == 1
    assert out.splitlines() == [
        f"### ormock cassette diff {base} {vendor}",
        "",
        "| cassette | interaction | request | change | where | was | now |",
        "|---|---|---|---|---|---|---|",
        f"| `{base}` | 1 (line 7) | `POST /v1/responses` | event added | `acme:trace` |  |  |",
        "",
        "**1 of 2 interactions changed shape (1 change) in 1 of 1 cassette**; 1 unchanged, "
        "0 not compared."]
    assert diff(capsys, str(base), str(vendor), "--ignore", "acme:*")[0] == 0


def test_interactions_added_and_removed(pair: dict[str, Path],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    base, short = pair["base"], pair["short"]
    code, out, _ = diff(capsys, str(base), str(short))
    assert code == 1
    line = load(base).interactions[1].line
    assert out.splitlines()[1:4] == [
        f"{base} against {short}: 1 of 2 interactions changed shape (1 change)",
        f"  interaction 2 (line {line}): POST /v1/responses",
        "    interaction removed: interaction 2"]
    code, out, _ = diff(capsys, str(short), str(base))
    assert code == 1
    assert out.splitlines()[2:4] == [f"  interaction 2 (line {line}): POST /v1/responses",
                                     "    interaction added: interaction 2"]


def test_a_vcrpy_cassette_has_the_shape_of_the_one_it_was_made_from(
        pair: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vcr = tmp_path / "vcr.yaml"
    to_vcr(load(pair["base"]), vcr, base_url="https://api.openai.com")
    assert diff(capsys, str(pair["base"]), str(vcr))[0] == 0
    code, out, _ = diff(capsys, str(vcr), str(pair["vendor"]), "--json")
    assert code == 1 and json.loads(out)["summary"]["changes"] == 1


@pytest.mark.parametrize("name", ["streamed-text", "tool-loop", "rate-limited-then-success",
                                  "failed-midstream", "websocket-session"])
def test_every_example_cassette_has_its_own_shape(name: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / f"{name}.yaml")
    code, out, _ = diff(capsys, path, path)
    assert code == 0 and "no shape change" in out


def test_a_stream_that_failed_midway(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = diff(capsys, str(EXAMPLES / "streamed-text.yaml"),
                        str(EXAMPLES / "failed-midstream.yaml"), "--ignore", "usage*",
                        "--ignore", "completed_at", "--ignore", "content*", "--ignore",
                        "output*", "--ignore", "response.error*")
    assert code == 1
    assert out.splitlines()[2:-1] == [
        "  interaction 1 (line 7): POST /v1/responses",
        "    event added: error",
        "    event added: response.failed",
        "    event removed: response.output_text.done",
        "    event removed: response.content_part.done",
        "    event removed: response.output_item.done",
        "    event removed: response.completed",
        "    output items: [message(output_text)] -> []",
        "    terminal event: response.completed -> response.failed"]


def test_a_websocket_session_against_a_stream(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = diff(capsys, str(EXAMPLES / "streamed-text.yaml"),
                        str(EXAMPLES / "websocket-session.yaml"), "--markdown")
    assert code == 1
    assert out.splitlines()[4:8] == [
        "| `cassettes/streamed-text.yaml` | 1 (line 7) | `POST /v1/responses` | request |  | "
        "`POST /v1/responses` | `GET /v1/responses` |".replace("cassettes/",
                                                           f"{EXAMPLES}/"),
        f"| `{EXAMPLES}/streamed-text.yaml` | 1 (line 7) | `POST /v1/responses` | status |  | "
        "`200` | `none` |",
        f"| `{EXAMPLES}/streamed-text.yaml` | 1 (line 7) | `POST /v1/responses` | body |  | "
        "`sse` | `websocket` |",
        f"| `{EXAMPLES}/streamed-text.yaml` | 1 (line 7) | `POST /v1/responses` | content-type "
        "|  | `text/event-stream` | `none` |"]


def test_sse_framing_and_nullable_fields() -> None:
    """A stream framed ``data:`` only (no ``event:`` lines) is a change; a field null on one
    side and a value on both is not."""
    from dataclasses import replace

    interaction = load(EXAMPLES / "streamed-text.yaml").interactions[0]
    response = interaction.response
    assert response is not None
    data_only = replace(interaction, response=replace(response, style="data"))
    assert compare(outline(interaction), outline(data_only)) == [
        Change("sse framing", "sse framing", "event+data", "data")]
    assert compare(outline(interaction, Ignore(("x-*",))), outline(data_only)) == [
        Change("sse framing", "sse framing", "event+data", "data")]
    before = outline(interaction)
    fields = {**before.fields, "object response": {
        **before.fields["object response"], "usage": frozenset({"object"})}}
    assert compare(before, replace(before, fields=fields)) == []


def test_a_file_that_is_no_cassette_is_exit_2(pair: dict[str, Path], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ninteractions:\n- request: {method: POST, path: /v1/x}\n"
                   "  response:\n    status: 99\n")
    code, out, err = diff(capsys, str(pair["base"]), str(bad))
    assert (code, out) == (2, "")
    assert err.startswith(f"ormock cassette diff: {bad}:5: interactions[0].response.status")
    code, out, err = diff(capsys, str(tmp_path / "none.yaml"), str(pair["base"]))
    assert (code, out) == (2, "")
    assert err.startswith("ormock cassette diff: ") and "none.yaml" in err


def test_an_event_added_between_deltas_is_named_once() -> None:
    """An extension event every few events splits the text's run of deltas: still one change,
    and no change of order."""
    old = Outline("sse", events=("response.created", "response.output_text.delta",
                                 "response.completed"))
    new = Outline("sse", events=("response.created", "acme:trace", "response.output_text.delta",
                                 "acme:trace", "response.output_text.delta", "acme:trace",
                                 "response.completed"))
    assert compare(old, new) == [Change("event added", "acme:trace")]
    assert compare(new, old) == [Change("event removed", "acme:trace")]
    moved = Outline("sse", events=("response.output_text.delta", "response.created",
                                   "response.completed"))
    assert [str(c) for c in compare(old, moved)] == [
        "event order: response.created response.output_text.delta response.completed -> "
        "response.output_text.delta response.created response.completed"]
