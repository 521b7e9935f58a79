"""Scenarios: a name and a list of steps, each matching requests and describing the reply.

``load_scenario`` accepts a path, YAML text or a mapping; it validates against the shipped JSON
Schema, compiles matchers and templates, and refuses a scenario whose stream the checker rejects
unless the reply says on purpose which rules it breaks (``breaks: [sequence-number]``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ormock.faults.chaos import Chaos
from ormock.protocol.checker import check_stream
from ormock.protocol.ids import IdFactory
from ormock.protocol.profile import Profile, get_profile
from ormock.protocol.response import new_response
from ormock.protocol.types import Json
from ormock.scenario.generated_text import FAKER_LOCK, Draws, shared_faker
from ormock.scenario.matching import Check, compile_check
from ormock.scenario.replies import StepReply, compile_reply
from ormock.scenario.schema import validate
from ormock.scenario.source import Lines, ScenarioError, bound_data, load_yaml, read_text
from ormock.scenario.templates import TemplateError

__all__ = ["Scenario", "Step", "load_scenario"]

FOREVER = None


@dataclass
class Step:
    index: int  # 1-based, as people count steps
    checks: list[Check]
    reply: StepReply
    times: int | None = 1  # None: forever
    nth: int | None = None
    name: str | None = None
    line: int | None = None
    # an attempt a fault ended (an HTTP error, a failed or cut stream) uses the step up too;
    # by default it leaves the step to the client's retry
    count_faulted: bool = False

    @property
    def label(self) -> str:
        return f"step {self.index}" + (f" ({self.name})" if self.name else "")


@dataclass
class Scenario:
    name: str
    steps: list[Step]
    description: str = ""
    seed: int = 0
    order: str = "first"
    strict: bool = True
    source: str | None = None
    chaos: Chaos | None = None
    profile: Profile | None = None  # the provider its steps play (None: the server's)
    data: Json = field(default_factory=dict, repr=False)
    # this scenario as a part of a cache's key: its own object, hashed and compared by identity
    # (in C), which no other scenario's can be while a key holds it (a copy gets its own)
    identity: object = field(default_factory=object, init=False, repr=False, compare=False)

    @cached_property
    def continued(self) -> frozenset[int]:
        """The steps some ``previous_response_id: step:N`` of it names (decided once)."""
        return frozenset(check.prepared for step in self.steps for check in step.checks
                         if check.key == "previous_response_id"
                         and isinstance(check.prepared, int)
                         and not isinstance(check.prepared, bool))

    @cached_property
    def free(self) -> Step | None:
        """The step that answers any request, when there is one: the first, with no check, no
        ``nth`` and no limit of uses, in an order other than ``best`` (decided once)."""
        first = self.steps[0] if self.steps else None
        if self.order == "best" or first is None or first.checks or first.times is not None \
                or first.nth is not None:
            return None
        return first

    def where(self, step: Step) -> str:
        at = self.source or "<scenario>"
        return f"{at}:{step.line}" if step.line else at


def _compile_step(raw: Json, index: int, lines: Lines) -> Step:
    path: tuple[str | int, ...] = ("steps", index)
    checks = []
    nth = None
    for key, value in (raw.get("match") or {}).items():
        if key == "nth":
            nth = int(value)
            continue
        try:
            checks.append(compile_check(key, value))
        except ValueError as error:
            raise lines.error(str(error), (*path, "match", key)) from None
    try:
        reply = compile_reply(raw["reply"])
    except TemplateError as error:
        raise lines.error(f"template error: {error}", (*path, "reply", *error.path)) from None
    except (ValueError, TypeError) as error:
        raise lines.error(str(error), (*path, "reply")) from None
    times = raw.get("times", 1)
    return Step(
        index=index + 1,
        checks=checks,
        reply=reply,
        times=FOREVER if times == "forever" else int(times),
        nth=nth,
        name=raw.get("name"),
        line=lines.line(path),
        count_faulted=bool(raw.get("count_faulted", False)),
    )


def _check_step(scenario: Scenario, step: Step, lines: Lines, index: int) -> None:
    """Build the step's stream once and hold it to the protocol (or to its declared breaks); a
    built reply of a scenario whose profile sends OpenAI's tool items with them, held to
    that profile's rules."""
    reply = step.reply
    path = ("steps", index, "reply")
    openai = scenario.profile is not None and scenario.profile.openai_items
    if reply.sse is not None:
        report = check_stream(reply.sse)
    else:
        ids = IdFactory(scenario.seed)
        response = new_response(ids.new("resp"), 0, {"model": "ormock-1"})
        try:
            with FAKER_LOCK:
                draws = Draws(shared_faker(), scenario.seed)
                events = reply.build(draws, {"model": "ormock-1", "input": ""}, response, ids,
                                     input_tokens=0, completed_at=0, openai_items=openai)
        except (ValueError, KeyError, TypeError) as error:
            raise lines.error(f"cannot build this reply: {error}", path) from None
        report = check_stream(events, profile=scenario.profile.spellings_only()
                              if openai and scenario.profile and not reply.literal else None)
    broken = report.rules
    if broken - reply.breaks:
        first = next(v for v in report.violations if v.rule not in reply.breaks)
        where: tuple[str | int, ...] = path
        if reply.events is not None and first.index is not None and first.index < len(
            reply.events
        ):  # a literal event: point at the event itself
            where = (*path, "events", first.index)
        elif reply.sse is not None:
            where = (*path, "sse")
        raise lines.error(
            f"this reply breaks the protocol: {first}. If that is on purpose, say so with "
            f"'breaks: [{', '.join(sorted(broken))}]'",
            where,
        )
    if reply.breaks - broken:
        raise lines.error(
            f"'breaks' lists {', '.join(sorted(reply.breaks - broken))}, but the reply does "
            "not break it: remove it from 'breaks'",
            (*path, "breaks"),
        )


