"""Shared fixtures: one real ormock server per test session, on 127.0.0.1, self-checking.

Self-check makes the server validate every stream it plans against the checker and the official
Open Responses schema before sending it, so every test that talks to it checks every event.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from stores import RedisServer, own_redis

from ormock import OrmockServer

_namespaces = itertools.count()

# The HTTP clients (httpx's, and so the openai SDK's, which wraps one) a test makes as it runs,
# closed when it ends: one it forgot to close would otherwise leave its sockets for the
# collector to find, as an "unclosed socket" ResourceWarning (an error here) in whatever later
# test happens to be running. Clients of wider-scoped fixtures, made before, are left alone.
_made_by_this_test: weakref.WeakSet[httpx.Client] | None = None
_client_init = httpx.Client.__init__


def _tracked_init(self: httpx.Client, *args: Any, **kwargs: Any) -> None:
    _client_init(self, *args, **kwargs)
    if _made_by_this_test is not None:
        _made_by_this_test.add(self)


httpx.Client.__init__ = _tracked_init  # type: ignore[method-assign]


def pytest_configure(config: pytest.Config) -> None:
    """Import the server stack uvicorn loads for a server (its HTTP, WebSocket, lifespan and
    loop modules, httptools) before any test runs: pytester's in-process runs
    (``runpytest``) drop from ``sys.modules`` what was first imported during them, and a
    module imported again then holds new classes (httptools' ``HttpParserUpgrade`` among them)
    that the C parser already loaded never raises, so every later server of this process
    would drop each WebSocket handshake."""
    import uvicorn

    uvicorn.Config(app=_no_app, log_config=None).load()


async def _no_app(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("never served")


@pytest.fixture(autouse=True)
def _clients_closed() -> Iterator[None]:
    global _made_by_this_test
    made = _made_by_this_test = weakref.WeakSet()
    try:
        yield
    finally:
        _made_by_this_test = None
        for client in list(made):
            client.close()


@pytest.fixture(scope="session")
def server() -> Iterator[OrmockServer]:
    with OrmockServer(seed=0, self_check=True) as running:
        yield running


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """This session's own redis-server (each xdist worker has one); the tests that need it skip
    where it is not installed."""
    with own_redis() as running:
        yield running


@pytest.fixture
def base_url(server: OrmockServer) -> str:
    """A base URL of a fresh namespace: nothing another test did is visible there."""
    name = f"t{next(_namespaces)}"
    server.namespaces.open(name)
    return f"{server.url}/{name}/v1"


@pytest.fixture
def client(base_url: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=base_url, api_key="sk-test", max_retries=0, _strict_response_validation=True
    ) as sdk:
        yield sdk


@pytest.fixture
def async_client(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=base_url, api_key="sk-test", max_retries=0, _strict_response_validation=True
    )


@pytest.fixture
def http(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=10) as raw:
        yield raw
