"""One ormock server per pytest session (per xdist worker), started on first use.

Each fake gets a namespace of its own (``t-<crc32 of the test id>-<n>``): the engine behind it is
made on first use, and dropped after the test, so memory stays flat over any number of tests.
"""

from __future__ import annotations

import itertools
import threading
import weakref
import zlib
from typing import TYPE_CHECKING, Any

from ormock.pytest_plugin.options import SessionSettings

if TYPE_CHECKING:
    from ormock.engine.core import Engine
    from ormock.engine.journal import JournalEntry
    from ormock.engine.reply import RawReply, Reply
    from ormock.server.runner import OrmockServer

__all__ = ["OrmockSession"]


class OrmockSession:
    """The session's settings, its server (lazily), and what the server saw go wrong."""

    def __init__(self, settings: SessionSettings) -> None:
        self.settings = settings
        self._server: OrmockServer | None = None
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        # replies a literal scenario step produced that the client could not be sent, per engine
        self.bad_replies: weakref.WeakKeyDictionary[Engine, list[str]] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def started(self) -> bool:
        return self._server is not None

    def server(self) -> OrmockServer:
        server = self._server
        if server is not None:
            return server
        with self._lock:
            if self._server is None:
                from ormock.engine.settings import Settings
                from ormock.protocol.profile import get_profile
                from ormock.server.runner import OrmockServer

                dirs = (self.settings.scenarios_dir,) if self.settings.scenarios_dir else ()
                server = OrmockServer(settings=Settings(
                    seed=self.settings.seed, speed=self.settings.speed, scenario_dirs=dirs,
                    profile=get_profile(self.settings.profile)))
                server.namespaces.setup.append(self._watch)
                self._server = server.start()
            return self._server

    def namespace(self, nodeid: str) -> str:
        """A URL-safe namespace no other fake of this session has."""
        return f"t-{zlib.crc32(nodeid.encode()):08x}-{next(self._counter)}"

    def stop(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.stop()
                self._server = None

    # -- watching replies -------------------------------------------------------------------
    def _watch(self, engine: Engine) -> None:
        """Runs for every new engine (in the server thread)."""

        def on_reply(entry: JournalEntry, reply: Reply | RawReply) -> None:
            self._check_literal(engine, entry, reply)

        engine.on_reply.append(on_reply)

    def _check_literal(self, engine: Engine, entry: JournalEntry, reply: Any) -> None:
        """A literal step's events must fold into a Response for a JSON (non-streaming) reply:
        otherwise the client gets a 500 ``unfoldable_reply`` (the journal entry says so), which
        the test should hear of."""
        error = entry.error
        if entry.scenario is None or entry.step is None or error is None or error.get(
                "code") != "unfoldable_reply":
            return
        scenario = engine.scenarios.get(entry.scenario) or engine.named.get(entry.scenario)
        if scenario is None or not 0 < entry.step <= len(scenario.steps):
            return
        step = scenario.steps[entry.step - 1]
        self.bad_replies.setdefault(engine, []).append(
            f"scenario {scenario.name!r} {step.label} ({scenario.where(step)}) answered a "
            f"non-streaming request with literal events; the client got HTTP 500 "
            f"unfoldable_reply: {error.get('message')} Or give the events a terminal "
            "response.completed / response.failed / response.incomplete event."
        )
