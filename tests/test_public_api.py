"""The curated public surface: ``ormock.__all__`` is complete and every name in it exists."""

from __future__ import annotations

import pathlib

import ormock
from ormock.protocol.checker import RULES

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_all_names_exist() -> None:
    for name in ormock.__all__:
        assert hasattr(ormock, name), name


def test_all_lists_every_public_name() -> None:
    for name in ormock.__all__:
        getattr(ormock, name)  # load them all
    public = {
        name for name, value in vars(ormock).items()
        if not name.startswith("_") and not isinstance(value, type(ormock))
    }
    assert public - {"annotations", "importlib", "TYPE_CHECKING", "Any"} <= set(ormock.__all__)
    assert set(dir(ormock)) >= set(ormock.__all__)


def test_py_typed_ships() -> None:
    assert (ROOT / "ormock" / "py.typed").exists()


def test_checker_docs_list_every_rule() -> None:
    docs = (ROOT / "docs" / "checker.md").read_text()
    for rule, meaning in RULES.items():
        assert f"| `{rule}` | {meaning} |" in docs, rule
