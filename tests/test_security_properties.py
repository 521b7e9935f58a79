"""Safe by default (issue 8), as properties: whatever a request names or sends, the server opens
no file outside its scenario folders, answers with an error envelope rather than a 500, goes on
serving, and never repeats a secret it was given (in an answer, the journal or a log line).

Opened files are seen with an audit hook (``sys.addaudithook``): it is installed once, when this
module is imported (a hook can never be removed), and does nothing unless a test is recording.
The server runs in a thread of this process, so the hook sees what it opens too.
"""

from __future__ import annotations

import importlib.machinery
import json
import logging
import os
import re
import site
import string
import sys
import threading
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from layouts import scenario_layout

import ormock
from ormock import OrmockServer
from ormock.scenario import catalogue_dir
from ormock.scenario.catalogue import named_scenarios

# -- the audit hook -------------------------------------------------------------------------------
_EVENTS = frozenset({"open", "os.scandir", "os.listdir"})
# The hook's state lives in a module of its own in sys.modules, so that the hook is installed
# once per process even if this file is imported again.
_STATE_NAME = "_ormock_security_audit"


def _install() -> Any:
    state = sys.modules.get(_STATE_NAME)
    if state is not None:
        return state
    state = types.ModuleType(_STATE_NAME)
    lock = threading.Lock()
    recorders: list[list[tuple[str, str]]] = []  # one list per recording test; none: idle
    setattr(state, "lock", lock)  # noqa: B010  (a plain module: no typed attributes)
    setattr(state, "recorders", recorders)  # noqa: B010

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if not recorders or event not in _EVENTS:  # the cheap path, taken by every other event
            return
        target = args[0] if args else None
        if isinstance(target, int):  # a descriptor: its path was opened (and seen) before
            return
        try:  # os.scandir() with no argument lists the current directory
            text = os.path.abspath(os.fsdecode(target if target is not None else "."))
        except (TypeError, ValueError, OSError):
            text = f"<unreadable {target!r}>"
        with lock:
            for seen in recorders:
                seen.append((event, text))

    sys.modules[_STATE_NAME] = state
    sys.addaudithook(audit)
    return state


_STATE = _install()
_LOCK: threading.Lock = _STATE.lock
_RECORDERS: list[list[tuple[str, str]]] = _STATE.recorders


@contextmanager
def recording() -> Iterator[list[tuple[str, str]]]:
    """Every (event, absolute path) the process opens or lists, in any thread, until the end."""
    seen: list[tuple[str, str]] = []
    with _LOCK:
        _RECORDERS.append(seen)
    try:
        yield seen
    finally:
        with _LOCK:
            _RECORDERS.remove(seen)


