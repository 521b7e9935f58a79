"""Which recorded interaction answers a request: order, ignores, near misses."""

from __future__ import annotations

import pytest

from ormock.cassette import Cassette, CassetteMiss, Interaction, Player, RecordedRequest
from ormock.cassette.matching import Order, json_diff, order_of


def _cassette(*bodies: dict[str, object], file: str = "c.yaml") -> Cassette:
    return Cassette(tuple(Interaction(RecordedRequest("POST", "/v1/responses", body=body),
                                      line=10 * n) for n, body in enumerate(bodies, 1)),
                    file=file)


def test_identical_requests_get_their_answers_in_recorded_order() -> None:
    same = {"model": "m", "input": "go on"}
    player = Player.of(_cassette(same, {"model": "m", "input": "other"}, same))
    assert player.take("POST", "/v1/responses", "", same)[0] == 0
    assert player.take("POST", "/v1/responses", "", same)[0] == 2
    with pytest.raises(CassetteMiss) as caught:
        player.take("POST", "/v1/responses", "", same)
    assert caught.value.used_up and "already played" in str(caught.value)
    assert player.unused() == [1]


def test_ignored_paths_are_left_out_on_both_sides() -> None:
    recorded = {"model": "m", "input": "hi", "metadata": {"run": "1"},
                "prompt_cache_key": "a", "input_items": [{"output": "x", "id": 1}]}
    sent = {"model": "m", "input": "hi", "metadata": {"run": "2"}, "prompt_cache_key": "b",
            "input_items": [{"output": "y", "id": 1}]}
    with pytest.raises(CassetteMiss):
        Player.of(_cassette(recorded)).take("POST", "/v1/responses", "", sent)
    player = Player.of(_cassette(recorded),
                       ignore=["metadata", "prompt_cache_key", "input_items[*].output"])
    assert player.take("POST", "/v1/responses", "", sent)[0] == 0


def test_a_miss_names_the_closest_interaction_and_its_differences() -> None:
    player = Player.of(_cassette({"model": "n", "input": "weather in Paris"},
                                 {"model": "m", "input": "weather in Rome", "tools": []}))
    with pytest.raises(CassetteMiss) as caught:
        player.take("POST", "/v1/responses", "", {"model": "m", "input": "weather in Rome"})
    message = str(caught.value)
    assert "c.yaml" in message and "closest is interaction 2 (line 20)" in message
    assert "tools: recorded [], not sent" in message


def test_in_recorded_order_only_the_next_interaction_may_answer() -> None:
    player = Player.of(_cassette({"input": "a"}, {"input": "b"}), order="recorded")
    with pytest.raises(CassetteMiss):
        player.take("POST", "/v1/responses", "", {"input": "b"})
    assert player.take("POST", "/v1/responses", "", {"input": "a"})[0] == 0
    assert player.take("POST", "/v1/responses", "", {"input": "b"})[0] == 1


def test_in_repeat_order_the_first_matching_interaction_answers_every_time() -> None:
    """vcrpy's ``allow_playback_repeats=True`` (``Cassette.play_response``): the first
    interaction a request matches answers, played or not; a later identical recording is never
    played, and the counts are vcrpy's ``play_counts``."""
    same, other = {"model": "m", "input": "go on"}, {"model": "m", "input": "other"}
    player = Player.of(_cassette(same, other, same), order="repeat")
    taken = [player.take("POST", "/v1/responses", "", body)[0]
             for body in (same, other, same, other, same)]
    assert taken == [0, 1, 0, 1, 0]
    assert player.counts() == [3, 2, 0] and player.unused() == [2]
    player.unplay(0)  # a faulted answer is taken back: one play fewer
    assert player.counts() == [2, 2, 0]
    with pytest.raises(CassetteMiss) as caught:  # a miss is still one
        player.take("POST", "/v1/responses", "", {"model": "m", "input": "new"})
    assert not caught.value.used_up and "closest is interaction 1" in str(caught.value)


@pytest.mark.parametrize("order", ["any", "recorded"])
def test_once_orders_count_each_play_once(order: Order) -> None:
    same = {"model": "m", "input": "go on"}
    player = Player.of(_cassette(same, same), order=order)
    player.take("POST", "/v1/responses", "", same)
    assert player.counts() == [1, 0]
    player.unplay(0)
    assert player.counts() == [0, 0] and player.unused() == [0, 1]


def test_an_unknown_order_names_each_order_and_what_it_does() -> None:
    with pytest.raises(ValueError, match="order must be 'any' ") as caught:
        order_of("twice")
    message = str(caught.value)
    assert message.endswith("vcrpy's allow_playback_repeats), not 'twice'")
    assert "or 'repeat' (a request takes the first interaction it matches, played or not" \
        in message
    assert order_of("repeat") == "repeat"


def test_method_and_path_are_part_of_the_match() -> None:
    cassette = Cassette((Interaction(RecordedRequest("GET", "/v1/responses/resp_1",
                                                     query="include=x")),))
    with pytest.raises(CassetteMiss) as caught:
        Player.of(cassette).take("GET", "/v1/responses/resp_2", "include=x", None)
    assert "path: recorded /v1/responses/resp_1, sent /v1/responses/resp_2" in str(caught.value)
    assert "query" not in str(caught.value).split("closest", 1)[1]
    assert Player.of(cassette).take("GET", "/v1/responses/resp_1", "include=x", None)[0] == 0


def test_json_diff_by_path() -> None:
    assert json_diff({"a": [1, {"b": 2}], "c": 1}, {"a": [1, {"b": 3}], "d": 1}) == [
        "a[1].b: recorded 2, sent 3", "c: recorded 1, not sent", "d: sent 1, not in the recording"]
