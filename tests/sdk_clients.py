"""openai SDK clients of a server that a test makes as it goes (``client_of``), closed when the
test ends (the autouse fixture ``closed_clients``, imported by the modules that use them), so
no socket is left for the collector to find in a later test."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from ormock import OrmockServer

_OPEN: list[openai.OpenAI] = []


@pytest.fixture(autouse=True)
def closed_clients() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def client_of(server: OrmockServer, key: str = "sk-test") -> openai.OpenAI:
    client = openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0)
    _OPEN.append(client)
    return client