# -- what may be opened ---------------------------------------------------------------------------
# The allow-list, by real path (links resolved, so a link in a scenario folder that leads out of
# it is a violation):
# - the configured scenario folders (their listing and files): what requests may name;
# - the package's own install: the ``ormock`` package folder and its catalogue folder
#   (``catalogue_dir()``: the repository's ``scenarios/`` or the wheel's ``_scenarios``);
# - Python itself: ``sys.prefix``, ``sys.base_prefix`` and the exec prefixes, the site-packages
#   folders (the virtualenv's, the user's): lazy imports, ``*.dist-info`` entry points, Faker's
#   locale providers;
# - the import system over ``sys.path`` (which holds the repository root under PYTHONPATH and
#   the tests folder): a listing (``os.listdir``, as importlib's FileFinder does) of an entry or
#   a folder under it, and an open of a file with an import suffix (.py, .pyc, .so, ...) there;
# - ``/proc`` and ``/dev`` (the interpreter's and the event loop's own look-ups), and time zone
#   data (``/etc/localtime``, ``/etc/timezone``, ``/usr/share/zoneinfo``), should they show up.
# Nothing else: no file of the working directory but Python modules (it is on sys.path), not the
# tmp root the folders sit in, and above all not ``outside/`` (the secret file): those two are
# violations even if a rule above covered them.
_SYSTEM_ROOTS = ("/proc", "/dev", "/usr/share/zoneinfo")
_SYSTEM_FILES = ("/etc/localtime", "/etc/timezone")
_IMPORT_SUFFIXES = tuple(importlib.machinery.all_suffixes())


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def _within(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _allowed_roots(folders: tuple[Path, ...]) -> tuple[Path, ...]:
    python: list[str] = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                         *site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        python.append(site.getusersitepackages())
    ours: list[str | Path] = [*folders, Path(ormock.__file__).parent, catalogue_dir()]
    return tuple(_real(p) for p in (*ours, *python, *_SYSTEM_ROOTS))


def violations(seen: list[tuple[str, str]], layout: Path) -> list[tuple[str, str, str]]:
    """The (event, path, real path) of ``seen`` the allow-list does not cover, and any touch of
    the tmp root or of ``outside/`` whatever the allow-list says."""
    roots = _allowed_roots((layout / "scenarios",))
    imports = tuple(_real(p or ".") for p in sys.path)
    files = {_real(p) for p in _SYSTEM_FILES}
    outside, root = _real(layout / "outside"), _real(layout)
    bad = []
    for event, path in seen:
        real = _real(path)
        forbidden = real == root or _within(real, (outside,))
        allowed = (_within(real, roots) or real in files
                   or (_within(real, imports)
                       and (event == "os.listdir" or real.name.endswith(_IMPORT_SUFFIXES))))
        if forbidden or not allowed:
            bad.append((event, path, str(real)))
    return bad


# -- the layout and the server --------------------------------------------------------------------
MARK = "topsecret-value"
EVIL = f"""\
name: evil
steps:
  - times: forever
    reply:
      items:
        - message: "served from outside the scenario folders: {MARK}"
"""
MINE = """\
name: mine
steps:
  - times: forever
    reply:
      items:
        - message: "mine"
"""
PLAIN = {"model": "m", "input": "x"}
ADMIN = "adm"  # the namespace the admin bodies go to: faults they add never reach other requests


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``root/scenarios/mine.yaml`` (the configured folder), ``root/outside/evil.yaml`` (the
    secret), and ``root/scenarios/linked.yaml``, a link that leads to it."""
    return scenario_layout(tmp_path_factory.mktemp("props"), MINE, EVIL)


@pytest.fixture(scope="module")
def folder_server(layout: Path) -> Iterator[OrmockServer]:
    with OrmockServer(scenario_dirs=[layout / "scenarios"], speed=0) as running:
        running.namespaces.open(ADMIN)
        yield running


class ServerErrors(logging.Handler):
    """Counts the errors uvicorn logs, once their traceback is written (the handler goes after
    uvicorn's own on the ``uvicorn`` logger)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        self.format(record)  # the traceback, should no handler before this one have written it
        with self.changed:
            self.count += 1
            self.changed.notify_all()

    def wait_past(self, count: int, timeout: float = 5.0) -> None:
        with self.changed:
            self.changed.wait_for(lambda: self.count > count, timeout)


class SettlingClient(httpx.Client):
    """A client that, after a 5xx or a dropped connection, waits until the server has logged
    the traceback before going on. Python 3.11 formats a traceback with the ``ast`` module,
    and so does pytest a failure: the two at once, in two threads, can end the run with
    "SystemError: AST constructor recursion depth mismatch" (the counter is not per thread)."""

    errors = ServerErrors()

    def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        before = self.errors.count
        try:
            response = super().send(request, **kwargs)
        except httpx.TransportError:
            self.errors.wait_past(before)
            raise
        if response.status_code >= 500:
            self.errors.wait_past(before)
        return response


@pytest.fixture(scope="module")
def raw(folder_server: OrmockServer) -> Iterator[httpx.Client]:
    uvicorn_logger = logging.getLogger("uvicorn")  # configured when the server was made
    uvicorn_logger.addHandler(SettlingClient.errors)
    try:
        with SettlingClient(base_url=folder_server.url, timeout=30) as client:
            yield client
    finally:
        uvicorn_logger.removeHandler(SettlingClient.errors)


def assert_answer(response: httpx.Response) -> None:
    """A success, or a well-formed error envelope that is not a server error."""
    assert response.status_code < 500, (response.status_code, response.text[:500])
    assert MARK not in response.text
    body = response.json()
    if response.status_code >= 400:
        assert set(body) == {"error"}, body
        assert set(body["error"]) == {"message", "type", "param", "code"}, body
        assert isinstance(body["error"]["message"], str) and body["error"]["code"]
    else:
        assert isinstance(body, dict) and set(body) != {"error"}, body


def assert_still_serves(raw: httpx.Client) -> None:
    plain = raw.post("/v1/responses", json=PLAIN)
    assert plain.status_code == 200, plain.text
    assert plain.json()["status"] == "completed"


# -- strategies -----------------------------------------------------------------------------------
# Spellings of the outside file (and of the link to it) a request might try; the placeholders are
# filled in from the layout: {evil} (absolute), {root}, {fromcwd} (relative to the working
# directory, where ormock once looked), {dots} ("./" repeated), {ext} (".yaml" or nothing).
SPELLINGS = (
    "{evil}{ext}", "../outside/evil{ext}", "{dots}../outside/evil{ext}", "../../outside/evil{ext}",
    "{root}/outside/evil{ext}", "{root}/scenarios/../outside/evil{ext}", "{fromcwd}{ext}",
    "{dots}{fromcwd}{ext}", "{rootname}/outside/evil{ext}", "linked{ext}", "{dots}linked{ext}",
    "{root}/scenarios/linked{ext}", "{dots}mine{ext}", "scenarios/mine{ext}",
    "%2e%2e/outside/evil{ext}", "%2e%2e%2foutside%2fevil{ext}", "..\\outside\\evil{ext}",
    "file://{evil}{ext}", "~/../{evil}{ext}", "{evil}{ext}\n", "..", ".", "/", "",
)
spelling = st.builds(
    lambda form, dots, ext: form.replace("{dots}", "./" * dots).replace("{ext}", ext),
    st.sampled_from(SPELLINGS), st.integers(0, 60), st.sampled_from(["", ".yaml", ".yml"]))


def fill(layout: Path, text: str) -> str:
    """``text`` with the placeholders of the layout filled in."""
    evil = layout / "outside" / "evil"
    return (text.replace("{evil}", str(evil)).replace("{rootname}", layout.name)
            .replace("{root}", str(layout))
            .replace("{fromcwd}", os.path.relpath(evil, os.getcwd())))


TRICKS = ("..", "../", "./", "/", "\\", "%2e", "%2f", "%2e%2e%2f", "%00", ".yaml", ".yml", "~",
          "mine", "text", "evil", "outside", "linked", "scenarios", ":", "ormock:", "*", "?", " ")
any_text = st.text(st.characters(exclude_characters="\x00"), max_size=400)
latin_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=400)
pieces = st.lists(st.one_of(st.sampled_from(TRICKS), st.text(max_size=12)), max_size=40).map(
    lambda parts: "".join(parts).replace("\x00", "")[:400])
# a name is plain text, a run of path pieces, or a spelling of the outside file
names = st.one_of(any_text, latin_text, pieces, spelling)

_FIELD = r"[\x21-\x7e\x80-\xff]"


def sendable(value: str) -> bytes | None:
    """The bytes of a header value h11 lets a client send, or None (not latin-1, control
    characters, surrounding whitespace)."""
    try:
        encoded = value.encode("latin-1")
    except UnicodeEncodeError:
        return None
    if value and not re.fullmatch(f"{_FIELD}+(?:[ \t]+{_FIELD}+)*", value):
        return None
    return encoded


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30) | spelling,
    lambda inner: st.lists(inner, max_size=5)
    | st.dictionaries(st.text(max_size=12) | st.sampled_from(
        ["name", "steps", "reply", "match", "items", "message", "file", "path", "include",
         "$schema", "$ref", "source", "chaos", "faults", "rate", "seed", "http_error", "times"]),
        inner, max_size=5),
    max_leaves=25,
)
# YAML (or JSON) text that a loader might take for something else: tags of the unsafe loaders,
# anchors and aliases (a few: an alias bomb has its own test below), merge keys, includes,
# file references, and names of the outside file
ODD_BODIES = (
    "!!python/object/apply:os.system ['touch {root}/pwned']",
    "!!python/object/new:subprocess.Popen [['cat', '{evil}.yaml']]",
    "!!python/name:os.system", "!!python/module:os", "!!binary aGVsbG8=",
    "name: !!python/object/apply:builtins.open ['{evil}.yaml']\nsteps: []\n",
    "a: &x {b: 1}\nc: *x\nd: {<<: *x, e: 2}\n",
    "name: &n x\nsteps:\n  - reply: &r {items: [{message: *n}]}\n  - reply: *r\n",
    "a: &a [1, 2]\nb: &b [*a, *a]\nc: &c [*b, *b]\n",
    "name: x\nsteps: *undefined\n", "&a [*a]", "!include {evil}.yaml", "<<: *nothing",
    "name: x\nsteps:\n  - reply: {}\n", "name: x\nsteps:\n  - reply: {file: '{evil}.yaml'}\n",
    '{"$ref": "file://{evil}.yaml"}', '{"$schema": "file://{evil}.yaml", "name": "x", '
    '"steps": [{"reply": {}}]}', "{evil}.yaml", "{evil}", "../outside/evil.yaml", "linked",
    "linked.yaml", "http_error: {status: 500}", "- no_done\n- {truncate: {}}\n",
    "rate=1,seed=7,faults={evil}.yaml", "faults: ['{evil}.yaml']\nrate: 0.5\n",
    "%YAML 1.1\n---\nname: x\n...\n--- second\n", "\ufeffname: x\nsteps: []\n",
)


