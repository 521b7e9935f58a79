"""``ormock.protocol.ids``: ids and timestamps drawn from a seed, so a fresh server with the
same seed hands out the same ones in the same order."""

from __future__ import annotations

import re
import time

import pytest

from ormock.protocol.ids import SEEDED_EPOCH, Clock, IdFactory


def test_the_same_seed_gives_the_same_ids() -> None:
    one, two = IdFactory(7), IdFactory(7)
    drawn = [one.new(p) for p in ("resp", "msg", "call", "fc")]
    assert drawn == [two.new(p) for p in ("resp", "msg", "call", "fc")]
    assert IdFactory(8).new("resp") != drawn[0]


def test_id_shapes() -> None:
    ids = IdFactory()
    assert re.fullmatch(r"resp_[0-9a-f]{48}", ids.new("resp"))
    assert re.fullmatch(r"msg_[0-9a-f]{48}", ids.new("msg"))
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", ids.new("call"))
    assert len({ids.new("resp") for _ in range(1000)}) == 1000


def test_the_seeded_clock_ticks_a_second_per_reading() -> None:
    clock = Clock()
    assert [clock.now() for _ in range(3)] == [SEEDED_EPOCH, SEEDED_EPOCH + 1, SEEDED_EPOCH + 2]
    assert Clock(start=10).now() == 10


def test_the_real_clock() -> None:
    assert abs(Clock("real").now() - time.time()) < 5


def test_a_clock_mode_is_seeded_or_real() -> None:
    with pytest.raises(ValueError, match="clock mode must be 'seeded' or 'real', not 'wall'"):
        Clock("wall")
