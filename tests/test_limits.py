"""``ormock.engine.limits.Limits``: what a server keeps at most, checked, one flag each."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from ormock import Limits
from ormock.engine.limits import MIB


def test_the_defaults() -> None:
    limits = Limits()
    assert limits.max_body == 16 * MIB and limits.journal_entries == 1000
    assert limits.max_header_bytes == 64 * 1024
    assert limits.namespaces == 10_000 and limits.error_bytes == MIB


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "10", None])
def test_a_limit_is_a_whole_number_of_at_least_1(value: Any) -> None:
    with pytest.raises(ValueError, match=f"limit journal_bytes must be a whole number of at "
                                         f"least 1, not {value!r}"):
        Limits(journal_bytes=value)


def test_each_limit_has_a_flag() -> None:
    assert Limits.option("journal_bytes") == "--journal-bytes"
    assert [Limits.option(f.name) for f in fields(Limits)][:3] == [
        "--max-body", "--max-header-bytes", "--journal-entries"]


def test_serve_takes_every_flag() -> None:
    from ormock.cli import build_parser

    flags = [Limits.option(f.name) for f in fields(Limits)]
    args = build_parser().parse_args(["serve", *[a for f in flags for a in (f, "7")]])
    assert {f.name: getattr(args, f.name) for f in fields(Limits)} == {
        f.name: 7 for f in fields(Limits)}