def _dump_yaml(value: Any) -> str:
    return yaml.safe_dump(value, allow_unicode=True)


admin_texts = st.one_of(
    st.sampled_from(ODD_BODIES),
    json_values.map(json.dumps),
    json_values.map(_dump_yaml),
    st.fixed_dictionaries({"name": st.text(max_size=20) | spelling,
                           "steps": st.lists(json_values, max_size=3)}).map(json.dumps),
    st.text(max_size=300),
)
ENDPOINTS = (("POST", "/scenarios"), ("POST", "/faults"), ("PUT", "/chaos"))
KINDS = ("application/json", "application/yaml", "application/x-yaml", "text/yaml",
         "application/json; charset=utf-8")


# -- property 1: nothing outside the scenario folders is opened -----------------------------------
@settings(max_examples=150, deadline=None)
@given(chosen=names)
def test_request_chosen_names_never_open_a_file_outside_the_folders(
    folder_server: OrmockServer, raw: httpx.Client, layout: Path, chosen: str
) -> None:
    name = fill(layout, chosen)[:400]
    known = named_scenarios((layout / "scenarios",))
    header = sendable(name)
    with recording() as seen:
        # as ASCII JSON: a lone surrogate in the name goes as its \u escape
        model = json.dumps({"model": f"ormock:{name}", "input": "x"})
        answers = [raw.post("/v1/responses", content=model,
                            headers={"Content-Type": "application/json"})]
        if header is not None:
            answers.append(raw.post("/v1/responses", json=PLAIN,
                                    headers={b"X-Ormock-Scenario": header}))
    assert violations(seen, layout) == [], name
    if name not in known:  # a real scenario answers as it says (some with a 500 on purpose)
        for response in answers:
            assert_answer(response)
    assert_still_serves(raw)


