"""A real server on a persistent store (``store="sqlite:PATH"``, ``store="redis://..."``): what
the openai SDK created is still there after the server stops and a new one starts on the same
file or Redis database, and the chain continues."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest
from stores import store_spec

from ormock import OrmockServer


def _client(server: OrmockServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0,
                         _strict_response_validation=True)


PERSISTENT = ["sqlite", "redis"]


@pytest.mark.parametrize("kind", PERSISTENT)
def test_a_chain_continues_across_a_restart(kind: str, tmp_path: Path,
                                            request: pytest.FixtureRequest) -> None:
    store = store_spec(kind, request, tmp_path)
    with OrmockServer(store=store) as server, _client(server) as client:
        first = client.responses.create(model="gpt-5", input="Remember the word: tangerine.")
        streamed = list(client.responses.create(model="gpt-5", input="Another", stream=True))
        kept = streamed[-1].response  # type: ignore[union-attr]
    assert kind != "sqlite" or (tmp_path / "ormock.db").exists()

    with OrmockServer(store=store) as server, _client(server) as client:
        # GET still answers, with the bytes the first server sent
        again = client.responses.retrieve(first.id)
        assert again.id == first.id and again.output_text == first.output_text
        assert client.responses.retrieve(kept.id).output_text == kept.output_text
        second = client.responses.create(input="What was the word?",
                                         previous_response_id=first.id)
        assert second.id not in (first.id, kept.id)  # a restart never reuses an id
        assert second.previous_response_id == first.id
        assert second.model == "gpt-5"  # inherited from the parent stored before the restart
        assert second.usage is not None and first.usage is not None
        assert second.usage.input_tokens > first.usage.input_tokens  # the whole context
        context = server.engine().responses[second.id].context
        assert [i.get("content") for i in context if i.get("role") == "user"] == [
            "Remember the word: tangerine.", "What was the word?"]
        third = client.responses.create(input="And then?", previous_response_id=second.id)

    key = {"Authorization": "Bearer sk-test"}  # a response is visible to its own API key only
    with OrmockServer(store=store) as server, httpx.Client(base_url=server.base_url,
                                                           headers=key) as http:
        for response_id in (first.id, second.id, third.id):
            got = http.get(f"/responses/{response_id}")
            assert got.status_code == 200 and got.json()["id"] == response_id
        server.engine().reset()  # the namespace's keys go from the file too
    with OrmockServer(store=store) as server, httpx.Client(base_url=server.base_url,
                                                           headers=key) as http:
        gone = http.get(f"/responses/{first.id}")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "response_not_found"


@pytest.mark.parametrize("kind", PERSISTENT)
def test_namespaces_share_the_store_and_a_dropped_one_leaves_it(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = store_spec(kind, request, tmp_path)
    with OrmockServer(store=store) as server:
        server.namespaces.open("kept")
        server.namespaces.open("dropped")
        with httpx.Client(base_url=server.url) as http:
            made = {name: http.post(f"/{name}/v1/responses",
                                    json={"model": "m", "input": "hi"}).json()["id"]
                    for name in ("kept", "dropped")}
            assert made["kept"] == made["dropped"]  # each namespace fresh, the same seed
        server.namespaces.drop("dropped")
    with OrmockServer(store=store) as server, httpx.Client(base_url=server.url) as http:
        server.namespaces.open("kept")
        server.namespaces.open("dropped")
        assert http.get(f"/kept/v1/responses/{made['kept']}").status_code == 200
        assert http.get(f"/dropped/v1/responses/{made['dropped']}").status_code == 404
        assert http.get(f"/v1/responses/{made['kept']}").status_code == 404  # not the default's
