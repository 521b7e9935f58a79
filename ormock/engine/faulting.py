"""Which faults may strike a reply, and striking them: a step's own, the engine's, a chaos draw;
with a shared store (``engine.sharing``), each one's count and draws named by its place, so
every worker counts and draws alike (``ormock.engine.shared_counters``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from ormock.engine.choose import set_of
from ormock.engine.journal import JournalEntry
from ormock.faults import Fault, strike_faults
from ormock.protocol.reply import RawReply, Reply
from ormock.scenario import Scenario
from ormock.scenario.replies import StepReply

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["fault_reply", "faults_for"]


def faults_for(engine: Engine, step_reply: StepReply | None, scenario: Scenario | None,
               step: int = 0) -> list[Fault]:
    """The faults that may apply to this reply: the step's (``step``: its number), the
    engine's, a chaos draw."""
    own = step_reply.faults if step_reply else ()
    faults = [*own, *engine.faults]
    chaos, whose = engine.chaos, None
    if scenario is not None and scenario.chaos is not None:
        chaos = engine.scenario_chaos.setdefault(scenario.name, scenario.chaos.fresh())
        whose = set_of(engine, scenario).tag(scenario)
    if engine.sharing.sync is not None:  # the counts of every process: named alike in each
        tags = engine.fault_tags = {}
        if scenario is not None:
            tag = set_of(engine, scenario).tag(scenario)
            tags.update({f.key: f"{tag}:{step}:{i}" for i, f in enumerate(own)})
        tags.update({f.key: f"faults:{engine.sharing.sync.faults_tag}:{i}"
                     for i, f in enumerate(engine.faults)})
        # what each one's draws are named by: its place, not its load (the same seed and
        # faults draw alike in every run and every process)
        names = engine.fault_draws = {}
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
    tag = engine.fault_tags.get(fault.key)
    return 1 if tag is None else engine.counters.add((tag, "fault", 0))


def _draws(engine: Engine, fault: Fault, count: int) -> random.Random | None:
    """A shared fault's draws for its ``count``-th reach (its ``probability`` and its own
    choices): a function of (seed, its place, count), as chaos draws are, so that with N
    workers the k-th request to reach it draws what it would with one."""
    name = engine.fault_draws.get(fault.key)
    return None if name is None else random.Random(f"ormock:fault:{engine.seed}:{name}:{count}")


def fault_reply(engine: Engine, reply: Reply, faults: list[Fault], entry: JournalEntry,
                unfit: Callable[[Fault], bool] | None = None) -> Reply | RawReply:
    """The reply with the faults that apply to it struck (``strike_faults``), what struck
    kept in the journal entry."""
    if not faults:
        return reply
    counts = engine.fault_counts if engine.sharing.sync is None else partial(_counted, engine)
    draws = None if engine.sharing.sync is None else partial(_draws, engine)
    result, strikes = strike_faults(reply, faults, counts, engine.rng, unfit, draws)
    entry.faults = [strike.fault for strike in strikes]
    entry.struck = [strike.to_dict() for strike in strikes]
    return result
