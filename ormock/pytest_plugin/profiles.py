"""One test against every provider: a test that takes ``ormock_profile`` runs once per profile
(the built-ins, the real providers of ``ormock.providers``, and those plugins register), and
its fakes play that run's profile::

    def test_my_client_survives(ormock, ormock_profile):
        answer = my_client(ormock.base_url).ask("hi")  # under openrouter, ollama, vllm, ...

The run's id names the profile (``test_my_client_survives[ollama]``), and after the session
a section of the terminal report, "ormock profiles", says per test which profiles it passed and
failed under, each failure's first line beside its profile: what differs between providers at a
glance. A test that
parametrizes ``ormock_profile`` itself (``@pytest.mark.parametrize("ormock_profile",
["openai", "vllm"])``) runs on those only. The run's profile beats the marker's ``profile=``,
the ``ormock_config`` fixture's and the ini ``ormock_profile``: it is what the run is for
(an ``ormock_factory(profile=...)`` call still says its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

__all__ = ["FIXTURE", "ProfileSummary", "profile_level", "pytest_generate_tests"]

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


class ProfileSummary:
    """The plugin object behind the "ormock profiles" section (registered by the plugin's
    ``pytest_configure``): each run's profile put in its reports (``user_properties``, which
    travel from xdist's workers to the controller), each run's outcome kept, the section
    written after the session."""

    def __init__(self) -> None:
        # test (its node id without parameters) -> profile -> its failure's first line, or
        # None when it passed
        self.runs: dict[str, dict[str, str | None]] = {}

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            callspec = getattr(item, "callspec", None)
            if callspec is not None and FIXTURE in callspec.params:
                item.user_properties.append((FIXTURE, str(callspec.params[FIXTURE])))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        profile = next((v for k, v in report.user_properties if k == FIXTURE), None)
        if profile is None or (report.when != "call" and not report.failed):
            return
        runs = self.runs.setdefault(report.nodeid.split("[", 1)[0], {})
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            message = str(getattr(crash, "message", None) or report.longrepr).strip()
            runs[str(profile)] = message.splitlines()[0][:160] if message else \
                f"failed in {report.when}"
        else:
            runs.setdefault(str(profile), None)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.runs:
            return
        terminalreporter.section("ormock profiles")
        for test, by_profile in self.runs.items():
            passed = [name for name, failure in by_profile.items() if failure is None]
            failed = {name: failure for name, failure in by_profile.items()
                      if failure is not None}
            terminalreporter.write_line(
                f"{test}: passed under {', '.join(passed) or 'none'}"
                + (f"; failed under {', '.join(failed)}" if failed else ""))
            for name, failure in failed.items():
                terminalreporter.write_line(f"  {name}: {failure}")
