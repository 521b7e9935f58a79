"""Chaos mode: faults drawn per request from a seed, replayable exactly."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import jsonschema
import pytest

from ormock.faults import Disconnect, HttpError, Malformed, Slow, Stall, apply_faults
from ormock.faults.chaos import CHAOS_SCHEMA, DEFAULT_FAULTS, Chaos
from ormock.protocol import IdFactory, MessagePlan, ReplyPlan, TextPart, build_events, new_response
from ormock.protocol.reply import RawReply, Reply

SPEC = "rate=0.2,seed=7,faults=http_error:429|fail_midstream|disconnect"


def draws(chaos: Chaos, n: int = 200) -> list[str | None]:
    return [None if f is None else f.name for f in (chaos.draw() for _ in range(n))]


def test_parse() -> None:
    chaos = Chaos.parse(SPEC)
    assert chaos.rate == 0.2 and chaos.seed == 7
    assert [f.name for f in chaos.faults] == ["http_error", "fail_midstream", "disconnect"]
    assert isinstance(chaos.faults[0], HttpError) and chaos.faults[0].status == 429
    assert str(chaos) == SPEC and str(Chaos.parse(str(chaos))) == SPEC
    assert all(f.trigger.kind == "always" for f in chaos.faults)


def test_a_value_sets_the_main_parameter() -> None:
    chaos = Chaos.parse("rate=1, faults = disconnect:reset | stall:0.5 | slow:100 | malformed:crlf")
    reset, stall, slow, crlf = chaos.faults
    assert isinstance(reset, Disconnect) and reset.mode == "reset"
    assert isinstance(stall, Stall) and stall.seconds == 0.5
    assert isinstance(slow, Slow) and slow.tokens_per_second == 100
    assert isinstance(crlf, Malformed) and crlf.kind == "crlf"


def test_defaults() -> None:
    chaos = Chaos.parse("rate=0.5")
    assert chaos.seed == 0 and str(chaos).endswith("|".join(DEFAULT_FAULTS))
    assert len(chaos.faults) == len(DEFAULT_FAULTS)


def test_from_a_mapping() -> None:
    chaos = Chaos.from_mapping({
        "rate": 0.5, "seed": 3,
        "faults": ["http_error:503", {"disconnect": {"mode": "reset", "after_bytes": 90}}],
    })
    assert isinstance(chaos.faults[1], Disconnect) and chaos.faults[1].after_bytes == 90
    assert str(chaos).startswith("rate=0.5,seed=3,faults=http_error:503|disconnect")
    assert Chaos.from_mapping({"rate": 0.2, "seed": 7, "faults": "http_error:429|"
                               "fail_midstream|disconnect"}).faults == Chaos.parse(SPEC).faults
    validator = jsonschema.Draft202012Validator(CHAOS_SCHEMA)
    assert validator.is_valid({"rate": 0.5, "seed": 3, "faults": ["no_done"]})
    assert validator.is_valid(SPEC)
    assert not validator.is_valid({"rate": 2}) and not validator.is_valid({"seed": 1})


def test_same_seed_same_sequence_and_a_new_seed_differs() -> None:
    first = draws(Chaos.parse(SPEC))
    again = draws(Chaos.parse(SPEC))
    other = draws(Chaos.parse(SPEC.replace("seed=7", "seed=8")))
    assert first == again != other
    chaos = Chaos.parse(SPEC)
    draws(chaos, 10)
    chaos.reset()
    assert draws(chaos) == first
    assert draws(chaos.fresh()) == first


def test_the_rate_and_the_choice() -> None:
    picked = draws(Chaos.parse(SPEC), 5000)
    hits = [p for p in picked if p is not None]
    assert 0.18 < len(hits) / len(picked) < 0.22
    shares = Counter(hits)
    assert set(shares) == {"http_error", "fail_midstream", "disconnect"}
    assert all(abs(n / len(hits) - 1 / 3) < 0.05 for n in shares.values())
    assert draws(Chaos.parse("rate=0"), 100) == [None] * 100
    assert None not in draws(Chaos.parse("rate=1"), 100)


def _reply() -> Reply:
    ids = IdFactory(0)
    plan = ReplyPlan(items=[MessagePlan((TextPart("Chaos, replayed exactly."),))])
    events = build_events(plan, new_response(ids.new("resp"), 0, {}), ids)
    return Reply(events=events, stream=True)


def test_a_chaos_run_of_200_requests_replays_exactly() -> None:
    def run() -> list[tuple[list[str], bytes]]:
        chaos, counts, rng = Chaos.parse(SPEC), dict[int, int](), random.Random(0)
        out = []
        for _ in range(200):
            fault = chaos.draw()
            reply, names = apply_faults(_reply(), [fault] if fault else [], counts, rng)
            body = reply.body if isinstance(reply, RawReply) else reply.sse_body()
            out.append((names, body))
        return out

    first = run()
    assert first == run()
    assert 20 < sum(1 for names, _ in first if names) < 60


@pytest.mark.parametrize(("spec", "message"), [
    ("", "looks like rate="),
    ("rate", "is not key=value"),
    ("rat=0.2", "did you mean 'rate'"),
    ("rate=0.2,rate=0.3", "given twice"),
    ("rate=2", "from 0 to 1"),
    ("rate=x", "rate must be a number"),
    ("rate=0.2,seed=1.5", "seed must be a whole number"),
    ("seed=1", "needs a rate"),
    ("rate=0.2,faults=http_eror:429", "did you mean 'http_error'"),
    ("rate=0.2,faults=http_error:abc", "faults[0].http_error.status: must be a whole number"),
    ("rate=0.2,faults=no_done:1", "no_done takes no value"),
    ("rate=0.2,faults=no_done|disconnect:rst", "faults[1].disconnect.mode"),
])
def test_bad_specs_say_what_to_change(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match="chaos") as caught:
        Chaos.parse(spec)
    assert message in str(caught.value)


@pytest.mark.parametrize("spec", [
    {"rate": 0.1, "sede": 1},
    {"rate": True},
    {"rate": 0.1, "seed": "7"},
    {"rate": 0.1, "faults": 3},
    {"rate": 0.1, "faults": [{"http_error": {"status": 1}}]},
])
def test_bad_mappings(spec: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"chaos|status"):
        Chaos.from_mapping(spec)
