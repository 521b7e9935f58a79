"""Which faults may strike a reply, and striking them: a step's own, the engine's, a chaos draw;
with a shared store (``engine.sharing``), each one's count and draws named by its place, so
every worker counts and draws alike (``ormock.engine.shared_counters``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from ormock.engine.choose import set_of
from ormock.engine.journal import JournalEntry
from ormock.faults import Fault, strike_faults
from ormock.faults.chaos import Chaos
from ormock.protocol.reply import RawReply, Reply
from ormock.scenario import Scenario
from ormock.scenario.replies import StepReply

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["Striking", "fault_reply", "faults_for"]


@dataclass
class Striking:
    """What striking faults keeps between replies, one per engine, made anew by a reset: the
    generator of their draws, each fault's count (in this process), each scenario's own chaos,
    and with a shared store the names each fault's shared count (``tags``) and draws go by."""

    rng: random.Random
    counts: dict[int, int] = field(default_factory=dict)  # fault.key -> times reached
    chaos: dict[str, Chaos] = field(default_factory=dict)  # scenario name -> its chaos
    tags: dict[int, str] = field(default_factory=dict)  # fault.key -> its shared count's name
    draws: dict[int, str] = field(default_factory=dict)  # fault.key -> its draws' name

    @classmethod
    def fresh(cls, seed: int) -> Striking:
        return cls(random.Random(f"ormock:faults:{seed}"))


def faults_for(engine: Engine, step_reply: StepReply | None, scenario: Scenario | None,
               step: int = 0) -> list[Fault]:
    """The faults that may apply to this reply: the step's (``step``: its number), the
    engine's, a chaos draw."""
    own = step_reply.faults if step_reply else ()
    faults = [*own, *engine.faults]
    chaos, whose = engine.chaos, None
    if scenario is not None and scenario.chaos is not None:
        chaos = engine.striking.chaos.setdefault(scenario.name, scenario.chaos.fresh())
        whose = set_of(engine, scenario).tag(scenario)
    if engine.sharing.sync is not None:  # the counts of every process: named alike in each
        tags = engine.striking.tags = {}
        if scenario is not None:
            tag = set_of(engine, scenario).tag(scenario)
            tags.update({f.key: f"{tag}:{step}:{i}" for i, f in enumerate(own)})
        tags.update({f.key: f"faults:{engine.sharing.sync.faults_tag}:{i}"
                     for i, f in enumerate(engine.faults)})
        # what each one's draws are named by: its place, not its load (the same seed and
        # faults draw alike in every run and every process)
        names = engine.striking.draws = {}
        if scenario is not None:
            names.update({f.key: f"{scenario.name}:{step}:{i}" for i, f in enumerate(own)})
        names.update({f.key: f"faults:{i}" for i, f in enumerate(engine.faults)})
    if chaos is not None:
        index = None
        sync = engine.sharing.sync
        if sync is not None:
            index = engine.counters.add((whose or f"chaos:{sync.chaos_tag}", "chaos", 0))
        drawn = chaos.draw(index)
        if drawn is not None:
            faults.append(drawn)
    return faults


def _counted(engine: Engine, fault: Fault) -> int:
    """A fault reached once more, counted by every process (a drawn one: on its own)."""
    tag = engine.striking.tags.get(fault.key)
    return 1 if tag is None else engine.counters.add((tag, "fault", 0))


def _draws(engine: Engine, fault: Fault, count: int) -> random.Random | None:
    """A shared fault's draws for its ``count``-th reach (its ``probability`` and its own
    choices): a function of (seed, its place, count), as chaos draws are, so that with N
    workers the k-th request to reach it draws what it would with one."""
    name = engine.striking.draws.get(fault.key)
    return None if name is None else random.Random(f"ormock:fault:{engine.seed}:{name}:{count}")


def fault_reply(engine: Engine, reply: Reply, faults: list[Fault], entry: JournalEntry,
                unfit: Callable[[Fault], bool] | None = None) -> Reply | RawReply:
    """The reply with the faults that apply to it struck (``strike_faults``), what struck
    kept in the journal entry."""
    if not faults:
        return reply
    striking, shared = engine.striking, engine.sharing.shared
    counts = partial(_counted, engine) if shared else striking.counts
    draws = partial(_draws, engine) if shared else None
    result, strikes = strike_faults(reply, faults, counts, striking.rng, unfit, draws)
    entry.faults = [strike.fault for strike in strikes]
    entry.struck = [strike.to_dict() for strike in strikes]
    return result
