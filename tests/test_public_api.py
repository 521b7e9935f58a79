"""The curated public surface: ``ormock.__all__`` is complete and every name in it exists; the
``Settings`` every engine is made with."""

from __future__ import annotations

import pathlib
import re
from dataclasses import replace
from typing import Any

import pytest

import ormock
from ormock.engine.namespaces import Namespaces
from ormock.faults.chaos import Chaos
from ormock.protocol.checker import RULES
from ormock.protocol.profile import get_profile, profile_names

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


# -- Settings: one typed object for every engine -------------------------------------------------
@pytest.mark.parametrize(("options", "says"), [
    ({"seed": "3"}, "seed must be a whole number"),
    ({"clock": "wall"}, "clock must be 'seeded'"),
    ({"self_check": "yes"}, "self_check must be True or False"),
    ({"speed": -1}, "speed must be a number >= 0"),
    ({"scenario_dirs": "scenarios"}, "write ['scenarios']"),
    ({"chaos": 0.2}, "chaos must be a Chaos, a spec"),
    ({"chaos": "rate=2"}, "chaos"),
    ({"profile": "openia"}, "unknown profile 'openia' (did you mean 'openai'?): use one of "
                            + ", ".join(profile_names())),
    ({"limits": {"journal_bytes": 1}}, "limits must be an ormock.Limits"),
])
def test_settings_say_what_to_change(options: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        ormock.Settings(**options)


def test_settings_take_what_a_person_writes_and_keep_typed_values() -> None:
    settings = ormock.Settings(seed=3, speed=0, scenario_dirs=["a"], chaos="rate=0.5,seed=1",
                               profile="openai")
    assert settings.scenario_dirs == (pathlib.Path("a"),) and settings.speed == 0.0
    assert isinstance(settings.chaos, Chaos) and settings.profile is get_profile("openai")
    assert settings == ormock.Settings(seed=3, speed=0.0, scenario_dirs=(pathlib.Path("a"),),
                                       chaos=settings.chaos, profile=get_profile("openai"))


def test_engines_and_namespaces_take_settings_or_their_fields() -> None:
    base = ormock.Settings(seed=3, limits=ormock.Limits(namespaces=5))
    assert ormock.Engine(base).settings is base
    assert ormock.Engine(seed=3, limits=ormock.Limits(namespaces=5)).settings == base
    assert ormock.Engine(base, speed=0).settings == replace(base, speed=0.0)
    namespaces = Namespaces(base)
    assert (namespaces.limit, namespaces.seed, namespaces.get("x").seed) == (5, 3, 3)
    with pytest.raises(TypeError, match=r"unknown setting 'sed' \(did you mean 'seed'\?\)"):
        ormock.Engine(sed=3)
    with pytest.raises(TypeError, match="unknown setting 'sed'"):
        ormock.OrmockServer(sed=3)
