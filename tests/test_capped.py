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


def _trimmed_as_before(items: list[str], limit: int, max_bytes: int) -> list[str]:
    """The trim of one item at a time that ``Capped._trim`` does in fewer steps."""
    kept: list[str] = []
    size = 0
    for item in items:
        kept.append(item)
        size += len(item)
        if len(kept) > limit or size > max_bytes:
            keep_items = limit // 2 if len(kept) > limit else len(kept)
            keep_bytes = max_bytes * 3 // 4 if size > max_bytes else size
            cut, freed = 0, 0
            while cut < len(kept) - 1 and (len(kept) - cut > max(keep_items, 1)
                                           or size - freed > keep_bytes):
                freed += len(kept[cut])
                cut += 1
            del kept[:cut]
            size -= freed
    return kept


@pytest.mark.parametrize("seed", range(20))
def test_it_trims_as_one_item_at_a_time_would(seed: int) -> None:
    import random

    rng = random.Random(seed)
    limit, max_bytes = rng.randint(1, 12), rng.randint(1, 200)
    sent = [f"{n}:" + "x" * rng.randint(0, 60) for n in range(200)]
    items: Capped[str] = Capped(limit, max_bytes, len)
    for item in sent:
        items.append(item)
    kept = _trimmed_as_before(sent, limit, max_bytes)
    assert list(items) == kept
    assert items.bytes == sum(map(len, kept)) and items.dropped == len(sent) - len(kept)