@settings(max_examples=150, deadline=None)
@given(text=admin_texts, kind=st.sampled_from(KINDS), endpoint=st.sampled_from(ENDPOINTS))
def test_admin_bodies_never_open_a_file_outside_the_folders(
    folder_server: OrmockServer, raw: httpx.Client, layout: Path, text: str,
    kind: str, endpoint: tuple[str, str]
) -> None:
    method, path = endpoint
    body = fill(layout, text).encode("utf-8", "surrogatepass")
    with recording() as seen:
        response = raw.request(method, f"/{ADMIN}/_ormock{path}", content=body,
                               headers={"Content-Type": kind})
    assert violations(seen, layout) == [], text
    assert_answer(response)
    loaded = raw.get(f"/{ADMIN}/_ormock/scenarios").json()["data"]
    assert all(s["source"] is None for s in loaded), loaded  # from the body, never from a file
    cleared = raw.delete(f"/{ADMIN}/_ormock/faults", headers={"X-Ormock-Admin": "1"})
    reset = raw.post(f"/{ADMIN}/_ormock/reset?scenarios=true", headers={"X-Ormock-Admin": "1"})
    assert cleared.status_code == 200 and reset.status_code == 200
    assert_still_serves(raw)


@settings(max_examples=150, deadline=None)
@given(value=json_values)
def test_admin_json_documents_never_open_a_file_outside_the_folders(
    folder_server: OrmockServer, raw: httpx.Client, layout: Path, value: Any
) -> None:
    """Scenario-shaped JSON (st.recursive) with spellings of the outside file anywhere in it."""
    if isinstance(value, dict):
        value.setdefault("name", "x")
    document = fill(layout, json.dumps(value))
    with recording() as seen:
        responses = [raw.request(method, f"/{ADMIN}/_ormock{path}", content=document,
                                 headers={"Content-Type": "application/json"})
                     for method, path in ENDPOINTS]
    assert violations(seen, layout) == [], document
    for response in responses:
        assert_answer(response)
    raw.post(f"/{ADMIN}/_ormock/reset?scenarios=true", headers={"X-Ormock-Admin": "1"})
    assert_still_serves(raw)


