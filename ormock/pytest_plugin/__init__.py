"""The ormock pytest plugin (entry point ``pytest11: ormock``): an isolated fake per test.

One server per session (per xdist worker), started on first use on 127.0.0.1 with a free port;
each fake is a namespace of it with its own ``base_url``, scenarios, journal and stored
responses, dropped after its test. Strict by default: after a test that passed, requests that
matched nothing, steps never used, replies the client could not be sent and errors inside the
server fail it in one report, each section saying how to opt out.

Fixtures: ``ormock``, ``ormock_factory``, ``ormock_env``, ``ormock_config``, ``ormock_server``;
a test taking ``ormock_profile`` runs once per profile (``ormock.pytest_plugin.profiles``).
Marker: ``@pytest.mark.ormock(...)`` (the nearest wins). Options: ``--ormock-*`` and the ini keys
``ormock_scenarios``, ``ormock_plugins``, ``ormock_strict``, ``ormock_seed``, ``ormock_upstream``,
``ormock_cassette_dir``, ``ormock_url``. Cassettes: ``cassette=`` replays one in the test's fake,
and ``--ormock-record`` records it from ``--ormock-upstream`` (written after the test).
``--ormock-url URL`` (or ``ORMOCK_URL``, or ``ormock_url``): no server of the session's own;
each fake is a namespace of that shared ``ormock serve``, worked on through its admin API
(``ormock.pytest_plugin.remote``). See docs/pytest.md.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ormock.pytest_plugin.checks import after_test_report
from ormock.pytest_plugin.fake import API_KEY, OrmockFixture
from ormock.pytest_plugin.options import (
    KEYS,
    RECORD_MODES,
    OptionsError,
    OrmockOptions,
    SessionSettings,
    parse_float,
    parse_profile,
    parse_seed,
    parse_upstream,
    parse_url,
    resolve,
    validate,
)
from ormock.pytest_plugin.profiles import (  # noqa: F401  (a hook: pytest finds it here)
    ProfileSummary,
    profile_level,
    pytest_generate_tests,
)
from ormock.pytest_plugin.session import SESSION, OrmockSession

if TYPE_CHECKING:
    from ormock.server.runner import OrmockServer

__all__ = ["OrmockFixture", "OrmockOptions"]

FAKES = pytest.StashKey[list[OrmockFixture]]()
CALL_REPORT = pytest.StashKey[pytest.TestReport]()
POLICY_KEYS = frozenset(KEYS) - {"scenario", "faults", "chaos", "cassette"}

MARKER = (
    "ormock(scenario=None, faults=None, chaos=None, cassette=None, cassette_ignore=(), "
    "cassette_order='any', cassette_speed=0, strict=True, "
    "assert_all_matched=True, assert_all_used=True, assert_valid_replies=True, "
    "assert_no_server_errors=True, seed=None, speed=None): configure the test's ormock fake: "
    "scenarios and faults to load, and which after-test checks run (docs/pytest.md)."
)


# -- options ---------------------------------------------------------------------------------------
def _speed(value: str) -> float:
    try:
        return parse_float(value, "--ormock-speed")
    except OptionsError as error:
        raise argparse.ArgumentTypeError(str(error).split(": ", 1)[1]) from None


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from ormock.pytest_plugin import recording

    if not recording.recording_loaded(pluginmanager):  # pytest-recording's hook, for its mode
        pluginmanager.add_hookspecs(recording.hookspecs)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    from ormock.pytest_plugin import recording

    group = parser.getgroup("ormock", "ormock: a fake Open Responses provider per test")
    recording.add_options(parser, pluginmanager)
    group.addoption("--ormock-record", choices=RECORD_MODES, default="none",
                    help="cassette record mode (for the fakes with a cassette): none (default: "
                         "replay only), once (record a cassette that does not exist yet), "
                         "new_episodes (replay, record what misses), all (record everything "
                         "anew), rewrite (delete the cassette first, then as all), drift "
                         "(record each cassette again, fail the tests whose cassette changed "
                         "shape; the file is kept, the new recording saved as NAME.drift.yaml)")
    group.addoption("--ormock-upstream", default=None, metavar="URL",
                    help="the real provider the record modes forward to, such as "
                         "https://api.openai.com/v1 (beats the ini option ormock_upstream)")
    group.addoption("--ormock-upstream-key-env", default="OPENAI_API_KEY", metavar="NAME",
                    help="the environment variable holding the upstream's key (default "
                         "OPENAI_API_KEY); it replaces the client's Authorization towards the "
                         "upstream and is never written to a cassette")
    group.addoption("--ormock-url", default=None, metavar="URL",
                    help="a shared `ormock serve` (http://HOST:PORT) to put every fake on, "
                         "each in a namespace of its own, instead of a server of this "
                         "session's; beats the environment variable ORMOCK_URL, which beats "
                         "the ini option ormock_url")
    group.addoption("--ormock-seed", type=int, default=None, metavar="N",
                    help="seed of the server and of every fake; beats ormock_seed and "
                         "@pytest.mark.ormock(seed=...)")
    group.addoption("--ormock-speed", type=_speed, default=None, metavar="X",
                    help="divide every scripted delay by X (0: instant, 1: as scripted); beats "
                         "@pytest.mark.ormock(speed=...)")
    parser.addini("ormock_scenarios", "folder of scenario files (relative to the rootdir), "
                  "searched after the test file's folder", type="string", default="")
    parser.addini("ormock_plugins", "ormock plugins (modules or .py files with a "
                  "register(registry) function) to load at the start of the session",
                  type="linelist", default=[])
    parser.addini("ormock_strict", "run the after-test checks (default true); a test opts out "
                  "with @pytest.mark.ormock(strict=False)", type="bool", default=True)
    parser.addini("ormock_seed", "default seed of the server and of every fake (default 0)",
                  type="string", default="")
    parser.addini("ormock_upstream", "the real provider the record modes forward to "
                  "(--ormock-upstream beats it)", type="string", default="")
    parser.addini("ormock_cassette_dir", "folder of the default cassettes, relative to each test "
                  "module's folder (default: cassettes): <dir>/<module>/<test>.yaml",
                  type="string", default="cassettes")
    parser.addini("ormock_url", "a shared `ormock serve` for every fake (--ormock-url and "
                  "ORMOCK_URL beat it)", type="string", default="")
    parser.addini("ormock_profile", "wire spellings of the session's server: a profile name "
                  "(`ormock serve --help` lists them; default: the official Open Responses "
                  "spellings)", type="string", default="")


def _settings(config: pytest.Config) -> SessionSettings:
    try:
        strict = bool(config.getini("ormock_strict"))
    except (ValueError, pytest.UsageError) as error:
        raise pytest.UsageError(f"ini option ormock_strict: {error} (use true or false)"
                                ) from None
    try:
        record = config.getoption("ormock_record")
        upstream = config.getoption("ormock_upstream") or \
            str(config.getini("ormock_upstream")).strip() or None
        key_env = config.getoption("ormock_upstream_key_env")
        url = _url(config, record)  # first: recording is refused with it, key or no key
        key = _upstream_key(record, upstream, key_env)
        seed_text = str(config.getini("ormock_seed")).strip()
        return SessionSettings(
            record=record,
            upstream=parse_upstream(upstream) if upstream is not None else None,
            upstream_key=key,
            upstream_key_env=key_env,
            cassette_dir=str(config.getini("ormock_cassette_dir")).strip() or "cassettes",
            cli_seed=config.getoption("ormock_seed"),
            cli_speed=config.getoption("ormock_speed"),
            ini_seed=parse_seed(seed_text, "ini option ormock_seed") if seed_text else None,
            ini_strict=strict,
            scenarios_dir=_folder(config),
            plugins=tuple(config.getini("ormock_plugins")),
            profile=str(config.getini("ormock_profile")).strip() or None,  # checked once the
            # plugins are loaded: one of them may register it
            url=url,
        )
    except OptionsError as error:
        raise pytest.UsageError(str(error)) from None


def _upstream_key(record: str, upstream: str | None, env: str) -> str | None:
    """The upstream's key for a record mode; a usage error when the mode cannot record."""
    if record == "none":
        return None
    if upstream is None:
        raise OptionsError(f"--ormock-record={record} records from a real provider: give it "
                           "with --ormock-upstream URL (or the ini option ormock_upstream), "
                           "e.g. --ormock-upstream https://api.openai.com/v1")
    key = os.environ.get(env)
    if not key:
        raise OptionsError(f"--ormock-record={record}: the environment variable {env} holds no "
                           "key for the upstream; set it, or name another with "
                           "--ormock-upstream-key-env NAME")
    return key


