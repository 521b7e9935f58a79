"""``ormock.engine.namespaces``: one engine per namespace, opened by trusted callers only,
made lazily with the same options, capped in number, and closed for good when dropped."""

from __future__ import annotations

import pytest

from ormock.engine.limits import Limits
from ormock.engine.namespaces import Namespaces, check_name, preload
from ormock.protocol.errors import OpenResponsesError
from ormock.scenario import ScenarioError


def test_the_default_namespace_always_serves() -> None:
    namespaces = Namespaces(seed=3)
    engine = namespaces.serve("")
    assert engine is namespaces.get() and engine.seed == 3 and namespaces.seed == 3
    assert namespaces.names() == [""] and namespaces.opened() == []


def test_a_request_never_opens_a_namespace() -> None:
    namespaces = Namespaces()
    with pytest.raises(OpenResponsesError) as raised:
        namespaces.serve("ns")
    assert (raised.value.code, raised.value.param, raised.value.status) == (
        "unknown_namespace", "path", 404)
    assert namespaces.find("ns") is None and namespaces.opened() == []


def test_open_is_cheap_and_the_engine_is_made_on_first_use() -> None:
    namespaces = Namespaces(seed=9, speed=0)
    namespaces.open("ns")
    assert namespaces.opened() == ["ns"] and namespaces.names() == []
    engine = namespaces.serve("ns")
    assert (engine.seed, engine.speed) == (9, 0)  # the same options
    assert namespaces.names() == ["ns"] and namespaces.get("ns") is engine
    assert namespaces.get("other") is not engine  # get opens


def test_a_dropped_namespace_is_closed_for_good() -> None:
    namespaces = Namespaces()
    namespaces.get("ns")
    namespaces.drop("ns")
    with pytest.raises(OpenResponsesError) as raised:
        namespaces.serve("ns")
    assert (raised.value.code, raised.value.status) == ("namespace_closed", 404)
    namespaces.open("ns")  # opened again by a trusted caller: a fresh engine
    assert namespaces.serve("ns") is not None


def test_past_the_limit_the_least_recently_used_goes() -> None:
    namespaces = Namespaces(limits=Limits(namespaces=2))
    for name in ("a", "b"):
        namespaces.get(name)
    namespaces.serve("a")  # used: b is now the oldest
    namespaces.get("c")
    assert namespaces.opened() == ["a", "c"]
    assert namespaces.serve("") is not None  # the default one never counts
    with pytest.raises(OpenResponsesError, match="closed"):
        namespaces.serve("b")


@pytest.mark.parametrize("name", ["", "-x", "a/b", "a b", "x" * 65, "ns?"])
def test_a_name_is_a_url_path_segment(name: str) -> None:
    with pytest.raises(OpenResponsesError) as raised:
        check_name(name)
    assert (raised.value.code, raised.value.param) == ("invalid_namespace", "name")


@pytest.mark.parametrize("name", ["a", "test_1.case-2", "X" * 64])
def test_good_names(name: str) -> None:
    assert check_name(name) == name


def test_preload_loads_into_every_engine_and_fails_at_once() -> None:
    namespaces = Namespaces()
    preload(namespaces, ["text"])
    assert [s.name for s in namespaces.get("ns").scenarios.scenarios] == ["text"]
    assert [s.name for s in namespaces.get().scenarios.scenarios] == ["text"]
    with pytest.raises(ScenarioError, match="no scenario named 'txet'"):
        preload(Namespaces(), ["txet"])
