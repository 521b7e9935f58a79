"""The store backends the tests run on: a real ``redis-server`` of the test session's own (a free
port on 127.0.0.1 and a unix socket in a temporary folder, no persistence, stopped by pid), and
``store_spec`` which spells the ``store`` setting of each backend for one test.

With xdist each worker is a session of its own, so it starts its own server; within one, each
test gets a database of its own (``fresh_url``), so nothing one test stored is seen by another.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

__all__ = ["BACKENDS", "NOT_INSTALLED", "RedisServer", "Served", "free_port", "own_redis",
           "serve", "start_redis", "store_spec"]

BACKENDS = ["memory", "sqlite", "redis"]  # what the parametrized store tests run on
NOT_INSTALLED = "redis-server not found: apt-get install -y redis-server"
_DATABASES = 10_000  # one per test of a session
_ROOT = Path(__file__).resolve().parent.parent


class RedisServer:
    """A ``redis-server`` process listening on ``port`` and on the unix socket ``socket``."""

    def __init__(self, executable: str) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="ormock-redis-"))
        self.socket = self.folder / "redis.sock"
        self.port = free_port()
        self._databases = itertools.count(1)  # 0 is left to whoever wants a shared one
        tls = self._certificate()
        self.tls_port = free_port() if tls else None  # TLS too, where openssl can make a cert
        self.process = subprocess.Popen(
            [executable, "--port", str(self.port), "--bind", "127.0.0.1",
             "--unixsocket", str(self.socket), "--unixsocketperm", "700",
             "--save", "", "--appendonly", "no", "--databases", str(_DATABASES),
             "--dir", str(self.folder), "--logfile", str(self.folder / "redis.log"),
             *(["--tls-port", str(self.tls_port), "--tls-cert-file", str(self.certificate),
                "--tls-key-file", str(self.folder / "key.pem"), "--tls-auth-clients", "no"]
               if tls else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            self._wait()
        except BaseException:  # not up in time, or dead: neither its process nor pipe is left
            self.stop()
            raise

    @property
    def certificate(self) -> Path:
        """The server's self-signed certificate (for 127.0.0.1), a client's CA for TLS."""
        return self.folder / "cert.pem"

    def _certificate(self) -> bool:
        openssl = shutil.which("openssl")
        if openssl is None:
            return False
        made = subprocess.run(
            [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-keyout", str(self.folder / "key.pem"), "-out", str(self.certificate),
             "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
            capture_output=True, check=False)
        return made.returncode == 0

    def tls_url(self, db: int) -> str | None:
        """A ``rediss://`` URL checking the server's certificate (None: no TLS here)."""
        if self.tls_port is None:
            return None
        return f"rediss://127.0.0.1:{self.tls_port}/{db}?ssl_ca_certs={self.certificate}"

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def socket_url(self, db: int) -> str:
        return f"unix://{self.socket}?db={db}"

    def fresh_db(self) -> int:
        """A database number no test of this session has had."""
        db = next(self._databases)
        if db >= _DATABASES:
            raise RuntimeError(f"more than {_DATABASES - 1} tests asked for a Redis database")
        return db

    def fresh_url(self) -> str:
        return self.url(self.fresh_db())

    def _wait(self) -> None:
        """Until it answers PING on both (a dead process is a failure with its stderr)."""
        import redis

        deadline = time.monotonic() + 30
        clients = [redis.Redis(host="127.0.0.1", port=self.port),
                   redis.Redis(unix_socket_path=str(self.socket))]
        tls = self.tls_url(0)
        if tls is not None:
            clients.append(redis.Redis.from_url(tls))
        try:
            for client in clients:
                while True:
                    if self.process.poll() is not None:
                        error = self.process.stderr.read().decode() if self.process.stderr else ""
                        log = self.folder / "redis.log"
                        raise RuntimeError(f"redis-server exited ({self.process.returncode}): "
                                           f"{error}{log.read_text() if log.exists() else ''}")
                    try:
                        if client.ping():
                            break
                    except redis.ConnectionError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.05)
        finally:  # each client's socket, the one that failed and those not tried too
            for client in clients:
                client.close()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def start_redis() -> RedisServer | None:
    """A server of this session's own, or None where redis-server is not installed."""
    executable = shutil.which("redis-server")
    return None if executable is None else RedisServer(executable)


@contextlib.contextmanager
def own_redis() -> Iterator[RedisServer]:
    """A redis-server started for the caller and stopped after; in a test, skipped (saying
    how to install it) where redis-server is not installed."""
    running = start_redis()
    if running is None:
        pytest.skip(NOT_INSTALLED)
    try:
        yield running
    finally:
        running.stop()


def store_spec(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The ``store`` setting of ``kind`` (one of ``BACKENDS``) for one test: memory, a fresh
    SQLite file, or a fresh database of the session's Redis (skipped where it cannot run)."""
    if kind == "memory":
        return "memory"
    if kind == "sqlite":
        return f"sqlite:{tmp_path / 'ormock.db'}"
    server: RedisServer = request.getfixturevalue("redis_server")
    return server.fresh_url()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Served(NamedTuple):
    base_url: str  # ``http://127.0.0.1:PORT/v1``
    pid: int


@contextlib.contextmanager
def serve(*args: str) -> Iterator[Served]:
    """``ormock serve --port 0 ARGS...`` as a process of its own, once it serves; stopped by
    pid at the end."""
    process = subprocess.Popen([sys.executable, "-m", "ormock", "serve", "--port", "0", *args],
                               stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(_ROOT)})
    assert process.stderr is not None
    drain = threading.Thread(target=process.stderr.read, daemon=True)
    try:
        line = process.stderr.readline()
        assert "ormock serving Open Responses on " in line, line + process.stderr.read()
        drain.start()  # what it says later is read (a full pipe would block it)
        yield Served(line.split(" on ", 1)[1].split(" ")[0], process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if drain.is_alive():
            drain.join(timeout=15)
        process.stderr.close()


def winners(attempt: Callable[[int], bool], threads: int = 20) -> list[int]:
    """Run ``attempt(n)`` for n in range(threads), every thread released at once (a barrier):
    the numbers of those whose attempt answered True."""
    start = threading.Barrier(threads)
    won: list[int] = []

    def race(n: int) -> None:
        start.wait()
        if attempt(n):
            won.append(n)

    running = [threading.Thread(target=race, args=(n,)) for n in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    return won
