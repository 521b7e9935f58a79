"""The create route's remembered bodies (``ormock.server.create`` ``ParsedBodies``): kept from
a body's second sighting, bounded in count and bytes, and a server's answers the same whether
a body was remembered or not."""

from __future__ import annotations

import json

import httpx

from ormock import OrmockServer
from ormock.server import create
from ormock.server.create import ParsedBodies


def _raw(text: str) -> bytes:
    return json.dumps({"model": "gpt-4o", "input": text}).encode()


def test_the_oldest_go_past_the_count() -> None:
    bodies = ParsedBodies()
    raws = [_raw(f"hi {n}") for n in range(create.KEPT + 10)]
    for raw in raws:
        bodies.read(raw)
        bodies.read(raw)  # kept: it came again
    assert list(bodies) == raws[10:]
    assert bodies.size == sum(map(len, raws[10:]))


def test_the_oldest_go_past_the_bytes() -> None:
    bodies = ParsedBodies()
    raws = [_raw(f"{n:03d}" + "x" * 40_000) for n in range(40)]  # ~40 KB each: 26 fit in 1 MiB
    for raw in raws:
        bodies.read(raw)
        bodies.read(raw)
        assert bodies.size <= create.BYTES
        assert bodies.size == sum(map(len, bodies))
    assert list(bodies) == raws[-len(bodies):]
    assert len(bodies) == create.BYTES // len(raws[0])


def test_a_body_past_its_cap_or_kept_already_is_not_counted() -> None:
    bodies = ParsedBodies()
    large = _raw("y" * create.BODY)
    bodies.read(large)
    bodies.read(large)
    assert not bodies and bodies.size == 0
    raw = _raw("hi")
    for _ in range(3):
        bodies.read(raw)
    assert list(bodies) == [raw] and bodies.size == len(raw)


def test_a_remembered_body_is_answered_as_a_new_one() -> None:
    body = {"model": "gpt-4o", "input": "the same words"}
    with OrmockServer(seed=3) as server, httpx.Client(base_url=server.url) as client:
        first = client.post("/v1/responses", json=body)
        again = client.post("/v1/responses", json=body)  # decoded once: remembered
        assert first.status_code == again.status_code == 200
        one, two = first.json(), again.json()
        assert one["output"][0]["content"] == two["output"][0]["content"]
        assert one["id"] != two["id"]
        assert len(server.engine().journal) == 2


def test_a_read_body_is_the_one_kept_and_an_invalid_one_is_not_kept() -> None:
    bodies = ParsedBodies()
    raw = _raw("hi")
    first = bodies.read(raw)
    assert first[1] is not None and first[1].body is first[0]
    assert not bodies  # a body seen once is only noted
    body, request = bodies.read(raw)  # seen again: this one kept
    assert (body, request) == first and request is not first[1]
    assert bodies.read(raw) == (body, request) and bodies.read(raw)[1] is request
    invalid = json.dumps({"input": "hi"}).encode()  # no model
    for _ in range(2):
        assert bodies.read(invalid) == ({"input": "hi"}, None)
    assert list(bodies) == [raw]
