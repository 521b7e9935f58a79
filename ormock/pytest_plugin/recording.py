"""pytest-recording's contract, served by ormock (``ormock_vcr = true`` in the ini, or
``--ormock-vcr``): a suite written for pytest-recording runs unchanged, each ``@pytest.mark.vcr``
test answered by an ormock fake of its own loaded with its cassette(s).

The names are pytest-recording's: the markers ``vcr`` (positional arguments: more cassettes,
read too; keywords: vcrpy's settings over ``vcr_config``), ``default_cassette``,
``block_network`` and ``allowed_hosts``; the fixtures ``vcr`` (the cassette object),
``vcr_config``, ``vcr_cassette_dir`` (``<test folder>/cassettes/<module>``),
``default_cassette_name`` (``<test>`` or ``<Class>.<test>``), ``record_mode``,
``disable_recording``, ``vcr_markers``, ``allowed_hosts``, ``block_network``; the options
``--record-mode``, ``--disable-recording``, ``--block-network``, ``--allowed-hosts``; the hook
``pytest_recording_configure(config, vcr)``, through which a project registers its serializers.
Where pytest-recording is installed its options and hook are its own (the same names) and these
fixtures, registered after it, are the ones used; without it this module adds them.

The settings are merged as pytest-recording merges them: ``vcr_config``, then the markers, the
nearest last; ``--record-mode`` beats ``vcr_config``'s ``record_mode`` only where neither the
config nor a marker says one (as there). This module is registered only when the mode is on.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ormock.pytest_plugin.session import SESSION

__all__ = ["RECORDING_INSTALLED", "add_options", "enabled", "hookspecs", "recording_loaded"]

RECORDING_INSTALLED = importlib.util.find_spec("pytest_recording") is not None


def recording_loaded(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether pytest-recording is (or is about to be) this session's plugin: installed, not
    turned off with ``-p no:recording`` nor by ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``."""
    if not RECORDING_INSTALLED or pluginmanager.is_blocked("recording"):
        return False
    return pluginmanager.has_plugin("recording") or \
        not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
RECORD_MODES = ("once", "new_episodes", "none", "all", "rewrite")
MARKERS = (
    "vcr: Mark the test as using VCR.py (answered by an ormock fake: ormock_vcr).",
    "block_network: Block network access except for VCR recording.",
    "default_cassette: Override the default cassette name.",
    "allowed_hosts: List of regexes to match hosts to where connection must be allowed.",
)


class _Hooks:
    """pytest-recording's hook, for a suite that implements it without pytest-recording."""

    @pytest.hookspec
    def pytest_recording_configure(self, config: pytest.Config, vcr: Any) -> None:
        """Configure the ``vcr.VCR`` of a test (register serializers, matchers, persisters)."""


hookspecs = _Hooks


def add_options(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """``--ormock-vcr``, ``ormock_vcr``, and pytest-recording's options where it is not
    installed."""
    group = parser.getgroup("ormock")
    group.addoption("--ormock-vcr", action="store_true", default=False,
                    help="serve pytest-recording's markers, fixtures and cassettes with ormock "
                         "fakes (docs/recording.md#switching-from-pytest-recording); beats the "
                         "ini option ormock_vcr")
    parser.addini("ormock_vcr", "serve pytest-recording's @pytest.mark.vcr tests with ormock "
                  "fakes (default false)", type="bool", default=False)
    if recording_loaded(pluginmanager):
        return
    recording = parser.getgroup("recording")
    recording.addoption("--record-mode", action="store", default=None, choices=RECORD_MODES,
                        help='VCR.py record mode. Default to "none".')
    recording.addoption("--block-network", action="store_true", default=False,
                        help="Block network access except for VCR recording.")
    recording.addoption("--allowed-hosts", action="store", default=None,
                        help="List of regexes, separated by comma, to match hosts to where "
                             "connection must be allowed.")
    recording.addoption("--disable-recording", action="store_true", default=False,
                        help="Disable VCR.py integration.")


def enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("ormock_vcr") or config.getini("ormock_vcr"))


# -- the fixtures (this module is a plugin of its own, registered when the mode is on) -----------
@pytest.fixture(scope="session")
def record_mode(request: pytest.FixtureRequest) -> str:
    """``--record-mode``, else ``none``."""
    return str(request.config.getoption("--record-mode") or "none")


@pytest.fixture(scope="session")
def disable_recording(request: pytest.FixtureRequest) -> bool:
    """``--disable-recording``: no fake, no routing; the test's requests go where they go."""
    return bool(request.config.getoption("--disable-recording"))


@pytest.fixture
def vcr_config() -> dict[str, Any]:
    """vcrpy's settings for every cassette (override it at any scope)."""
    return {}


@pytest.fixture
def vcr_markers(request: pytest.FixtureRequest) -> list[pytest.Mark]:
    return list(request.node.iter_markers(name="vcr"))


