"""Shared fixtures: one real ormock server per test session, on 127.0.0.1, self-checking.

Self-check makes the server validate every stream it plans against the checker and the official
Open Responses schema before sending it, so every test that talks to it checks every event.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from hypothesis import settings
from stores import RedisServer, own_redis

from ormock import OrmockServer

_namespaces = itertools.count()

# no deadline for a property test's examples: it would be a wall-clock assertion, which a loaded
# machine fails (speed is measured under bench/, never asserted in a test)
settings.register_profile("ormock", deadline=None)
settings.load_profile("ormock")

# The HTTP clients a test makes as it runs (httpx's, and httpx2's: the openai SDK's own since
# openai 3, which ``DefaultHttpxClient`` and every ``openai.OpenAI`` wraps), closed when it
# ends: one it forgot to close would otherwise leave its sockets for the collector to find, as
# an "unclosed socket" ResourceWarning (an error here) in whatever later test happens to be
# running. They are held (not weakly: a client in a reference cycle may be collected, its
# socket unclosed, before the test's teardown) until then. Clients of wider-scoped fixtures,
# made before, are left alone.
_made_by_this_test: list[Any] | None = None


def _tracking(cls: type[Any]) -> None:
    made = cls.__init__

    def tracked_init(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        if _made_by_this_test is not None:
            _made_by_this_test.append(self)

    cls.__init__ = tracked_init


_tracking(httpx.Client)
try:
    import httpx2
except ImportError:  # an openai SDK before 3: its clients are httpx's
    pass
else:
    _tracking(httpx2.Client)


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
    made: list[Any] = []
    _made_by_this_test = made
    try:
        yield
    finally:
        _made_by_this_test = None
        for client in made:
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


@pytest.fixture
def issued_templates(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The stream cache's templates each time one is issued (a repeated content's reply), in
    order: ``StreamTemplate.issue`` spied on for the test."""
    from ormock.engine.cache import StreamTemplate

    issued: list[Any] = []
    issue = StreamTemplate.issue

    def counted(self: StreamTemplate, *args: Any) -> Any:
        issued.append(self)
        return issue(self, *args)

    monkeypatch.setattr(StreamTemplate, "issue", counted)
    return issued