def _url(config: pytest.Config, record: str) -> str | None:
    """The shared server: ``--ormock-url``, else ``$ORMOCK_URL``, else the ini's
    ``ormock_url``; None: the session starts its own."""
    for value, where in ((config.getoption("ormock_url"), "--ormock-url"),
                         (os.environ.get("ORMOCK_URL"), "the environment variable ORMOCK_URL"),
                         (str(config.getini("ormock_url")).strip(), "ini option ormock_url")):
        if value:
            url = parse_url(value, where)
            if record != "none":
                raise OptionsError(
                    f"--ormock-record={record} cannot be used with {where}: a fake on a shared "
                    "server cannot record (the upstream's answers reach that server, not this "
                    f"session). Record without {where} (e.g. ORMOCK_URL= pytest "
                    f"--ormock-record={record} ...), then replay the cassettes with it.")
            return url
    return None


def _folder(config: pytest.Config) -> Path | None:
    value = str(config.getini("ormock_scenarios")).strip()
    if not value:
        return None
    folder = Path(value)
    folder = folder if folder.is_absolute() else config.rootpath / folder
    if not folder.is_dir():
        raise OptionsError(f"ini option ormock_scenarios: {folder} is not a folder")
    return folder


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    settings = _settings(config)
    if settings.plugins:
        from ormock.plugins import PluginError, load_plugins

        try:
            load_plugins(settings.plugins)
        except PluginError as error:
            raise pytest.UsageError(f"ini option ormock_plugins: {error}") from None
    if settings.profile is not None:  # the default: nothing to import at start-up
        try:
            parse_profile(settings.profile, "ini option ormock_profile")
        except OptionsError as error:
            raise pytest.UsageError(str(error)) from None
    config.stash[SESSION] = OrmockSession(settings)
    config.pluginmanager.register(ProfileSummary(), "ormock-profiles")  # its report section
    from ormock.pytest_plugin import recording

    if recording.enabled(config):  # after pytest-recording: its fixtures' names are these
        for line in recording.MARKERS:
            config.addinivalue_line("markers", line)
        config.pluginmanager.register(recording, "ormock-vcr")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is not None:
        session.stop()


