"""``OrmockServer``: a real uvicorn server on loopback, in a background thread.

The socket is bound before the server starts (port 0 picks a free one), so ``base_url`` is known
at once; ``start()`` returns when the server accepts connections.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import uvicorn

from ormock.engine.core import Engine
from ormock.engine.settings import Settings
from ormock.server.assembly import assemble
from ormock.server.http_protocol import http_protocol
from ormock.server.shutdown import Server
from ormock.server.threaded import ThreadedServer, bound_socket, tell_stopping

__all__ = ["CORK_ENV", "OrmockServer"]

# the environment variable that turns the cork off where no ``cork`` is given (``0``): the suite
# runs its tests of what the server writes once without it (``make test``)
CORK_ENV = "ORMOCK_HTTP_CORK"
_CORK_VALUES = {"1": True, "true": True, "yes": True, "on": True,
                "0": False, "false": False, "no": False, "off": False}


def best_loop() -> str:
    """uvloop when installed: the event loop uvicorn runs fastest on."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def cork_from_environment() -> bool:
    """``ORMOCK_HTTP_CORK``: on when unset or empty; ``0``/``false``/``no``/``off`` turn it
    off."""
    value = os.environ.get(CORK_ENV, "").strip().lower()
    if not value:
        return True
    if value not in _CORK_VALUES:
        raise ValueError(f"{CORK_ENV}={value!r}: expected 1 or 0 (true/false, yes/no, on/off)")
    return _CORK_VALUES[value]


def uvicorn_config(app: Any, *, log_level: str, access_log: bool, cork: bool | None = None,
                   **where: Any) -> uvicorn.Config:
    """How ``OrmockServer`` and ``ormock serve`` run under uvicorn: ormock's HTTP protocol
    (``ormock.server.http_protocol``), which notes each connection for the faults that close or
    reset it, and with ``cork`` (by default, or as ``ORMOCK_HTTP_CORK`` says when None) writes
    a response's head with its first body bytes. Proxy headers are never read (whatever
    ``FORWARDED_ALLOW_IPS`` says): an ``X-Forwarded-For: 127.0.0.1`` must not pass a remote
    client off as loopback to the admin API."""
    corked = cork_from_environment() if cork is None else cork
    return uvicorn.Config(app, log_level=log_level, access_log=access_log, loop=best_loop(),
                          http=http_protocol(corked), lifespan="off", proxy_headers=False,
                          **where)


class OrmockServer(ThreadedServer):
    """A running fake. Use as a context manager or call ``start()`` and ``stop()``.

    Its engines' settings: ``settings=Settings(...)``, or ``Settings`` fields by keyword
    (``seed=3, profile="openai", chaos="rate=0.2"``, ...) over them. ``max_body`` is a shortcut
    for that limit; the folders of the plugins' scenarios come after ``scenario_dirs``.
    ``allowed_hosts``: names it answers to besides loopback names and addresses (a ``Host`` or a
    page's ``Origin`` of any other name is refused: ``ormock.server.perimeter``).
    ``store="sqlite:PATH"`` keeps stored responses in that file across restarts (each namespace
    its own keys); the default, ``"memory"``, forgets them when the server stops.
    ``cork=False``: uvicorn's plain writes instead of a response's head joined to its first
    body bytes (the bytes are the same; None: as ``ORMOCK_HTTP_CORK`` says, on when unset).
    ``say``: told, in one line, how many answers still in flight a stop cut short
    (``ormock.server.shutdown``; None: nobody).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        settings: Settings | None = None,
        scenarios: Sequence[str] = (),
        api_key: str | None = None,
        max_body: int | None = None,
        admin_hosts: Sequence[str] = (),
        allowed_hosts: Sequence[str] = (),
        plugins: Sequence[str] = (),
        log_level: str = "warning",
        access_log: bool = False,
        cork: bool | None = None,
        say: Callable[[str], None] | None = None,
        **options: Any,
    ) -> None:
        parts = assemble(settings=settings, scenarios=scenarios, api_key=api_key,
                         max_body=max_body, admin_hosts=admin_hosts,
                         allowed_hosts=allowed_hosts, plugins=plugins, **options)
        self.limits, self.namespaces, self.app = parts.limits, parts.namespaces, parts.app
        self._socket = bound_socket(host, port)
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        self._config = uvicorn_config(self.app, log_level=log_level, access_log=access_log,
                                      cork=cork, host=host, port=self.port,
                                      timeout_graceful_shutdown=1)
        self._server = tell_stopping(Server(self._config, say=say), self._stopping)

    def engine(self, namespace: str = "") -> Engine:
        return self.namespaces.get(namespace)

    def _stopping(self) -> None:
        """The inspector's live streams end, so an open page never holds up the shutdown (nor
        is cut short as an answer in flight)."""
        self.namespaces.feed.close()

    def stop(self) -> None:
        """Stop serving: the inspector's live streams and the background runs first (stored
        ``cancelled``, so that the streams following them end), then the server."""
        self._stopping()
        if self._thread is not None:
            self.namespaces.stop_runs()
        super().stop()

    def _closed(self) -> None:
        self.namespaces.close()

    def __repr__(self) -> str:
        return f"OrmockServer({self.url!r})"
