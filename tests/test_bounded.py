"""The one bounded cache (``ormock.engine.bounded``): capped in count and in bytes, the least
recently used first to go, what counts as a use, and what is told of an eviction."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ormock.engine.bounded import Bounded, Sightings


def test_the_least_recently_used_go_past_the_count() -> None:
    cache: Bounded[str, int] = Bounded(3)
    for n in range(5):
        cache[f"k{n}"] = n
    assert list(cache) == ["k2", "k3", "k4"] and cache.bytes == 3


def test_a_read_is_a_use_but_a_peek_or_in_is_not() -> None:
    cache: Bounded[str, int] = Bounded(3)
    cache["a"], cache["b"], cache["c"] = 1, 2, 3
    assert cache.get("a") == 1  # "a" is the most recent now: "b" goes next
    cache["d"] = 4
    assert set(cache) == {"a", "c", "d"}
    assert cache.peek("c") == 3 and "c" in cache  # neither is a use: "c" goes next
    cache["e"] = 5
    assert set(cache) == {"a", "d", "e"}
    assert cache.peek("gone") is None and cache.peek("gone", -1) == -1


def test_get_gives_a_value_kept_as_none_and_the_default_only_when_absent() -> None:
    cache: Bounded[str, int | None] = Bounded(2)
    cache["a"], cache["b"] = None, 2
    assert cache.get("a", 0) is None and cache.get("c", 0) == 0 and cache.get("c") is None
    cache["c"] = 3  # "a" was read last: "b" goes
    assert list(cache) == ["a", "c"]


def test_a_write_is_a_use_and_moves_the_key_last() -> None:
    cache: Bounded[str, int] = Bounded(3)
    cache["a"], cache["b"], cache["c"] = 1, 2, 3
    cache["a"] = 10
    assert list(cache) == ["b", "c", "a"] and list(reversed(cache)) == ["a", "c", "b"]
    cache["d"] = 4
    assert list(cache) == ["c", "a", "d"] and cache["a"] == 10


def test_the_least_recently_used_go_past_the_bytes() -> None:
    cache: Bounded[str, bytes] = Bounded(100, 10, len)
    cache["a"], cache["b"] = b"xxxx", b"yyyy"
    cache["c"] = b"zzzz"  # 12 bytes: "a" goes
    assert list(cache) == ["b", "c"] and cache.bytes == 8
    cache["b"] = b"y"  # a rewrite counts its new size only
    assert list(cache) == ["c", "b"] and cache.bytes == 5


def test_an_entry_larger_than_the_bytes_stays_alone_until_the_next_write() -> None:
    cache: Bounded[str, bytes] = Bounded(100, 10, len)
    cache["a"], cache["b"] = b"aa", b"bb"
    cache["big"] = b"x" * 50  # counted as the whole room: everything else goes
    assert list(cache) == ["big"] and cache.bytes == 10
    cache["c"] = b"c"
    assert list(cache) == ["c"] and cache.bytes == 1


def test_an_eviction_is_told_a_delete_or_a_rewrite_is_not() -> None:
    gone: list[tuple[str, int]] = []
    cache: Bounded[str, int] = Bounded(2, evicted=lambda key, value: gone.append((key, value)))
    cache["a"], cache["b"] = 1, 2
    cache["a"] = 3  # rewritten, not evicted
    del cache["b"]
    cache["c"], cache["d"] = 4, 5
    assert gone == [("a", 3)] and list(cache) == ["c", "d"]
    cache.clear()
    assert gone == [("a", 3)] and not cache and cache.bytes == 0


def test_a_cache_needs_room_and_a_size_with_its_byte_cap() -> None:
    with pytest.raises(ValueError, match="room for one"):
        Bounded(0)
    with pytest.raises(ValueError, match="room for one"):
        Bounded(1, 0, len)
    with pytest.raises(ValueError, match="size of an entry"):
        Bounded(1, 10)


@given(count=st.integers(1, 6), max_bytes=st.integers(1, 40),
       writes=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 15),
                                 st.booleans()), max_size=40))
def test_the_caps_always_hold_and_the_newest_always_stays(
        count: int, max_bytes: int, writes: list[tuple[int, int, bool]]) -> None:
    cache: Bounded[int, bytes] = Bounded(count, max_bytes, len)
    for key, size, read in writes:
        if read:
            cache.get(key)
            continue
        cache[key] = b"x" * size
        assert list(cache)[-1] == key and cache[key] == b"x" * size
        assert len(cache) <= count
        assert cache.bytes == sum(min(len(v), max_bytes) for _, v in cache.entries()) <= max_bytes


def test_entries_look_without_using() -> None:
    cache: Bounded[str, int] = Bounded(2)
    cache["a"], cache["b"] = 1, 2
    assert cache.entries() == [("a", 1), ("b", 2)]
    cache["c"] = 3  # "a" is still the least recently used
    assert cache.entries() == [("b", 2), ("c", 3)]


def test_sightings_are_noted_in_a_record_of_fixed_size() -> None:
    """A first sighting is noted by its key's hash in one slot, which a later key with the
    same slot takes; a second sighting is told once, and the key noted no more."""
    seen = Sightings(4)
    assert [seen.again(key) for key in (1, 2, 3)] == [False, False, False]
    assert seen.again(2) is True and seen.again(2) is False  # noted again, as a first
    assert seen.again(6) is False  # 6 takes the slot of 2 (6 % 4 == 2)
    assert seen.again(2) is False and seen.again(2) is True
    assert seen.again(("a", 1)) is False and seen.again(("a", 1)) is True
    assert seen.again(b"a body") is False and seen.again(b"a body") is True
    assert len(seen) == 4
    seen.again(3)
    seen.clear()
    assert seen.again(3) is False and len(seen) == 4