def test_odd_admin_bodies_never_open_a_file_outside_the_folders(
    folder_server: OrmockServer, raw: httpx.Client, layout: Path
) -> None:
    """Every one of the odd bodies, to every endpoint, as YAML and as JSON (the property above
    draws from them at random; this makes sure none is left out). All failures are listed."""
    failures = []
    for text in ODD_BODIES:
        for method, path in ENDPOINTS:
            for kind in ("application/yaml", "application/json"):
                with recording() as seen:
                    try:  # a fresh connection: uvicorn drops one after an unhandled exception
                        response = raw.request(method, f"/{ADMIN}/_ormock{path}",
                                               content=fill(layout, text),
                                               headers={"Content-Type": kind,
                                                        "Connection": "close"})
                    except httpx.HTTPError as error:
                        failures.append((text, path, kind, repr(error)))
                        continue
                bad = violations(seen, layout)
                try:
                    assert not bad, bad
                    assert_answer(response)
                except AssertionError as error:
                    failures.append((text, path, kind, str(error)[:300]))
                raw.delete(f"/{ADMIN}/_ormock/faults", headers={"X-Ormock-Admin": "1"})
                raw.post(f"/{ADMIN}/_ormock/reset?scenarios=true",
                         headers={"X-Ormock-Admin": "1"})
    assert failures == []
    assert not (layout / "pwned").exists()  # no tag of an unsafe loader ran
    assert_still_serves(raw)


def test_the_hook_sees_what_the_server_opens(raw: httpx.Client, layout: Path) -> None:
    """The recording works: a scenario of the folder, named by a request, is seen opened (and
    an open of the outside file would be a violation)."""
    (layout / "scenarios" / "fresh.yaml").write_text(MINE.replace("name: mine", "name: fresh"))
    with recording() as seen:
        response = raw.post("/v1/responses", json={"model": "ormock:fresh", "input": "x"})
    assert response.status_code == 200
    opened = {_real(p) for event, p in seen if event == "open"}
    assert _real(layout / "scenarios" / "fresh.yaml") in opened
    evil = str(layout / "outside" / "evil.yaml")
    assert violations([("open", evil)], layout) == [("open", evil, str(_real(evil)))]
    linked = str(layout / "scenarios" / "linked.yaml")
    assert violations([("open", linked)], layout) != []
    assert violations([("os.scandir", str(layout))], layout) != []


# -- never a 500: YAML that nests deeply, YAML that expands ---------------------------------------
def _nested(shape: str, depth: int) -> str:
    if shape == "flow-list":
        return "[" * depth + "]" * depth
    if shape == "flow-map":
        return "{a: " * depth + "1" + "}" * depth
    if shape == "block-list":
        return "- " * depth + "x\n"
    return "name: x\nsteps:\n  - reply: {items: [{message: " + "[" * depth + "]" * depth + "}]}\n"


@settings(max_examples=60, deadline=None)
@given(depth=st.integers(1, 3000),
       shape=st.sampled_from(["flow-list", "flow-map", "block-list", "in-a-scenario"]),
       endpoint=st.sampled_from(ENDPOINTS))