@pytest.fixture(scope="module")
def vcr_cassette_dir(request: pytest.FixtureRequest) -> str:
    """``<test folder>/cassettes/<module>``."""
    path = request.node.path
    return os.path.join(os.path.dirname(path), "cassettes", path.stem)


def get_default_cassette_name(test_class: Any, test_name: str) -> str:
    name = f"{test_class.__name__}.{test_name}" if test_class else test_name
    for char in "<>?%*:|\"'/\\":
        name = name.replace(char, "-")
    return name


@pytest.fixture
def default_cassette_name(request: pytest.FixtureRequest) -> str:
    marker = request.node.get_closest_marker("default_cassette")
    if marker is not None:
        if not marker.args:
            pytest.fail("You should pass the cassette name as an argument to the "
                        "`pytest.mark.default_cassette` marker", pytrace=False)
        return str(marker.args[0])
    return get_default_cassette_name(request.cls, request.node.name)


@pytest.fixture
def allowed_hosts(request: pytest.FixtureRequest) -> list[str] | None:
    """The ``block_network`` marker's, else ``--allowed-hosts``, else ``vcr_config``'s."""
    marker = request.node.get_closest_marker(name="block_network")
    config = request.getfixturevalue("vcr_config")
    hosts = (getattr(marker, "kwargs", {}).get("allowed_hosts")
             or request.config.getoption("--allowed-hosts") or config.get("allowed_hosts"))
    return hosts.split(",") if isinstance(hosts, str) else hosts


def _guard(original: Callable[..., Any], allowed: list[str],
           fakes: Callable[[], tuple[str, int] | None]) -> Callable[..., Any]:
    pattern = re.compile("(" + ")|(".join(allowed) + ")") if allowed else None

    def connect(self: socket.socket, address: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(address, tuple) and tuple(address[:2]) == fakes():
            return original(self, address, *args, **kwargs)  # the fakes' server
        host: Any = ""
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0]
        elif self.family == getattr(socket, "AF_UNIX", None):
            host = address
        host = host.decode() if isinstance(host, (bytes, bytearray)) else str(host)
        if pattern is not None and pattern.match(host):
            return original(self, address, *args, **kwargs)
        raise RuntimeError("Network is disabled")

    return connect


@pytest.fixture(autouse=True)
def block_network(request: pytest.FixtureRequest, record_mode: str,
                  vcr_markers: list[pytest.Mark]) -> Iterator[None]:
    """pytest-recording's network block (``--block-network``, ``@pytest.mark.block_network``):
    a socket may connect only to the allowed hosts, in the modes that do not record; the
    address of the ormock server the fakes are on is always allowed (the routed requests reach
    it there), and only it: another server on loopback is blocked as pytest-recording blocks
    it."""
    marker = request.node.get_closest_marker(name="block_network")
    if marker is not None and (marker.args or set(marker.kwargs) - {"allowed_hosts"}):
        pytest.fail("Invalid arguments to `block_network`. It accepts only the following "
                    f"keyword arguments: `allowed_hosts`. Got args: {marker.args!r}; kwargs: "
                    f"{marker.kwargs!r}", pytrace=False)
    mode = record_mode
    if vcr_markers and request.config.getoption("--record-mode") is None:
        merged = dict(request.getfixturevalue("vcr_config"))
        for mark in reversed(vcr_markers):
            merged.update(mark.kwargs)
        mode = merged.get("record_mode", "none")
    if not ((marker or request.config.getoption("--block-network"))
            and (not vcr_markers or mode == "none")):
        yield
        return
    allowed = list(request.getfixturevalue("allowed_hosts") or [])
    session = request.config.stash[SESSION]

    def fakes() -> tuple[str, int] | None:  # where the session's fakes are, once it serves
        return (session.server().host, session.server().port) if session.started else None

    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex
    socket.socket.connect = _guard(connect, allowed, fakes)  # type: ignore[method-assign]
    socket.socket.connect_ex = _guard(connect_ex, allowed, fakes)  # type: ignore[method-assign]
    try:
        yield
    finally:
        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def vcr(request: pytest.FixtureRequest, vcr_markers: list[pytest.Mark], vcr_cassette_dir: str,
        record_mode: str, disable_recording: bool, pytestconfig: pytest.Config
        ) -> Iterator[Any]:
    """The test's cassette (``ormock.pytest_plugin.vcr_cassette.VcrCassette``) when it is
    marked ``vcr``: its requests to the provider are answered by a fake of its own; None
    otherwise, or with ``--disable-recording``."""
    if disable_recording or not vcr_markers:
        yield None
        return
    from ormock.pytest_plugin.vcr_cassette import VcrCassette

    cassette = VcrCassette.open(request, request.getfixturevalue("default_cassette_name"),
                                vcr_cassette_dir, record_mode, vcr_markers,
                                request.getfixturevalue("vcr_config"), pytestconfig)
    try:
        with cassette.routed():
            yield cassette
    finally:
        problem = cassette.close()
    if problem:
        pytest.fail(problem, pytrace=False)
