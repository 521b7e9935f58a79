"""Frozen dataclasses made without their ``__init__`` (``ormock.protocol.frozen.made``): each
use gives every field, and the instance ``__init__`` would have made; and the plain records a
new content makes (its journal summary, a named tuple; the stream cache's template, a class with
slots) whole."""

from __future__ import annotations

import dataclasses
from typing import Any

from ormock.engine.cache import StreamTemplate
from ormock.engine.core import Engine
from ormock.engine.embedded import default_plan
from ormock.engine.journal import Sent
from ormock.protocol.frozen import made
from ormock.protocol.plan import MessagePlan
from ormock.protocol.reply import Reply
from ormock.protocol.request import parse_request
from ormock.protocol.wire import Frame


def _as_init_makes_it(instance: Any) -> None:
    by_init = vars(dataclasses.replace(instance))  # what __init__ gives: each field it sets
    assert list(vars(instance)) == list(by_init) and vars(instance) == by_init


def test_made_is_what_init_makes() -> None:
    frame = made(Frame, data=b"x", delay=0.5, action=None, events=({"type": "t"},))
    assert frame == Frame(b"x", 0.5, events=({"type": "t"},))
    _as_init_makes_it(frame)
    try:
        frame.data = b""  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("a made instance is frozen as one from __init__")


def test_a_new_contents_records_are_whole() -> None:
    """The reply, its journal summary and the stream cache's template of a new content over
    HTTP (``building.fresh``), JSON and streamed, filled into a compiled template (from the
    third request of an echo) or built; each content sent twice, as the cache keeps a
    content's template from its second reply."""
    engine = Engine(seed=2)
    for stream in (False, True):
        for n in range(3):
            for _ in range(2):
                reply, _ = engine.answer({"model": "m", "input": f"hi {n}", "stream": stream},
                                         {}, transport="http")
                assert isinstance(reply, Reply) and reply.body is not None
                _as_init_makes_it(reply)
                assert type(reply.summary) is Sent and len(reply.summary.types) \
                    == len(reply.summary.numbers)
            template = engine.cache._templates.entries()[-1][1]  # its second reply's
            assert isinstance(template, StreamTemplate)
            assert all(hasattr(template, name) for name in StreamTemplate.__slots__)
            assert template.summary is reply.summary
            assert template.body == reply.body
    assert len(engine.compiled.compiled()) == 2  # JSON and streamed


def test_the_default_plans_message_is_whole() -> None:
    engine = Engine(seed=2)
    request = parse_request({"model": "m", "input": "hi"})
    message = default_plan(request, request.input, engine.faker, 2).items[0]
    assert isinstance(message, MessagePlan)
    _as_init_makes_it(message)
    _as_init_makes_it(message.parts[0])


def test_a_scenario_steps_plan_is_whole() -> None:
    """A step's plan and its one templated message (``StepReply.plan``), made without their
    ``__init__``: what ``__init__`` makes."""
    from ormock.scenario.catalogue import find_named
    from ormock.scenario.generated_text import Draws

    engine = Engine(seed=2)
    plan = find_named("text").steps[0].reply.plan(Draws(engine.faker, 7), {})
    _as_init_makes_it(plan)
    message = plan.items[0]
    assert isinstance(message, MessagePlan)
    _as_init_makes_it(message)
    _as_init_makes_it(message.parts[0])
    assert message.parts[0].cut is not None