def test_admin_yaml_that_nests_deeply_is_a_400_not_a_500(
    folder_server: OrmockServer, raw: httpx.Client, depth: int, shape: str,
    endpoint: tuple[str, str]
) -> None:
    method, path = endpoint
    # a fresh connection each time: uvicorn drops a connection after an unhandled exception
    response = raw.request(method, f"/{ADMIN}/_ormock{path}", content=_nested(shape, depth),
                           headers={"Content-Type": "application/yaml", "Connection": "close"})
    raw.post(f"/{ADMIN}/_ormock/reset?scenarios=true",
             headers={"X-Ormock-Admin": "1", "Connection": "close"})
    assert_answer(response)
    assert_still_serves(raw)


def _alias_bomb(depth: int, width: int = 9) -> str:
    """A few hundred bytes of YAML that stand for width**depth strings ("billion laughs")."""
    lines = ["a0: &a0 [lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, depth)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e[1][1:])
def test_an_alias_bomb_in_an_admin_body_is_refused_at_once(
    folder_server: OrmockServer, raw: httpx.Client, endpoint: tuple[str, str]
) -> None:
    """An admin body of ~350 bytes must not hold the server (its one event loop) for seconds:
    9**7 aliases here; 9**9 (~500 bytes) would be minutes."""
    method, path = endpoint
    started = time.monotonic()
    response = raw.request(method, f"/{ADMIN}/_ormock{path}", content=_alias_bomb(7),
                           headers={"Content-Type": "application/yaml"})
    took = time.monotonic() - started
    assert_answer(response)
    assert took < 0.3, f"{path}: {took:.1f} s for a {len(_alias_bomb(7))}-byte body"
    assert_still_serves(raw)


# -- property 2: a secret given in a request is never repeated ------------------------------------
SECRET_NAMES = ("x-api-key", "api-key", "x-goog-api-key", "x-auth-token", "my-service-key",
                "refresh-token", "x-client-secret")
KEYED = {
    "name": "keyed",
    "steps": [
        {"times": "forever", "match": {"headers": {"Authorization": "Bearer sk-test-*"}},
         "reply": {"items": [{"message": "keyed"}]}},
        {"times": "forever", "match": {"headers": {"x-api-key": "sk-test-*",
                                                   "Cookie": "session=sk-test-*"}},
         "reply": {"items": [{"message": "keyed by key"}]}},
    ],
}
SECRETS = "sec"
_UVICORN = ("uvicorn", "uvicorn.error", "uvicorn.asgi", "uvicorn.access")
_TRACE = 5  # uvicorn's TRACE level, below DEBUG: every ASGI message it logs


@pytest.fixture(scope="module")
def secret_server() -> Iterator[OrmockServer]:
    """A server logging everything uvicorn can log, with a scenario keyed on secret headers."""
    with OrmockServer(speed=0, log_level="trace") as running:
        running.namespaces.open(SECRETS)
        running.engine(SECRETS).use(KEYED)
        yield running
    for name in _UVICORN:
        logging.getLogger(name).setLevel(logging.WARNING)


@pytest.fixture(scope="module")
def secret_raw(secret_server: OrmockServer) -> Iterator[httpx.Client]:
    """A client of the namespace of secrets (the base URL ends with it)."""
    with httpx.Client(base_url=f"{secret_server.url}/{SECRETS}", timeout=30) as client:
        yield client


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """caplog at uvicorn's TRACE for ormock and uvicorn; uvicorn's loggers do not propagate to
    the root, so the capturing handler is put on them too."""
    for name in ("ormock", *_UVICORN):
        caplog.set_level(_TRACE, logger=name)
    added = [logging.getLogger(n) for n in ("uvicorn", "uvicorn.access")]
    for logger in added:
        logger.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        for logger in added:
            logger.removeHandler(caplog.handler)


def assert_nowhere(secret: str, tail: str, server: OrmockServer, raw: httpx.Client,
                   shown: list[str], logs: pytest.LogCaptureFixture,
                   capfd: pytest.CaptureFixture[str]) -> None:
    """The secret (and what follows its ``sk-``, and its random part) is in no answer, journal
    entry, server error or log line."""
    journal = raw.get("/_ormock/journal")
    assert journal.status_code == 200 and journal.json()["data"]
    engine = server.engine(SECRETS)
    captured = capfd.readouterr()
    places = {
        "answers": "\n".join(shown),
        "GET /_ormock/journal": journal.text,
        "engine.journal": json.dumps([e.to_dict() for e in engine.journal], ensure_ascii=False),
        "engine.errors": "\n".join(engine.errors),
        "logs": "\n".join(logs.handler.format(r) for r in logs.records
                           if r.name.split(".")[0] in ("ormock", "uvicorn")),
        "stdout/stderr": captured.out + captured.err,
    }
    for where, text in places.items():
        for part in {secret, secret[3:], tail}:
            assert part not in text, (where, part, text[:2000])


def _shown(response: httpx.Response) -> str:
    headers = "\n".join(f"{k}: {v}" for k, v in response.headers.multi_items())
    return f"{response.status_code}\n{headers}\n{response.text}"


def _random_looking(tail: str) -> bool:
    """Like a real key: a digit, an upper and a lower case letter. (Hypothesis also tries the
    words of ormock's source, and a secret of 'instructions' is in every response.)"""
    return (any(c.isdigit() for c in tail) and any(c.isupper() for c in tail)
            and any(c.islower() for c in tail))


secret_tails = st.text(string.ascii_letters + string.digits, min_size=12, max_size=40).filter(
    _random_looking)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tail=secret_tails,
       hit=st.booleans(), named=st.lists(st.sampled_from(SECRET_NAMES), unique=True),
       cookie=st.booleans(), stream=st.booleans())
