"""One ormock server per pytest session (per xdist worker), started on first use; or, with
``--ormock-url``, a shared ``ormock serve`` that the session only talks to.

Each fake gets a namespace of its own: ``t-<crc32 of the test id>-<n>`` on the session's server
(the engine behind it is made on first use); on a shared server ``<xdist worker>-<random of the
session>-<crc32 of the test id>-<n>``, so sessions on several machines never collide. Either
way it is dropped after the test, so memory stays flat over any number of tests.
"""

from __future__ import annotations

import itertools
import os
import secrets
import threading
import zlib
from typing import TYPE_CHECKING

import pytest

from ormock.pytest_plugin.options import SessionSettings

if TYPE_CHECKING:
    import httpx

    from ormock.pytest_plugin.backend import FakeBackend
    from ormock.server.runner import OrmockServer

__all__ = ["SESSION", "OrmockSession"]


class OrmockSession:
    """The session's settings, and its server (lazily) or its client of the shared one."""

    def __init__(self, settings: SessionSettings) -> None:
        self.settings = settings
        self._server: OrmockServer | None = None
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self._token = secrets.token_hex(4)  # this session's, among every machine's

    @property
    def remote(self) -> bool:
        return self.settings.url is not None

    @property
    def started(self) -> bool:
        return self._server is not None

    def server(self) -> OrmockServer:
        if self.settings.url is not None:
            raise RuntimeError(
                f"this session has no ormock server of its own: its fakes are on "
                f"{self.settings.url} (--ormock-url); the ormock_server fixture and "
                "ormock.server are for a local session (run without --ormock-url)")
        server = self._server
        if server is not None:
            return server
        with self._lock:
            if self._server is None:
                from ormock.engine.settings import Settings
                from ormock.protocol.profile import get_profile
                from ormock.server.runner import OrmockServer

                dirs = (self.settings.scenarios_dir,) if self.settings.scenarios_dir else ()
                self._server = OrmockServer(settings=Settings(
                    seed=self.settings.seed, speed=self.settings.speed, scenario_dirs=dirs,
                    profile=get_profile(self.settings.profile))).start()
            return self._server

    def namespace(self, nodeid: str) -> str:
        """A URL-safe namespace no other fake of this session (or, on a shared server, of any
        session) has."""
        crc = f"{zlib.crc32(nodeid.encode()):08x}"
        if self.settings.url is None:
            return f"t-{crc}-{next(self._counter)}"
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        worker = "".join(c for c in worker if c.isalnum())[:16] or "main"
        return f"{worker}-{self._token}-{crc}-{next(self._counter)}"

    def backend(self, nodeid: str) -> FakeBackend:
        """Where a new fake lives: a namespace here, or on the shared server."""
        if self.settings.url is None:
            from ormock.pytest_plugin.backend import LocalBackend

            return LocalBackend(self, self.namespace(nodeid))
        from ormock.pytest_plugin.remote import RemoteBackend

        return RemoteBackend(self.client(), self.settings.url, self.namespace(nodeid))

    def client(self) -> httpx.Client:
        """The session's HTTP client of the shared server's admin API."""
        with self._lock:
            if self._client is None:
                import httpx

                self._client = httpx.Client(base_url=self.settings.url or "", timeout=30.0)
            return self._client

    def stop(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.stop()
                self._server = None
            if self._client is not None:
                self._client.close()
                self._client = None


SESSION = pytest.StashKey[OrmockSession]()  # the config's session (``config.stash[SESSION]``)
