"""The stream builder: for any reply plan, the stream is valid and the JSON body is its fold.

Also the pieces it stands on: the tokenizer and delta chunker, and the seeded id factory.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ormock.protocol import (
    Clock,
    FunctionCallPlan,
    IdFactory,
    MessagePlan,
    ReasoningPlan,
    RefusalPart,
    ReplyPlan,
    TextPart,
    VendorItemPlan,
    build_events,
    check_stream,
    fold_events,
    new_response,
)
from ormock.protocol.ids import PREFIXES, SEEDED_EPOCH
from ormock.protocol.items import url_citation
from ormock.protocol.sse import DONE_FRAME, frame_event
from ormock.protocol.tokens import chunker, count_tokens, split_tokens

Json = dict[str, Any]

# -- strategies ------------------------------------------------------------------------------------
texts = st.text(max_size=40)
words = st.lists(st.sampled_from(["Hello", " world", ",", " 42", "\n", "  ", "é", "_x", "🙂"]))
some_text = st.one_of(texts, words.map("".join))


@st.composite
def text_parts(draw: st.DrawFn) -> TextPart:
    text = draw(some_text)
    annotations = []
    for _ in range(draw(st.integers(0, 2))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, len(text)))
        annotations.append(url_citation(f"https://example.com/{start}", start, end, "Source"))
    return TextPart(text, tuple(annotations))


parts = st.one_of(text_parts(), st.builds(RefusalPart, some_text))
messages = st.builds(
    MessagePlan,
    parts=st.lists(parts, max_size=3).map(tuple),
    phase=st.sampled_from([None, "commentary", "final_answer"]),
)
function_calls = st.builds(
    FunctionCallPlan,
    name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True),
    arguments=st.one_of(
        some_text,
        st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=8), max_size=3).map(
            json.dumps
        ),
    ),
)
reasonings = st.builds(
    ReasoningPlan,
    summary=st.lists(some_text, max_size=2).map(tuple),
    content=st.lists(some_text, max_size=2).map(tuple),
    encrypted_content=st.none() | st.text(max_size=10),
)
vendor_items = st.builds(
    VendorItemPlan,
    type=st.sampled_from(["acme:web_search_call", "x-corp:image_generation", "v:t"]),
    fields=st.dictionaries(
        st.text(min_size=1, max_size=8).filter(lambda k: k not in ("id", "type", "status")),
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        max_size=3,
    ),
)
items = st.one_of(messages, function_calls, reasonings, vendor_items)
chunkings = st.one_of(
    st.sampled_from(["words", "whole"]),
    st.integers(1, 6).map(lambda n: f"chars:{n}"),
    st.integers(1, 4).map(lambda n: f"tokens:{n}"),
)


@st.composite
def reply_plans(draw: st.DrawFn) -> ReplyPlan:
    status = draw(st.sampled_from(["completed", "incomplete", "failed"]))
    return ReplyPlan(
        items=draw(st.lists(items, max_size=4)),
        status=status,
        incomplete_reason=draw(st.sampled_from([None, "max_output_tokens", "content_filter"])),
        error=draw(
            st.none()
            | st.fixed_dictionaries(
                {"type": st.just("model_error"), "code": st.just("overloaded")},
                optional={"message": st.text(min_size=1, max_size=20)},
            )
        ),
        chunking=draw(chunkings),
        queued=draw(st.booleans()),
    )


def build(plan: ReplyPlan, seed: int = 0, input_tokens: int = 11) -> list[Json]:
    ids = IdFactory(seed)
    response = new_response(ids.new("resp"), SEEDED_EPOCH, {"model": "ormock-test"})
    return build_events(plan, response, ids, input_tokens=input_tokens, completed_at=SEEDED_EPOCH)


# -- what the plan says must come out --------------------------------------------------------------
def streamed_texts(events: list[Json]) -> dict[tuple[Any, ...], str]:
    """Concatenated deltas per (item_id, kind, index)."""
    built: dict[tuple[Any, ...], str] = defaultdict(str)
    for e in events:
        t = e["type"]
        if t == "response.function_call_arguments.delta":
            built[e["item_id"], "arguments", 0] += e["delta"]
        elif t == "response.reasoning_summary_text.delta":
            built[e["item_id"], "summary", e["summary_index"]] += e["delta"]
        elif t.endswith(".delta"):
            built[e["item_id"], "content", e["content_index"]] += e["delta"]
    return built


def final_texts(output: list[Json]) -> dict[tuple[Any, ...], str]:
    found: dict[tuple[Any, ...], str] = {}
    for item in output:
        if item["type"] == "function_call":
            found[item["id"], "arguments", 0] = item["arguments"]
        for kind in ("summary", "content"):
            for index, part in enumerate(item.get(kind) or []):
                found[item["id"], kind, index] = part.get("text", part.get("refusal"))
    return found


def plan_texts(plan: ReplyPlan) -> list[tuple[list[str], list[str]]]:
    """Per item: its output texts and (of those) its reasoning texts."""
    out: list[tuple[list[str], list[str]]] = []
    for item in plan.items:
        if isinstance(item, MessagePlan):
            texts_ = [p.text if isinstance(p, TextPart) else p.refusal for p in item.parts]
            out.append((texts_, []))
        elif isinstance(item, FunctionCallPlan):
            out.append(([item.arguments], []))
        elif isinstance(item, ReasoningPlan):
            both = [*item.summary, *item.content]
            out.append((both, both))
        else:
            out.append(([], []))
    return out


def check_deltas(events: list[Json], rule: str) -> None:
    size = int(rule.partition(":")[2] or 0)
    per_text: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for e in events:
        if e["type"].endswith(".delta"):
            key = (e["item_id"], e["type"], e.get("content_index"), e.get("summary_index"))
            per_text[key].append(e["delta"])
    for deltas in per_text.values():
        assert all(deltas), "no empty deltas"
        if rule == "whole":
            assert len(deltas) == 1
        elif rule.startswith("chars:"):
            assert all(len(d) == size for d in deltas[:-1]) and len(deltas[-1]) <= size
        elif rule.startswith("tokens:"):
            assert all(count_tokens(d) <= size for d in deltas)
        else:  # words: each delta holds one run of non-space (its leading space with it)
            assert all(len(d.split()) <= 1 for d in deltas)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(plan=reply_plans(), input_tokens=st.integers(0, 10_000))
def test_any_plan_builds_a_valid_stream_whose_fold_is_the_body(
    plan: ReplyPlan, input_tokens: int
) -> None:
    events = build(plan, input_tokens=input_tokens)
    final = events[-1]["response"]

    report = check_stream(events)  # with the official schema
    assert report.ok, "\n".join(map(str, report.violations))
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert fold_events(events) == final == report.response

    body = b"".join(frame_event(e) for e in events) + DONE_FRAME
    framed = check_stream(body)
    assert framed.ok, "\n".join(map(str, framed.violations))
    assert framed.done
    assert framed.response == json.loads(json.dumps(final))
    assert framed.events == json.loads(json.dumps(events))

    # the lifecycle
    types = [e["type"] for e in events]
    assert types[:2] == ["response.created", "response.queued" if plan.queued else
                         "response.in_progress"]
    terminal = {"completed": "response.completed", "incomplete": "response.incomplete",
                "failed": "response.failed"}[plan.status]
    assert types[-1] == terminal
    assert final["status"] == plan.status
    assert len(final["output"]) == len(plan.items)
    statuses = [item["status"] for item in final["output"]]
    if plan.status == "incomplete":
        assert final["incomplete_details"]["reason"] == (
            plan.incomplete_reason or "max_output_tokens"
        )
        assert statuses == ["completed"] * (len(statuses) - 1) + ["incomplete"] * bool(statuses)
    else:
        assert set(statuses) <= {"completed"}
    if plan.status == "failed":
        assert types[-2] == "error"
        error = events[-2]["error"]
        assert final["error"] == {"code": error["code"], "message": error["message"]}
        assert final["completed_at"] is None
    elif plan.status == "completed":
        assert final["completed_at"] == SEEDED_EPOCH

    # deltas add up to the final texts, which are the plan's texts
    streamed = streamed_texts(events)
    finals = final_texts(final["output"])
    assert {k: v for k, v in streamed.items() if v} == {k: v for k, v in finals.items() if v}
    for item, (wanted, _) in zip(final["output"], plan_texts(plan), strict=True):
        assert [v for k, v in finals.items() if k[0] == item["id"]] == wanted
    check_deltas(events, plan.chunking)

    # usage adds up
    usage = final["usage"]
    per_item = plan_texts(plan)
    output_tokens = sum(count_tokens(t) for texts_, _ in per_item for t in texts_)
    reasoning_tokens = sum(count_tokens(t) for _, texts_ in per_item for t in texts_)
    assert usage["input_tokens"] == input_tokens
    assert usage["output_tokens"] == output_tokens
    assert usage["output_tokens_details"]["reasoning_tokens"] == reasoning_tokens
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


@settings(max_examples=20, deadline=None)
@given(plan=reply_plans(), seed=st.integers(0, 2**32))
def test_the_same_seed_builds_the_same_bytes(plan: ReplyPlan, seed: int) -> None:
    first = b"".join(map(frame_event, build(plan, seed)))
    assert b"".join(map(frame_event, build(plan, seed))) == first


def test_usage_may_be_null_or_given() -> None:
    plan = ReplyPlan(items=[MessagePlan(parts=(TextPart("Hi there"),))], usage=None)
    assert fold_events(build(plan))["usage"] is None
    given_usage = {
        "input_tokens": 1,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 2,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 3,
    }
    plan.usage = given_usage
    events = build(plan)
    assert check_stream(events).ok
    assert fold_events(events)["usage"] == given_usage


def test_items_may_fix_their_own_ids() -> None:
    plan = ReplyPlan(
        items=[
            MessagePlan(parts=(TextPart("Hi"),), id="msg_fixed"),
            FunctionCallPlan(name="f", arguments="{}", id="fc_fixed", call_id="call_fixed"),
            ReasoningPlan(summary=("s",), id="rs_fixed"),
            VendorItemPlan(type="acme:thing", id="item_fixed"),
        ]
    )
    output = fold_events(build(plan))["output"]
    assert [item["id"] for item in output] == ["msg_fixed", "fc_fixed", "rs_fixed", "item_fixed"]
    assert output[1]["call_id"] == "call_fixed"


# -- tokens ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("rule", "text", "deltas"),
    [
        ("words", "Hello big world", ["Hello", " big", " world"]),
        ("words", "  a  b ", ["  a", "  b", " "]),
        ("words", "line\nnext", ["line", "\nnext"]),
        (None, "Hello world", ["Hello", " world"]),
        (" words ", "Hello world", ["Hello", " world"]),
        ("whole", "Hello world", ["Hello world"]),
        ("chars:3", "abcdefg", ["abc", "def", "g"]),
        ("chars:1", "é🙂", ["é", "🙂"]),
        ("tokens:1", "Hello, world!", ["Hello", ",", " world", "!"]),
        ("tokens:2", "Hello, world!", ["Hello,", " world!"]),
        ("words", "", []),
        ("whole", "", []),
        ("chars:4", "", []),
        ("tokens:4", "", []),
    ],
)
def test_chunker_rules(rule: str | None, text: str, deltas: list[str]) -> None:
    assert chunker(rule)(text) == deltas


@pytest.mark.parametrize(
    ("rule", "says"),
    [
        ("chars:0", "chunking 'chars:0': chars needs a positive size, e.g. 'chars:4'"),
        ("chars:-2", "chars needs a positive size"),
        ("chars:x", "chars needs a positive size"),
        ("chars", "chars needs a positive size"),
        ("tokens:", "tokens needs a positive size, e.g. 'tokens:4'"),
        ("words:3", "unknown chunking 'words:3': use 'words', 'whole', 'chars:N' or 'tokens:N'"),
        ("whole:1", "unknown chunking 'whole:1'"),
        ("lines", "unknown chunking 'lines'"),
    ],
)
def test_bad_chunking_rules_say_what_would_do(rule: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        chunker(rule)


@settings(max_examples=200, deadline=None)
@given(text=st.text(), rule=chunkings)
def test_split_tokens_and_every_chunker_round_trip(text: str, rule: str) -> None:
    tokens = split_tokens(text)
    assert "".join(tokens) == text
    assert all(tokens)
    assert count_tokens(text) == len(tokens)
    deltas = chunker(rule)(text)
    assert "".join(deltas) == text
    assert all(deltas)


def test_token_boundaries() -> None:
    assert split_tokens("Hello, world!  snake_case 42") == [
        "Hello", ",", " world", "!", "  ", "snake", "_", "case", " 42",
    ]
    assert count_tokens("") == 0


# -- ids and clock ---------------------------------------------------------------------------------
def test_ids_are_determined_by_the_seed() -> None:
    def draw(seed: int) -> list[str]:
        factory = IdFactory(seed)
        return [factory.new(prefix) for prefix in ("resp", "msg", "call", "fc", "rs", "resp")]

    assert draw(3) == draw(3)
    assert draw(3) != draw(4)
    assert len(set(draw(3))) == 6
    assert IdFactory().seed == 0
    assert IdFactory().new("resp") == IdFactory(0).new("resp")


@pytest.mark.parametrize("prefix", sorted(PREFIXES - {"call"}))
def test_ids_carry_their_prefix(prefix: str) -> None:
    assert re.fullmatch(rf"{prefix}_[0-9a-f]{{48}}", IdFactory(1).new(prefix))


def test_call_ids_look_like_openai_ones() -> None:
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", IdFactory(1).new("call"))


def test_the_seeded_clock_ticks_one_second_per_reading() -> None:
    clock = Clock()
    assert [clock.now() for _ in range(3)] == [SEEDED_EPOCH, SEEDED_EPOCH + 1, SEEDED_EPOCH + 2]
    assert Clock(start=5).now() == 5


def test_the_real_clock_and_bad_modes() -> None:
    assert abs(Clock("real").now() - time.time()) < 5
    with pytest.raises(ValueError, match="clock mode must be 'seeded' or 'real', not 'fast'"):
        Clock("fast")
