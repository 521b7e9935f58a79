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


@pytest.mark.parametrize("prefixes", [("resp", "msg"), ("resp", "msg", "fc", "rs", "msg"),
                                      ("resp",), (), ("resp", "call", "fc"), ("call", "call")])
def test_ids_drawn_at_once_are_the_ids_drawn_one_by_one(prefixes: tuple[str, ...]) -> None:
    """``IdFactory.many``: the ids ``new`` gives one after the other, and the stream goes on
    from the same place (its bits drawn in one call)."""
    at_once, one_by_one = IdFactory(11), IdFactory(11)
    for _ in range(3):
        assert at_once.many(prefixes) == [one_by_one.new(p) for p in prefixes]
    assert at_once.new("msg") == one_by_one.new("msg")


def test_a_clock_pair_is_two_readings() -> None:
    one, two = Clock(start=5), Clock(start=5)
    assert [*one.pair(), one.now(), *one.pair()] == [two.now() for _ in range(5)]
    first, second = Clock("real").pair()
    assert abs(first - time.time()) < 5 and second >= first


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