def pytest_report_header(config: pytest.Config) -> list[str]:
    session = config.stash.get(SESSION, None)
    if session is None:
        return []
    settings = session.settings
    said = []
    if settings.cli_seed is not None or settings.ini_seed is not None:
        said.append(f"seed={settings.seed}")
    if settings.cli_speed is not None:
        said.append(f"speed={settings.speed:g}")
    if settings.url is not None:
        said.append(f"fakes on {settings.url}")
    if settings.recording and settings.upstream:
        from ormock.server.recorder_file import public_url

        said.append(f"record={settings.record} from {public_url(settings.upstream)} "
                    f"(key from ${settings.upstream_key_env})")
    return [f"ormock: {', '.join(said)}"] if said else []


# -- carrying the outcome of the test to the after-test checks -------------------------------------
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "call":
        fakes = item.stash.get(FAKES, None)
        if fakes is not None:
            item.stash[CALL_REPORT] = report
            if report.failed:  # the test's own failure leads; ormock's findings go with it
                text = after_test_report(fakes)
                if text:
                    report.sections.append(("ormock after-test checks", text))
    return report


@pytest.fixture
def _ormock_checks(request: pytest.FixtureRequest) -> Iterator[list[OrmockFixture]]:
    """The fakes of one test; after it, one report over all of them, then their namespaces go."""
    item = request.node
    fakes: list[OrmockFixture] = []
    item.stash[FAKES] = fakes
    yield fakes
    text = None
    saved: list[str] = []
    try:
        for fake in fakes:
            fake.settle()
        report = item.stash.get(CALL_REPORT, None)
        if report is not None and report.passed:
            text = after_test_report(fakes)
        for fake in fakes:
            problem = fake.save_cassette()
            if problem:
                saved.append(problem)
    finally:
        for fake in fakes:
            fake.close()
        del item.stash[FAKES]
        if CALL_REPORT in item.stash:
            del item.stash[CALL_REPORT]
    text = "\n\n".join([*saved, *([text] if text else [])])
    if text:
        pytest.fail(text, pytrace=False)


