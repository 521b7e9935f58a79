"""``ormock serve --workers N``: N uvicorn worker processes on one socket, each assembling the
same server (``ormock.server.assembly``) from the options of the command, which reach them in
the environment (``ORMOCK_SERVE_OPTIONS``, JSON). They share what the store holds, so the store
must be one they all reach: an SQLite file (one machine) or Redis; with the memory store and
N > 1 ``ormock serve`` refuses to start (``refusal``)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from typing import Any

from uvicorn.supervisors import Multiprocess

from ormock.commands.collector import tune_for_serving
from ormock.engine.limits import Limits
from ormock.server.assembly import assemble
from ormock.server.runner import uvicorn_config
from ormock.server.threaded import bound_socket

__all__ = ["ENV", "Workers", "app", "refusal"]

ENV = "ORMOCK_SERVE_OPTIONS"


def refusal(workers: int, store: str) -> str | None:
    """Why ``--workers`` cannot run with this store (None: it can)."""
    if workers < 1:
        return f"--workers is a number of processes of at least 1, not {workers}"
    if workers > 1 and store == "memory":
        return (f"--workers {workers} needs a store every worker shares: with --store memory "
                f"each process would keep its own stored responses, conversations and "
                f"idempotency keys, so the state would split across processes (a response "
                f"made on one worker unknown to the next); use --store sqlite:PATH (one "
                f"machine) or --store redis://HOST:PORT/DB")
    return None


def app() -> Any:
    """The app of one worker (uvicorn's factory, in each worker process, which only serves:
    its collector tuned so)."""
    tune_for_serving()
    options = json.loads(os.environ[ENV])
    limits = Limits(**options.pop("limits"))
    return assemble(**options, limits=limits).app


class Workers:
    """The supervisor of N workers on a socket bound at once (``base_url`` known before they
    start). ``options``: those of ``OrmockServer`` but the address (JSON values and ``limits``);
    they are
    assembled once here first, so that what cannot work fails before any worker starts."""

    def __init__(self, host: str, port: int, workers: int, options: dict[str, Any], *,
                 log_level: str, access_log: bool) -> None:
        parts = assemble(**options)
        parts.namespaces.close()
        self.settings = parts.namespaces.settings  # every worker's
        # what the spawned workers inherit
        os.environ[ENV] = json.dumps({**options, "limits": asdict(options["limits"])})
        self._socket = bound_socket(host, port)
        self.host, self.port = host, int(self._socket.getsockname()[1])
        self._config = uvicorn_config("ormock.commands.workers:app", factory=True,
                                      workers=workers, log_level=log_level,
                                      access_log=access_log, host=host, port=self.port,
                                      timeout_graceful_shutdown=1)

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def serve_forever(self) -> None:
        """Until Ctrl-C or SIGTERM (the workers are stopped first)."""
        try:
            Multiprocess(self._config, sockets=[self._socket]).run()
        finally:
            self._socket.close()

