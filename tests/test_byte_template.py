"""The one byte template (``ormock.engine.byte_template``): a build's bytes cut at marks into a
``%``-format, filled with a later reply's values; every byte outside a slot kept as it was."""

from __future__ import annotations

import re

import pytest

from ormock.engine.byte_template import ByteTemplate
from ormock.engine.core import Engine
from ormock.protocol.reply import Reply

_MARK = re.compile(rb"<(\w)(\d)>")


def _slot(match: re.Match[bytes]) -> tuple[bytes, int]:
    return (b"%d" if match.group(1) == b"n" else b"%s"), int(match.group(2))


@pytest.mark.parametrize(("raw", "values", "filled"), [
    (b"no slot, 100% kept %s %d %%", [], b"no slot, 100% kept %s %d %%"),
    (b"<s0>", [b"only"], b"only"),
    (b'{"id":"<s0>","n":<n1>,"again":"<s0>"} 5%', [b"a%b", 7],
     b'{"id":"a%b","n":7,"again":"a%b"} 5%'),
    (b"<s1><s0>", [b"x", b"y"], b"yx"),
])
def test_a_cut_keeps_every_byte_outside_its_slots(raw: bytes, values: list[object],
                                                  filled: bytes) -> None:
    assert ByteTemplate.cut(raw, _MARK, _slot).fill(values) == filled


def test_a_cut_at_values_fills_back_to_its_bytes_and_holds_new_ones() -> None:
    raw = b'{"id":"resp_1","created_at":12,"item":"msg_2","of":"resp_1","text":"50% msg_22"}'
    values = [b"resp_1", b"msg_2", b'"created_at":12']
    spellings = [b"%s", b"%s", b'"created_at":%d']
    template = ByteTemplate.at_values(raw, values, spellings)
    assert template.fill([b"resp_1", b"msg_2", 12]) == raw
    assert template.fill([b"resp_9", b"msg_8", 34]) == \
        b'{"id":"resp_9","created_at":34,"item":"msg_8","of":"resp_9","text":"50% msg_82"}'


def test_at_values_the_longer_value_wins_and_a_repeated_value_is_the_first_slot() -> None:
    template = ByteTemplate.at_values(b"ab a b", [b"a", b"ab", b"a", b""],
                                      [b"%s", b"%s", b"%s", b"%s"])
    assert template.fill([b"1", b"2", b"3", b"4"]) == b"2 1 b"
    assert ByteTemplate.at_values(b"50%", [], []).fill([]) == b"50%"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_built_reply_cut_at_its_ids_and_times_is_the_next_build_filled(stream: bool) -> None:
    """What the stream cache does with a content's first reply: its bytes cut at the ids it
    drew and its timestamps, filled with the ids and timestamps a second build of the same
    content draws, are that build's bytes."""
    engine = Engine(seed=4)
    body = {"model": "m", "input": "Weather in Oslo?", "stream": stream, "tools": [
        {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]}
    replies = [engine.respond(body, {}) for _ in range(2)]
    assert all(isinstance(r, Reply) for r in replies)
    raw = [r.sse_body() if stream else r.json_body() for r in replies]  # type: ignore[union-attr]
    finals = [r.response for r in replies]  # type: ignore[union-attr]
    ids = [[v for k, v in _ids(f)] for f in finals]
    times = [[f["created_at"], f["completed_at"]] for f in finals]
    spellings = [*(b"%s",) * len(ids[0]), b'"created_at":%d', b'"completed_at":%d']
    template = ByteTemplate.at_values(
        raw[0], [*(i.encode() for i in ids[0]), b'"created_at":%d' % times[0][0],
                 b'"completed_at":%d' % times[0][1]], spellings)
    assert raw[0] != raw[1]
    assert template.fill([*(i.encode() for i in ids[1]), *times[1]]) == raw[1]


def _ids(final: dict[str, object]) -> list[tuple[str, str]]:
    """The response's id, then each output item's id and call id."""
    out = [("id", final["id"])]
    for item in final["output"]:  # type: ignore[attr-defined]
        out += [(k, item[k]) for k in ("id", "call_id") if isinstance(item.get(k), str)]
    return out  # type: ignore[return-value]
