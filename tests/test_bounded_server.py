"""The bounds of a real ``OrmockServer``'s caches hold over HTTP: the stream cache, the create
route's parsed bodies and the open namespaces each keep at most their count, and what goes is
the least recently used (``ormock.engine.bounded``)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ormock import OrmockServer
from ormock.engine.limits import Limits
from ormock.protocol.request import ResponseRequest
from ormock.server import create


def _body(n: int) -> dict[str, Any]:
    return {"model": "m", "input": f"say {n}"}


def test_the_stream_cache_keeps_its_size_of_distinct_contents() -> None:
    """Contents sent twice are kept, at most ``size`` of them; contents sent once are only
    noted (a hash in a slot of a record of fixed size) and push no template out."""
    with OrmockServer(seed=1) as server, httpx.Client(base_url=server.base_url) as client:
        cache = server.engine().cache
        slots = len(cache._seen)
        for n in range(cache.size + 1):  # each kept from its second reply
            for _ in range(2):
                assert client.post("/responses", json=_body(n)).status_code == 200
        kept = len(cache)
        again = client.post("/responses", json=_body(cache.size))  # the newest: still kept
        assert again.status_code == 200 and len(cache) == kept
        for n in range(cache.size + 1, 2 * cache.size + 2):  # new contents, once each
            assert client.post("/responses", json=_body(n)).status_code == 200
        assert len(cache._seen) == slots
    assert kept == len(cache) == cache.size


def test_the_parsed_bodies_keep_the_newest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(create, "KEPT", 3)
    parses: list[Any] = []
    real = create.parse_request

    def counted(body: Any) -> ResponseRequest:
        parses.append(body["input"])
        return real(body)

    monkeypatch.setattr(create, "parse_request", counted)
    with OrmockServer(seed=1) as server, httpx.Client(base_url=server.base_url) as client:
        for n in range(4):  # each kept when it comes again; one more than are kept: "say 0" goes
            for _ in range(2):
                assert client.post("/responses", json=_body(n)).status_code == 200
        for n in (3, 2, 1, 0):
            assert client.post("/responses", json=_body(n)).status_code == 200
    # each parsed twice (noted, then kept); 3, 2 and 1 were remembered; 0 was parsed again
    assert parses == ["say 0", "say 0", "say 1", "say 1", "say 2", "say 2", "say 3", "say 3",
                      "say 0"]


def test_the_namespaces_past_the_limit_drop_the_least_recently_used() -> None:
    with OrmockServer(seed=1, limits=Limits(namespaces=2)) as server, \
            httpx.Client(base_url=server.url) as client:
        server.namespaces.open("a")
        server.namespaces.open("b")
        assert client.post("/a/v1/responses", json=_body(0)).status_code == 200  # a use of "a"
        server.namespaces.open("a")  # opening again is no use
        server.namespaces.open("c")  # past the limit: "b" was used longest ago
        gone = client.post("/b/v1/responses", json=_body(0))
        kept = [client.post(f"/{ns}/v1/responses", json=_body(0)).status_code
                for ns in ("a", "c")]
        plain = client.post("/v1/responses", json=_body(0))  # the default never counts
    assert (gone.status_code, gone.json()["error"]["code"]) == (404, "namespace_closed")
    assert kept == [200, 200] and plain.status_code == 200
    assert server.namespaces.opened() == ["a", "c"]
