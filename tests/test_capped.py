"""``ormock.engine.capped.Capped``: a list of the newest items, capped in count and bytes."""

from __future__ import annotations

import pytest

from ormock.engine.capped import Capped


def test_past_its_count_the_oldest_half_goes() -> None:
    items: Capped[str] = Capped(4, 1000, len)
    for n in range(5):
        items.append(str(n))
    assert items == ["3", "4"] and items.dropped == 3 and items.bytes == 2


def test_past_its_bytes_the_oldest_go_until_a_quarter_is_free() -> None:
    items: Capped[str] = Capped(100, 100, len)
    for n in range(4):
        items.append(str(n) * 30)
    assert items == ["2" * 30, "3" * 30]  # 120 bytes: down to 75 at most
    assert (items.bytes, items.dropped) == (60, 2)
    items.append("4" * 30)  # 90: room enough
    assert (len(items), items.bytes, items.dropped) == (3, 90, 2)


def test_the_newest_item_stays_however_large() -> None:
    items: Capped[str] = Capped(10, 10, len)
    items.append("small")
    items.append("y" * 50)
    assert items == ["y" * 50] and items.bytes == 50


def test_clear_empties_it_and_its_bytes() -> None:
    items: Capped[str] = Capped(10, 100, len)
    items.append("abc")
    items.clear()
    assert items == [] and items.bytes == 0


@pytest.mark.parametrize(("limit", "max_bytes"), [(0, 10), (10, 0)])
def test_it_needs_room_for_one_item(limit: int, max_bytes: int) -> None:
    with pytest.raises(ValueError, match="room for one item"):
        Capped(limit, max_bytes, len)
