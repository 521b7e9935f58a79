"""One test against every provider: a test that takes ``ormock_profile`` runs once per profile
(the built-ins, the real providers of ``ormock.providers``, and those plugins register), and
its fakes play that run's profile::

    def test_my_client_survives(ormock, ormock_profile):
        answer = my_client(ormock.base_url).ask("hi")  # under openrouter, ollama, vllm, ...

The run's id names the profile (``test_my_client_survives[ollama]``). A test that
parametrizes ``ormock_profile`` itself (``@pytest.mark.parametrize("ormock_profile",
["openai", "vllm"])``) runs on those only. The run's profile beats the marker's ``profile=``,
the ``ormock_config`` fixture's and the ini ``ormock_profile``: it is what the run is for
(an ``ormock_factory(profile=...)`` call still says its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

__all__ = ["FIXTURE", "profile_level", "pytest_generate_tests"]

FIXTURE = "ormock_profile"


def _parametrized(metafunc: pytest.Metafunc) -> bool:
    """The test parametrizes ``ormock_profile`` itself."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [name.strip() for name in names.split(",")]
        if FIXTURE in names:
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test taking ``ormock_profile`` runs once per profile name."""
    if FIXTURE not in metafunc.fixturenames or _parametrized(metafunc):
        return
    from ormock.plugins import load_entry_points
    from ormock.protocol.profile import profile_names

    load_entry_points()  # an installed plugin's profile is one of them
    metafunc.parametrize(FIXTURE, profile_names())


def profile_level(request: pytest.FixtureRequest) -> list[tuple[Mapping[str, Any], str]]:
    """The fake's settings this run's profile gives (none for a test without one)."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or FIXTURE not in callspec.params:
        return []
    return [({"profile": callspec.params[FIXTURE]}, "the ormock_profile parametrization")]