def test_a_secret_in_a_request_is_in_no_answer_journal_or_log(
    secret_server: OrmockServer, secret_raw: httpx.Client, logs: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str], tail: str, hit: bool, named: list[str], cookie: bool,
    stream: bool
) -> None:
    secret = ("sk-test-" if hit else "sk-") + tail
    engine = secret_server.engine(SECRETS)
    engine.reset(scenarios=False)
    logs.clear()
    capfd.readouterr()
    headers = {"Authorization": f"Bearer {secret}", **dict.fromkeys(named, secret)}
    if cookie:
        headers["Cookie"] = f"session={secret}"
    response = secret_raw.post("/v1/responses", json={**PLAIN, "stream": stream},
                               headers=headers)
    if hit:
        assert response.status_code == 200, response.text
    else:  # a near miss: the 400 says what the header was, masked
        assert response.status_code == 400, response.text
        assert "masked" in response.json()["error"]["message"]
    assert_nowhere(secret, tail, secret_server, secret_raw, [_shown(response)], logs, capfd)


@pytest.mark.parametrize("hit", [True, False], ids=["hit", "near-miss"])
def test_a_secret_given_through_the_openai_sdk_is_in_no_answer_journal_or_log(
    secret_server: OrmockServer, secret_raw: httpx.Client, logs: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str], hit: bool
) -> None:
    tail = "SdkS3cretValue0123456789"
    secret = ("sk-test-" if hit else "sk-") + tail
    secret_server.engine(SECRETS).reset(scenarios=False)
    logs.clear()
    capfd.readouterr()
    shown: list[str] = []
    with openai.OpenAI(base_url=f"{secret_server.url}/{SECRETS}/v1", api_key=secret,
                       max_retries=0, default_headers={
                           "x-api-key": secret, "Cookie": f"session={secret}",
                           "x-client-secret": secret, "refresh-token": secret}) as client:
        if hit:
            made = client.responses.with_raw_response.create(model="m", input="x")
            shown += [made.http_response.text, str(dict(made.headers))]
            assert made.parse().output_text == "keyed"
            with client.responses.with_streaming_response.create(
                model="m", input="x", stream=True
            ) as streamed:
                shown += [streamed.read().decode(), str(dict(streamed.headers))]
                assert "response.completed" in shown[-2]
        else:
            with pytest.raises(openai.BadRequestError) as refused:
                client.responses.create(model="m", input="x")
            error = refused.value
            assert error.code == "no_matching_scenario"
            shown += [str(error), json.dumps(error.body), error.response.text,
                      str(dict(error.response.headers))]
    assert_nowhere(secret, tail, secret_server, secret_raw, shown, logs, capfd)