# -- fixtures --------------------------------------------------------------------------------------
def _session(request: pytest.FixtureRequest) -> OrmockSession:
    return request.config.stash[SESSION]


def _new_fake(request: pytest.FixtureRequest, fakes: list[OrmockFixture],
              levels: list[tuple[Mapping[str, Any], str]], origin: str,
              keep: frozenset[str] | None = None) -> OrmockFixture:
    session = _session(request)
    problem = None
    checked = []
    try:
        for raw, where in levels:
            values = validate(raw, where)
            if keep is not None and where != origin:
                values = {k: v for k, v in values.items() if k in keep}
            checked.append(values)
    except OptionsError as error:
        problem = str(error)
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    fake = OrmockFixture(session, session.backend(request.node.nodeid),
                         resolve(session.settings, *checked), test_path=request.path,
                         origin=origin, nodeid=request.node.nodeid)
    fakes.append(fake)
    try:
        fake.configure()
    except (ValueError, RuntimeError, ImportError) as error:  # ScenarioError is a ValueError
        problem = f"ormock: {origin}(...) could not be applied: {error}"
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    return fake


def _marker(request: pytest.FixtureRequest) -> Mapping[str, Any]:
    marker: pytest.Mark | None = request.node.get_closest_marker("ormock")
    if marker is None:
        return {}
    if marker.args:
        pytest.fail(f"@pytest.mark.ormock takes keywords only ({', '.join(KEYS)}), not "
                    f"{marker.args!r}; e.g. @pytest.mark.ormock(scenario='text')", pytrace=False)
    return marker.kwargs


@pytest.fixture
def ormock_config() -> Mapping[str, Any]:
    """Defaults for every fake of the tests that see it: the marker's keys. Override it in a
    conftest.py, module or class (any scope); the marker beats it."""
    return {}


@pytest.fixture
def ormock(
    request: pytest.FixtureRequest,
    ormock_config: Mapping[str, Any],
    _ormock_checks: list[OrmockFixture],
) -> OrmockFixture:
    """This test's fake: ``ormock.base_url``, ``.use(...)``, ``.requests``, ``.openai()``."""
    levels = [(ormock_config, "the ormock_config fixture"),
              (_marker(request), "@pytest.mark.ormock"), *profile_level(request)]
    return _new_fake(request, _ormock_checks, levels, "@pytest.mark.ormock")


@pytest.fixture
def ormock_factory(
    request: pytest.FixtureRequest,
    ormock_config: Mapping[str, Any],
    _ormock_checks: list[OrmockFixture],
) -> Callable[..., OrmockFixture]:
    """Make more independent fakes: ``ormock_factory(scenario=..., strict=...)``. Each starts
    empty (the marker's scenario, faults, chaos and cassette are the ``ormock`` fixture's) and
    takes the test's check, seed and speed settings unless the call says otherwise."""

    def make(**keys: Any) -> OrmockFixture:
        levels = [(ormock_config, "the ormock_config fixture"),
                  (_marker(request), "@pytest.mark.ormock"), *profile_level(request),
                  (keys, "ormock_factory")]
        return _new_fake(request, _ormock_checks, levels, "ormock_factory", keep=POLICY_KEYS)

    return make


@pytest.fixture
def ormock_env(ormock: OrmockFixture, monkeypatch: pytest.MonkeyPatch) -> OrmockFixture:
    """``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` point at this test's fake, for code under test
    that builds its own client."""
    monkeypatch.setenv("OPENAI_BASE_URL", ormock.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    return ormock


@pytest.fixture(scope="session")
def ormock_server(request: pytest.FixtureRequest) -> OrmockServer:
    """The session's ``OrmockServer`` (started on first use; one per xdist worker); none with
    ``--ormock-url``, where the fakes are on a shared server (the test fails saying so)."""
    try:
        return _session(request).server()
    except RuntimeError as error:
        pytest.fail(f"ormock_server: {error}", pytrace=False)
