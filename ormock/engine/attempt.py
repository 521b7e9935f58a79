"""One attempt at answering an HTTP create on a shared store, and what a failed one must undo.

The create route (``ormock.server.create``) answers a request on a warm worker without reading the
admin stamp first: its writes are held (``ormock.engine.store.batched``) and made in one call,
guarded by the stamp this worker applied, just before the first byte goes out. When the guard
fails (``Stale``: another process changed the admin state, reset or dropped the namespace
since), nothing was written or sent; the route pulls the change in and answers again, and the
first attempt leaves no trace: its journal entry is replaced by the new attempt's (the same id
and place: the feed's watchers see it change, not a second entry), the reply hooks it deferred
never run, no claim is held (a claim is a write, so it is made only once the stamp was
verified: the attempt can no longer be stale).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ormock.engine.journal import JournalEntry
from ormock.engine.store.batched import Held, Holding, Stale, active, holding

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["Held", "Stale", "commit", "defer", "forget", "hold", "holding", "joined", "noted",
           "retake"]


def hold(engine: Engine) -> Held | None:
    """The ``Held`` of one attempt of the engine's (None without a shared store): its commit
    is guarded by the admin stamp the engine applied last (none before it applied one)."""
    backend, sync = engine.backend, engine.sharing.sync
    if sync is None or type(backend) is not Holding:  # (``Holding``'s note on ``type``)
        return None
    return Held(backend, sync.guard())


def commit(held: Held | None) -> None:
    """Make what ``held`` holds (``Stale`` if its guard fails); nothing to do for None."""
    if held is not None:
        held.commit()


def joined(engine: Engine, entry: JournalEntry, again: JournalEntry | None) -> None:
    """``entry`` in the engine's journal (in place of ``again``, a stale attempt's entry), and
    the entry of the attempt active in this context (``noted``); the caller holds the lock."""
    if again is None:
        engine.journal.append(entry)
    else:
        retake(engine, entry, again)
    noted(engine, entry)


def noted(engine: Engine, entry: JournalEntry) -> None:
    """The journal entry of the attempt active in this context, if any (``forget``)."""
    if type(engine.backend) is Holding:
        held = active(engine.backend)
        if held is not None:
            held.entry = entry


def defer(engine: Engine, calls: list[Callable[[], None]]) -> None:
    """Run ``calls`` now, or, for an attempt that may still be stale, once its first commit is
    made (never, for a stale one)."""
    held = active(engine.backend) if type(engine.backend) is Holding else None
    if held is not None and not held.verified:
        held.after += calls
        return
    for call in calls:
        call()


def retake(engine: Engine, entry: JournalEntry, old: JournalEntry) -> None:
    """``entry`` in the journal in place of a stale attempt's ``old`` (its id, its place; the
    watchers told it changed); the caller holds the engine's lock."""
    journal = engine.journal
    entry.id, entry.namespace = old.id, old.namespace
    for index, found in enumerate(journal):
        if found is old:
            journal[index] = entry
            journal.bytes += journal.size(entry) - journal.size(old)
            break
    else:  # trimmed meanwhile: a new entry with the old id
        list.append(journal, entry)
        journal.bytes += journal.size(entry)
    engine.feed.changed(entry)


def forget(engine: Engine, old: JournalEntry | None) -> None:
    """Drop a stale attempt's entry that no attempt replaces (the namespace was dropped)."""
    if old is None:
        return
    with engine.lock:
        journal = engine.journal
        for index, found in enumerate(journal):
            if found is old:
                del journal[index]
                journal.bytes -= journal.size(old)
                break
    engine.feed.changed(old)


