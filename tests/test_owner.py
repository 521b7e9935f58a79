"""The owner of a response: the sha256 of the API key, hashed once per key."""

from __future__ import annotations

import hashlib

from ormock.engine.stateful import owner_of


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_owner_is_the_sha256_of_the_bearer_key_however_often_and_however_many() -> None:
    keys = ["sk-" + f"test-owner-{n}" for n in range(600)]  # past the cache's 256
    for _ in range(2):
        for key in keys:
            assert owner_of({"Authorization": f"Bearer {key}"}) == _sha(key)
            assert owner_of({"authorization": f"bearer  {key} "}) == _sha(key)
    assert owner_of({"Authorization": "Basic dXNlcjpwdw=="}) == _sha("Basic dXNlcjpwdw==")
    assert owner_of({"Authorization": ""}) is None
    assert owner_of({"content-type": "application/json"}) is None
    assert owner_of({"Authorization": "Bearer \udcff"}) == hashlib.sha256(
        "\udcff".encode("utf-8", "surrogateescape")).hexdigest()
