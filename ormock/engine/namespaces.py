"""The engines of one server: one per namespace (``/v1`` is the namespace ``""``,
``/<name>/v1`` another).

A request never creates a namespace: only trusted callers do (Python, the pytest plugin, the
admin API), by ``open`` (the engine is made lazily, on first use) or ``get``. A request to a
namespace nobody opened gets 404 ``unknown_namespace``; one to a dropped namespace 404
``namespace_closed``. At most ``limit`` namespaces are open at once: past it the one used
longest ago is dropped, so no sequence of calls grows memory without bound.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ormock.engine.bounded import Bounded
from ormock.engine.core import Engine
from ormock.engine.delivery import InFlight
from ormock.engine.feed import Feed
from ormock.engine.settings import Settings, settings_from
from ormock.engine.shared_admin import Sync
from ormock.engine.stateful import Background
from ormock.engine.store import StoreBackend, open_backend
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.profile import Profile, get_profile
from ormock.scenario import find_scenario

__all__ = ["NAMESPACE_NAME", "NAMESPACE_SETTINGS", "Namespaces", "preload"]

NAMESPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_REGISTRY = "~namespaces"
_OPEN, _CLOSED = b"open", b"closed"
# what a namespace may be opened with (``open(name, settings)``): its engine's seed, speed and
# profile, and the pace of its replayed cassettes
NAMESPACE_SETTINGS = ("seed", "speed", "profile", "replay_speed")
_CLOSED_REMEMBERED = 10_000  # dropped names remembered for the namespace_closed answer


def preload(namespaces: Namespaces, scenarios: Sequence[str]) -> None:
    """Load ``scenarios`` (names or paths) into every engine; fail now if one does not load."""
    loaded = [find_scenario(s, namespaces.settings.scenario_dirs) for s in scenarios]

    def setup(engine: Engine) -> None:
        for scenario in loaded:
            engine.preload(scenario)

    namespaces.setup.append(setup)


def check_name(name: str) -> str:
    """A namespace name as a URL path segment: letters, digits, ``_ . -``, at most 64; not
    ``v1`` (``/v1/...`` is the default namespace's)."""
    if not NAMESPACE_NAME.match(name):
        raise OpenResponsesError(
            "A namespace name is 1 to 64 letters, digits, '_', '.' or '-', starting with a "
            "letter or digit.",
            code="invalid_namespace", param="name",
        )
    if name == "v1":
        raise OpenResponsesError(
            "A namespace cannot be named 'v1': its paths (/v1/v1/..., /v1/_ormock/...) would "
            "be the default namespace's /v1/...; choose another name.",
            code="invalid_namespace", param="name",
        )
    return name


class Namespaces:
    """The engines of one server, one per namespace, made with the same settings."""

    def __init__(self, settings: Settings | None = None, **overrides: Any) -> None:
        """``Namespaces(settings)``; ``Settings`` fields by keyword go over them."""
        self.settings = settings_from(settings, overrides)  # every engine's; its limits bound
        self.limit: int = self.settings.limits.namespaces
        # the named open namespaces, the least recently used dropped past the limit (a
        # request to one is a use, its opening again is not); None: engine not made yet
        self._engines: Bounded[str, Engine | None] = Bounded(self.limit, evicted=self._evicted)
        self._default: Engine | None = None  # the default namespace's: never dropped, uncounted
        self._lock = threading.Lock()  # around both (the cache is not thread-safe)
        self.setup: list[Callable[[Engine], None]] = []  # run on every new engine
        # dropped names, the oldest forgotten first: a late request must not revive one
        self._closed: Bounded[str, None] = Bounded(_CLOSED_REMEMBERED)
        self._own: dict[str, dict[str, Any]] = {}  # the settings a namespace was opened with
        self.feed = Feed()  # entry ids across namespaces, the inspector's live watchers
        self.in_flight = InFlight()  # answers being written
        # a persistent store is one for every namespace, each its own keyspace; in memory,
        # each engine has its own (it goes with the engine)
        self.backend: StoreBackend | None = None
        if self.settings.store != "memory":
            self.backend = open_backend(self.settings.store, self.settings.limits)
        # which namespaces are open, for every process on the store (a keyspace no request
        # can name: namespace names start with a letter or digit)
        self._registry = self.backend.scoped(_REGISTRY) if self.backend is not None else None

    @property
    def seed(self) -> int:
        return self.settings.seed

    def open(self, name: str, settings: Mapping[str, Any] | None = None) -> None:
        """Let requests reach ``name``; its engine is made by the first one.
        ``settings`` (keys of ``NAMESPACE_SETTINGS``): its engine's own seed, speed, profile
        and replay pace, for every process on a shared store; given only to a namespace that
        is not open yet (409 ``namespace_exists`` otherwise)."""
        own = self._checked(settings or {})
        if name in self._engines or (not name and self._default is not None):
            if own:
                raise _exists(name)
            return
        check_name(name)
        fresh = self._registry is not None and self._registry.get("namespace", name) != _OPEN
        if own and self._registry is not None and not fresh:
            raise _exists(name)  # another process opened it
        with self._lock:
            self._closed.pop(name, None)
            if name not in self._engines:  # opening an open one again is no use of it
                self._engines[name] = None
            if own:
                self._own[name] = own
        if fresh and self.backend is not None and self._registry is not None:
            self.backend.scoped(name).clear()  # a dropped one's mark goes
            if own:  # beside the mark: a reset of the namespace clears its keys, not these
                self._registry.put("settings", name, json.dumps(own).encode())
            else:
                self._registry.delete("settings", name)
            self._registry.put("namespace", name, _OPEN)

    def _checked(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The settings a namespace is opened with, each checked as ``Settings`` checks it."""
        unknown = sorted(set(settings) - set(NAMESPACE_SETTINGS))
        if unknown:
            raise OpenResponsesError(
                f"{unknown[0]!r} is not a namespace setting; the settings are "
                f"{', '.join(NAMESPACE_SETTINGS)}.", code="invalid_namespace",
                param=unknown[0])
        own = {k: v for k, v in settings.items() if v is not None}
        for key, value in own.items():
            problem = None
            if key == "replay_speed":
                if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                        not math.isfinite(value) or value < 0:
                    problem = f"replay_speed must be a number >= 0 (0: at once), not {value!r}"
            elif key in self._changes({key: value}):  # the server's own value needs no check
                try:
                    settings_from(self.settings, {key: value})
                except (TypeError, ValueError) as error:
                    problem = str(error)
            if problem is not None:
                raise OpenResponsesError(f"The namespace was not opened: {problem}.",
                                         code="invalid_namespace", param=key)
        return own

    def _changes(self, own: Mapping[str, Any]) -> dict[str, Any]:
        """The settings of ``own`` an engine takes that differ from the server's."""
        current = self.settings
        return {k: v for k, v in own.items() if k != "replay_speed" and not (
            (k == "profile" and v == current.profile.name) or
            (k != "profile" and type(v) is type(getattr(current, k)) and
             v == getattr(current, k)))}

    def _settings_of(self, name: str) -> dict[str, Any]:
        """What ``name`` was opened with (by this process, or another on the shared store)."""
        own = self._own.get(name)
        if own is None and name and self._registry is not None:
            raw = self._registry.get("settings", name)
            own = json.loads(raw) if raw is not None else {}
        return own or {}

    def get(self, name: str = "") -> Engine:
        """The engine of a namespace, opened and made if need be (for trusted callers)."""
        if name and name not in self._engines:
            self.open(name)
        return self._pulled(name)

    def serve(self, name: str = "", *, lazily: bool = False) -> Engine:
        """The engine a request to ``name`` reaches: 404 unless the namespace is open (on
        this process, or with a shared store on any), with what other processes changed taken
        in; ``lazily``: a warm engine as this process knows it, without reading the admin
        stamp first (the create route checks the stamp in its commit, ``attempt.hold``, and
        pulls on ``Stale``)."""
        if name and name not in self._engines:
            mark = self._registry.get("namespace", name) if self._registry else None
            if mark != _OPEN:
                if mark == _CLOSED:
                    with self._lock:
                        self._remember_closed(name)
                raise self._unknown(name)
            with self._lock:  # another process opened it
                self._closed.pop(name, None)
                if name not in self._engines:
                    self._engines[name] = None
        return self._pulled(name, lazily)

    def _pulled(self, name: str, lazily: bool = False) -> Engine:
        """The engine, with what other processes on a shared store changed taken in (not
        when ``lazily`` and it is warm: it has applied an admin stamp already)."""
        engine = self._engine(name)
        if self.backend is not None:
            sync = engine.sharing.sync
            if not (lazily and sync is not None and sync.stamp is not None):
                self.pull(name, engine)
        return engine

    def pull(self, name: str, engine: Engine) -> None:
        """Take in what other processes changed (``Engine.pull``); a namespace another
        process dropped is forgotten here too, and answers 404 ``namespace_closed``."""
        try:
            engine.pull()
        except OpenResponsesError:  # another process dropped it
            with self._lock:
                if self._made(name) is engine:
                    self._removed(name)
                    self._remember_closed(name)
            raise

    def _engine(self, name: str) -> Engine:
        if name:
            with self._lock:
                engine = self._engines.get(name)  # a use: the most recent now
        else:
            engine = self._default
        if engine is not None:
            return engine
        with self._lock:
            engine = self._made(name)
            if engine is None:
                if name and name not in self._engines:
                    raise self._unknown(name)  # dropped meanwhile
                own = self._settings_of(name)
                changes = self._changes(own)
                settings = settings_from(self.settings, changes) if changes else self.settings
                engine = Engine(settings, backend=self.backend.scoped(name)
                                if self.backend is not None else None,
                                shared=self.backend is not None)
                if "replay_speed" in own:
                    engine.replay_speed = float(own["replay_speed"])
                engine.feed, engine.name = self.feed, name
                for setup in self.setup:
                    setup(engine)
                if name:
                    self._engines[name] = engine  # a write: the most recent too
                else:
                    self._default = engine
        return engine

    def _made(self, name: str) -> Engine | None:
        """The engine of ``name`` if made, its recency left as it was; under the lock."""
        return self._engines.peek(name) if name else self._default

    def _removed(self, name: str) -> Engine | None:
        """Forget ``name``'s engine (and that it is open); the engine, if made. Under the
        lock."""
        if name:
            return self._engines.pop(name, None)
        engine, self._default = self._default, None
        return engine

    def _all(self) -> list[Engine]:
        """Every engine made, the default one first."""
        with self._lock:
            named = [engine for _, engine in self._engines.entries() if engine is not None]
        return [self._default, *named] if self._default is not None else named

    def _unknown(self, name: str) -> OpenResponsesError:
        if name in self._closed:
            return OpenResponsesError(
                "This namespace is closed: the test that owned it has ended. A request that "
                "arrives after its test is a leak in the code under test (a background thread "
                "or task still running).",
                type="not_found", code="namespace_closed", param="path",
            )
        return OpenResponsesError(
            "No such namespace on this server: requests do not create namespaces. Open it "
            "first (POST /_ormock/namespaces with {\"name\": ...}, server.engine(name) in "
            "Python, or the pytest plugin's fixtures), or use /v1 without a prefix.",
            type="not_found", code="unknown_namespace", param="path",
        )

    def _evicted(self, name: str, engine: Engine | None) -> None:
        """Past the limit, the namespace used longest ago is dropped (under the lock)."""
        self._own.pop(name, None)
        if engine is not None:  # under the lock: cancelled, not waited for
            Background.cancel_all(engine.responses, wait=0)
        self._remember_closed(name)
        self._forget(name)

    def _remember_closed(self, name: str) -> None:
        if name not in self._closed:  # closed again: remembered from its first closing
            self._closed[name] = None

    def profile_of(self, name: str = "") -> Profile:
        """The profile a namespace plays: its engine's, else the one it was opened with, else
        the server's (without making its engine)."""
        engine = self.find(name)
        if engine is not None:
            return engine.profile
        own = self._settings_of(name).get("profile") if name in self._engines else None
        return get_profile(own) if own is not None else self.settings.profile

    def find(self, name: str = "") -> Engine | None:
        """The engine of a namespace if it exists; never makes one, nor uses it."""
        if not name:
            return self._default
        with self._lock:
            return self._engines.peek(name)

    def drop(self, name: str) -> None:
        """Forget a namespace for good: its engine goes (and its keys of a persistent store),
        and later requests to it get 404."""
        with self._lock:
            engine = self._removed(name)
            self._own.pop(name, None)
            if name:
                self._remember_closed(name)
        if engine is not None:  # its background tasks end before its keys go
            Background.cancel_all(engine.responses)
        if name:
            self._forget(name)

    def _forget(self, name: str) -> None:
        if self.backend is not None and self._registry is not None:
            keys = self.backend.scoped(name)
            keys.clear()
            Sync(keys).drop()  # the other processes' engines of it answer 404 from now on
            self._registry.delete("settings", name)
            self._registry.put("namespace", name, _CLOSED)

    def stop_runs(self) -> None:
        """Stop every background run, stored ``cancelled`` (the server is stopping: the
        streams that follow them end instead of holding the shutdown up)."""
        for engine in self._all():
            Background.cancel_all(engine.responses, mark=True)

    def close(self) -> None:
        """Release a persistent store (the server has stopped); no background task outlives
        the server (the loop's end cancels them; this, any left)."""
        for engine in self._all():
            Background.cancel_all(engine.responses)
        if self.backend is not None:
            self.backend.close()

    def names(self) -> list[str]:
        """The namespaces whose engine exists."""
        return sorted(e.name for e in self._all())

    def opened(self) -> list[str]:
        """Every open namespace, made or not (with a shared store: by any process)."""
        names = {n for n in list(self._engines) if n}
        if self._registry is not None:
            marks = self._registry.list("namespace", limit=self.limit + 1, reverse=True)
            names |= {name for name, mark in marks if mark == _OPEN}
            names -= {name for name, mark in marks if mark == _CLOSED}
        return sorted(names)


def _exists(name: str) -> OpenResponsesError:
    return OpenResponsesError(
        f"The namespace {name!r} is open already: its settings are given when it is opened. "
        "Open a new name, or drop this one first.", type="conflict",
        code="namespace_exists", param="name")
