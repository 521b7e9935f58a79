"""Where a fake lives: one interface (``FakeBackend``), two implementations. ``LocalBackend`` is a
namespace of the session's in-process server, worked on through its ``Engine``;
``ormock.pytest_plugin.remote.RemoteBackend`` a namespace of a shared ``ormock serve``
(``--ormock-url``), worked on through its admin API. ``OrmockFixture`` talks only to this
interface; the entries of a journal are ``JournalEntry`` values either way (a remote one's
read from its admin API with ``JournalEntry.from_dict``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ormock.engine.journal import JournalEntry

if TYPE_CHECKING:
    from ormock.cassette.matching import Order
    from ormock.cassette.model import Cassette
    from ormock.engine.core import Engine
    from ormock.engine.replays import Replays, Upstream
    from ormock.engine.verdict import Rules, Verdict
    from ormock.faults import Fault
    from ormock.faults.chaos import Chaos
    from ormock.pytest_plugin.session import OrmockSession
    from ormock.scenario import Scenario
    from ormock.server.runner import OrmockServer

__all__ = ["FakeBackend", "LocalBackend"]


class FakeBackend(Protocol):
    """What a fake does to the namespace it lives in."""

    namespace: str

    @property
    def root(self) -> str:
        """The server's root URL (``http://HOST:PORT``)."""

    def open(self, settings: Mapping[str, Any]) -> None:
        """Open the namespace with its own settings (``Namespaces.open``), before any
        request."""

    def engine(self) -> Engine:
        """The in-process engine (a local fake only; a remote one says why not)."""

    def load_scenario(self, scenario: Scenario) -> Scenario: ...
    def inject(self, fault: Fault) -> Fault: ...
    def set_chaos(self, chaos: Chaos) -> None: ...
    def load_cassettes(self, path: Path, ignore: Sequence[str], order: Order
                       ) -> list[Cassette]: ...
    def record_to(self, upstream: Upstream) -> None: ...

    def replays(self) -> Replays | None:
        """The engine's replays if it exists (what a recording fake recorded)."""

    def journal(self) -> list[JournalEntry]: ...

    def leftovers(self) -> dict[str, Any]:
        """``ormock.engine.leftovers`` of the namespace ({} when nothing was made)."""

    def verdict(self, allow: Iterable[str], rules: Rules | None) -> Verdict: ...
    def reset(self, scenarios: bool) -> None: ...

    def close(self) -> None:
        """Drop the namespace (its engine, journal, responses)."""


class LocalBackend:
    """A namespace of the session's own server; its engine is made on first use."""

    def __init__(self, session: OrmockSession, namespace: str) -> None:
        self.namespace = namespace
        self._session = session
        self._settings: dict[str, Any] = {}
        self._engine: Engine | None = None
        self._opened = False
        self._closed = False

    def server(self) -> OrmockServer:
        server = self._session.server()
        if not self._opened and not self._closed:  # requests may reach the namespace from now
            server.namespaces.open(self.namespace, self._settings)
            self._opened = True
        return server

    @property
    def root(self) -> str:
        return self.server().url

    def open(self, settings: Mapping[str, Any]) -> None:
        self._settings = dict(settings)  # applied when the server is first needed

    def engine(self) -> Engine:
        if self._closed:
            raise RuntimeError(f"ormock fake {self.namespace!r} is closed: its test has ended")
        if self._engine is None:
            self._engine = self.server().namespaces.get(self.namespace)
        return self._engine

    def _existing(self) -> Engine | None:
        """The engine, if a request or a call made one (without making one)."""
        if self._engine is None and not self._closed and self._session.started:
            namespaces = self.server().namespaces
            if self.namespace in namespaces.names():
                self._engine = namespaces.get(self.namespace)
        return self._engine

    def load_scenario(self, scenario: Scenario) -> Scenario:
        return self.engine().use(scenario)

    def inject(self, fault: Fault) -> Fault:
        return self.engine().inject(fault)

    def set_chaos(self, chaos: Chaos) -> None:
        self.engine().set_chaos(chaos)

    def load_cassettes(self, path: Path, ignore: Sequence[str], order: Order
                       ) -> list[Cassette]:
        return self.engine().use_cassette(path, ignore=ignore, order=order)

    def record_to(self, upstream: Upstream) -> None:
        self.engine().record_to(upstream)

    def replays(self) -> Replays | None:
        engine = self._existing()
        return engine.replays if engine is not None else None

    def journal(self) -> list[JournalEntry]:
        engine = self._existing()
        return list(engine.journal) if engine is not None else []

    def leftovers(self) -> dict[str, Any]:
        from ormock.engine.leftovers import leftovers

        engine = self._existing()
        return leftovers(engine) if engine is not None else {}

    def verdict(self, allow: Iterable[str], rules: Rules | None) -> Verdict:
        from ormock.engine.verdict import judge

        return judge(self.engine(), allow=allow, rules=rules)

    def reset(self, scenarios: bool) -> None:
        self.engine().reset(scenarios=scenarios)

    def close(self) -> None:
        if self._closed:
            return
        if self._existing() is not None or self._opened:
            self._session.server().namespaces.drop(self.namespace)
        self._engine = None
        self._closed = True