def load_scenario(source: str | os.PathLike[str] | Mapping[str, Any], *, name: str | None = None
                  ) -> Scenario:
    """Load a scenario from a file path, YAML text, or a mapping; errors are ``ScenarioError``."""
    file = None
    if isinstance(source, Mapping):
        bound_data(source)  # deep or huge mappings are refused before anything walks them
        data: Any = dict(source)
        lines = Lines()
    else:
        text = str(source)
        if isinstance(source, os.PathLike) or (
            "\n" not in text and text.endswith((".yaml", ".yml"))
        ):
            file = str(source)
            text = read_text(file)
        data, lines = load_yaml(text, file)
    if name is not None and isinstance(data, dict):
        data.setdefault("name", name)
    if not isinstance(data, dict):
        raise ScenarioError("a scenario is a mapping with 'name' and 'steps'", file=file, line=1)
    validate(data, lines)
    steps = [_compile_step(raw, i, lines) for i, raw in enumerate(data["steps"])]
    chaos = None
    if "chaos" in data:
        spec = data["chaos"]
        try:
            chaos = Chaos.from_mapping(spec) if isinstance(spec, dict) else Chaos.parse(spec)
        except ValueError as error:
            raise lines.error(str(error), ("chaos",)) from None
    profile = None
    if "profile" in data:
        try:
            profile = get_profile(data["profile"])
        except ValueError as error:  # a plugin's profile: load the plugin first
            raise lines.error(str(error), ("profile",)) from None
    scenario = Scenario(
        name=data["name"],
        steps=steps,
        description=data.get("description", ""),
        seed=int(data.get("seed", 0)),
        order=data.get("order", "first"),
        strict=bool(data.get("strict", True)),
        source=file,
        chaos=chaos,
        profile=profile,
        data=data,
    )
    for index, step in enumerate(steps):
        _check_step(scenario, step, lines, index)
    return scenario
