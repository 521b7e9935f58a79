"""Two ``ormock serve`` replicas (processes of their own, separate ports) on one redis-server
behave as one fake: what one stores, the other retrieves, continues, pages and deletes, through
the openai SDK; one ``Idempotency-Key`` sent to both at once makes one response."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import openai
import pytest
import redis
from stores import RedisServer, serve

KEY = "sk-" + "test-replicas"


@pytest.fixture
def replicas(redis_server: RedisServer) -> Iterator[tuple[str, str, str]]:
    """The base URLs of two replicas and the Redis URL they share."""
    url = redis_server.fresh_url()
    with serve("--store", url) as first, serve("--store", url) as second:
        yield first.base_url, second.base_url, url


def _sdk(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0,
                         _strict_response_validation=True)


def test_a_chain_alternates_replicas(replicas: tuple[str, str, str]) -> None:
    first_url, second_url, _ = replicas
    with _sdk(first_url) as one, _sdk(second_url) as two:
        first = one.responses.create(model="gpt-5", input="Remember the word: tangerine.")
        got = two.responses.retrieve(first.id)
        assert (got.id, got.output_text) == (first.id, first.output_text)
        second = two.responses.create(input=[
            {"type": "message", "role": "user", "content": "What was the word?"},
            {"type": "message", "role": "user", "content": "Say it twice."}],
            previous_response_id=first.id)
        assert second.id != first.id and second.previous_response_id == first.id
        assert second.model == "gpt-5"  # inherited from the parent the other replica stored
        assert second.usage is not None and first.usage is not None
        assert second.usage.input_tokens > first.usage.input_tokens  # the whole context
        third = one.responses.create(input="And then?", previous_response_id=second.id)
        assert third.id not in (first.id, second.id)
        # the input items of the second, paged one by one on the first replica
        pages = one.responses.input_items.list(second.id, limit=1, order="asc")
        assert len(pages.data) == 1 and pages.has_more
        paged = [item.to_dict() for item in pages]  # every page, one request each
        assert paged == [item.to_dict() for item in two.responses.input_items.list(
            second.id, limit=100, order="asc").data]  # one page on the other replica
        said = [(item["role"], item["content"][0]["text"]) for item in paged]
        assert said[0] == ("user", "Remember the word: tangerine.")  # the chain's, then its own
        assert said[-2:] == [("user", "What was the word?"), ("user", "Say it twice.")]
        # deleted on the second, gone on the first; its child still continues
        two.responses.delete(first.id)
        with pytest.raises(openai.NotFoundError):
            one.responses.retrieve(first.id)
        with pytest.raises(openai.BadRequestError):
            one.responses.create(input="More.", previous_response_id=first.id)
        fourth = two.responses.create(input="Once more.", previous_response_id=third.id)
        assert one.responses.retrieve(fourth.id).previous_response_id == third.id


def test_one_idempotency_key_sent_to_both_at_once_makes_one_response(
        replicas: tuple[str, str, str]) -> None:
    first_url, second_url, store = replicas
    stored = redis.Redis.from_url(store)
    order = "ormock:{ns:}:o:response"  # the write order of the default namespace's responses
    before = stored.zcard(order)
    start = threading.Barrier(2)
    answers: dict[str, str | openai.ConflictError] = {}
    key = {"Idempotency-Key": "pay-42"}

    def send(base_url: str) -> None:
        with _sdk(base_url) as sdk:
            start.wait()
            try:
                answers[base_url] = sdk.responses.create(
                    model="gpt-5", input="Charge the card once.", extra_headers=key).id
            except openai.ConflictError as busy:  # the other one is still answering
                answers[base_url] = busy

    threads = [threading.Thread(target=send, args=(url,)) for url in (first_url, second_url)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    made = {a for a in answers.values() if isinstance(a, str)}
    assert len(made) == 1, answers
    for answer in answers.values():  # the other one replayed it, or was told to wait
        assert isinstance(answer, str) or (
            isinstance(answer.body, dict) and answer.body["code"] == "idempotency_key_in_use")
    assert stored.zcard(order) == before + 1
    # and once it is done, both replay the same response
    for url in (first_url, second_url):
        with _sdk(url) as sdk:
            again = sdk.responses.create(model="gpt-5", input="Charge the card once.",
                                         extra_headers=key)
        assert again.id in made
    assert stored.zcard(order) == before + 1
    stored.close()
