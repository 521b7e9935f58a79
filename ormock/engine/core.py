"""Choosing the reply for a request, keeping the responses a chain refers to, and the journal.

An ``Engine`` is one isolated fake: its own ids, clock, scenarios, stored responses and journal.
The server keeps one per namespace (``/v1`` is the namespace ``""``; ``/<name>/v1`` another).
A reply is chosen in this order: loaded scenarios' ``match`` rules; the header
``X-Ormock-Scenario: NAME``; a model named ``ormock:NAME``; the embedded default. The reply
itself is made step by step in ``ormock.engine.building``; the cassettes in ``replays``.
"""

from __future__ import annotations

import functools
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping
from os import PathLike
from typing import Any

from ormock.cassette.matching import Order, order_of
from ormock.cassette.model import Cassette, Interaction
from ormock.cassette.validation import checked
from ormock.engine import attempt, building, step_uses
from ormock.engine.cache import StreamCache
from ormock.engine.capped import Capped
from ormock.engine.compiled import Compiled
from ormock.engine.entry_answer import failed, record
from ormock.engine.faulting import Striking
from ormock.engine.feed import Feed
from ormock.engine.journal import Journal, JournalEntry, opened
from ormock.engine.journal_sink import written_at_once
from ormock.engine.replays import (
    Forward,
    Replayed,
    Replays,
    Upstream,
    cassettes_in,
    recorded,
    replay,
)
from ormock.engine.settings import Settings, settings_from
from ormock.engine.shared_admin import PRELOADED, token
from ormock.engine.shared_counters import StoreCounters, cassette_tag
from ormock.engine.sharing import Alone, Shared
from ormock.engine.stateful import Background, Claim, Generating, written
from ormock.engine.store import ResponseStore, StoreBackend, open_backend
from ormock.engine.store.batched import Holding
from ormock.faults import Fault, parse_fault
from ormock.faults.chaos import Chaos
from ormock.protocol.ids import Clock, IdFactory
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.request import ResponseRequest, parse_request
from ormock.protocol.secrets import mask_headers
from ormock.protocol.sse import encode_json
from ormock.protocol.wire import Transport, Wire, Written
from ormock.scenario import (
    Scenario,
    ScenarioSet,
    Selection,
    Step,
    find_scenario,
    load_scenario,
)
from ormock.scenario.counters import Counters, LocalCounters
from ormock.scenario.generated_text import FAKER_LOCK, shared_faker

__all__ = ["Engine"]


class Engine:
    """One isolated fake provider."""

    def __init__(self, settings: Settings | None = None, *, backend: StoreBackend | None = None,
                 shared: bool = False, **overrides: Any) -> None:
        """``Engine(settings)``, or ``Engine(seed=3, ...)`` with ``Settings`` fields (over
        ``settings`` when both are given). ``self.settings`` is what it was made with; the
        attributes below are its live values (the pytest plugin sets ``seed`` and ``speed``).
        ``backend``: where its responses are stored (a server gives each namespace's engine
        its keyspace of one backend); by default the one ``settings.store`` names. ``shared``:
        other processes serve this namespace from the same backend (``--workers``, replicas):
        the counts, the admin state and the journal go through it
        (``ormock.engine.shared_admin``)."""
        self.settings = settings = settings_from(settings, overrides)
        limits = settings.limits
        self.backend = backend if backend is not None else open_backend(settings.store, limits)
        if shared:  # a request's writes may be held, and made at once (``store.held``)
            self.backend = Holding(self.backend)
        # what it stored before (an SQLite file, a restart) stays until reset() is called
        self.responses = ResponseStore(limits.store_responses, limits.store_bytes,
                                       backend=self.backend, ttl=limits.store_seconds)
        self.profile = settings.profile
        self.limits = settings.limits  # what the journal, store and errors keep at most
        self.seed = settings.seed
        self.self_check = settings.self_check
        self.speed = settings.speed
        # the pace of replayed cassettes, when not ``speed`` (the pytest plugin: 0, at once)
        self.replay_speed: float | None = None
        self.scenario_dirs = settings.scenario_dirs
        self.clock_mode = settings.clock
        chaos = settings.chaos
        self.faker = shared_faker()
        # alone or with other processes: what the engine tells them, takes in, publishes
        self.sharing: Alone = Shared(self.backend) if shared else Alone()
        self.counters: Counters = (StoreCounters(self.backend) if shared
                                   else LocalCounters())
        self.scenarios = ScenarioSet(counters=self.counters)  # loaded: matched against all
        self.named = ScenarioSet(counters=self.counters)  # chosen by header or model name
        self.faults: list[Fault] = []  # applied to every reply (Python and admin API)
        # faulted answers whose step waits for their end (``step_uses``), by id of the entry
        self.pending_steps: dict[int, tuple[JournalEntry, Selection]] = {}
        self.chaos: Chaos | None = chaos.fresh() if chaos is not None else None
        self.on_reply: list[Callable[[JournalEntry, Reply | RawReply], None]] = []
        # the server's feed (entry ids, live watchers) and this namespace's name; a server's
        # ``Namespaces`` sets both
        self.feed = Feed()
        self.name = ""
        self._lock = threading.Lock()
        self.lock = self._lock  # held while its state changes (the server's replays take it)
        # the cassettes given to use_cassette (a reset keeping scenarios keeps them too)
        # (cassette, ignore, order, tag: its claims' name on a shared store)
        self.loaded_cassettes: list[tuple[Cassette, tuple[str, ...], Order, str]] = []
        self._upstream: Upstream | None = None  # record_to's (kept like the cassettes)
        self._reset(clear=False)

    def _joined(self, entry: JournalEntry) -> None:
        entry.id, entry.namespace = self.feed.new_id(), self.name

    def _added(self, entry: JournalEntry) -> None:
        feed = self.feed
        if feed.watchers:  # ``Feed.added``'s test, without its call when nobody watches
            feed.added(entry)

    def reset(self, *, scenarios: bool = True) -> None:
        """Start over: responses (this namespace's keys of the store), journal, ids,
        counters; ``scenarios=False`` keeps the loaded scenarios (with fresh counters) and
        faults."""
        self._reset(scenarios=scenarios, clear=True)

    def _reset(self, *, scenarios: bool = True, clear: bool) -> None:
        if clear:  # outside the lock: a task may be waiting for it on the server's loop
            Background.cancel_all(self.responses)  # returns once they have ended
        with self._lock:
            self._reset_held(scenarios=scenarios, clear=clear)
            if clear:
                self.sharing.changed(self, reset=True)  # every process resets its part too

    def reset_locally(self) -> None:
        """Another process reset this namespace (its keys are cleared): this process's part
        starts over too (ids, journal, cache, counts' knowledge); the caller holds the lock."""
        self._reset_held(scenarios=False, clear=False)

    def _reset_held(self, *, scenarios: bool = True, clear: bool) -> None:
        kept = [(s, self.scenarios.tag(s)) for s in self.scenarios.scenarios] \
            if not scenarios else []
        kept_faults = list(self.faults) if not scenarios else []
        kept_cassettes = list(self.loaded_cassettes) if not scenarios else []
        self.loaded_cassettes = kept_cassettes
        if scenarios:
            self._upstream = None
        if clear:
            self.responses.clear()
        self.ids = IdFactory(self.seed, self.responses.start())  # a restart: other ids
        self.clock = Clock(self.clock_mode)
        self.striking = Striking.fresh(self.seed)  # fault counts and draws start over
        limits = self.limits
        self.journal = Journal(limits.journal_entries, limits.journal_bytes, self._joined,
                               self._added)
        # tracebacks of failures inside the server, the newest ones
        self.errors: Capped[str] = Capped(limits.errors, limits.error_bytes, len)
        self.sharing.restarted()
        self.scenarios.clear()
        self.named.clear()
        self.named_by_request: dict[str, Scenario] = {}
        self.faults[:] = kept_faults
        self.pending_steps.clear()  # their counts start over
        self.cache = StreamCache()
        self.compiled = Compiled()  # new contents' reply templates
        self.replays = Replays(upstream=self._upstream)
        claims = self.counters if self.sharing.shared else None
        for cassette in self.settings.cassettes:
            self.replays.use(cassette, self.settings.cassette_ignore,
                             self.settings.cassette_order, claims,
                             cassette_tag(cassette, PRELOADED) if claims else "")
        for cassette, ignore, order, tag in kept_cassettes:
            self.replays.use(cassette, ignore, order, claims, tag)
        if self.chaos is not None:
            self.chaos.reset()
        for scenario, tag in kept:
            self.scenarios.add(scenario, tag if self.sharing.shared else None)

    # -- configuration --------------------------------------------------------------------------
    def use(self, scenario: Scenario | str | Mapping[str, Any]) -> Scenario:
        """Load a scenario (object, catalogue name, path, or mapping) for matching."""
        if isinstance(scenario, str) and "\n" not in scenario:
            scenario = find_scenario(scenario, self.scenario_dirs)
        elif not isinstance(scenario, Scenario):
            scenario = load_scenario(scenario)  # YAML text or a mapping
        with self._lock:
            # its counts start over, for every process
            self.scenarios.add(scenario, self.sharing.tag(scenario, fresh=True))
            self.sharing.changed(self)
        return scenario

    def preload(self, scenario: Scenario) -> None:
        """Load one of the scenarios the server starts with (``--scenario``): with a shared
        store, every replica started with the same file counts its steps together."""
        with self._lock:
            self.scenarios.add(scenario, self.sharing.tag(scenario, fresh=False))

    def unload(self, name: str) -> bool:
        """Unload a scenario; whether one of that name was loaded."""
        with self._lock:
            if self.scenarios.get(name) is None:
                return False
            self.scenarios.remove(name)
            self.sharing.changed(self)
        return True

    def pull(self) -> None:
        """Take in the admin changes other processes on the same store made (one read when
        none; nothing to do without a shared store). A dropped namespace: 404."""
        with self._lock:
            self.sharing.pull(self)

    @property
    def replaying(self) -> bool:
        """Whether its ``/v1`` requests are the cassettes' (it has some, or records)."""
        replays = self.replays
        return bool(replays.players) or replays.upstream is not None

    def use_cassette(self, source: Cassette | str | PathLike[str], *,
                     ignore: Iterable[str] = (), order: Order = "any") -> list[Cassette]:
        """Replay a cassette (a ``Cassette``, a file of ormock's or vcrpy's, or a folder of
        them) before anything else: each request takes the first unused interaction it matches
        (``order="recorded"``: the next one; ``"repeat"``: the first it matches, played or
        not), ``ignore`` JSON paths left out of the match."""
        order = order_of(order)
        # one built in Python is checked as a loaded one is (files are checked as they load)
        cassettes = [checked(source)] if isinstance(source, Cassette) else cassettes_in(source)
        paths = tuple(ignore)
        with self._lock:
            claims = self.counters if self.sharing.shared else None
            for cassette in cassettes:  # on a shared store: played afresh, by all
                tag = cassette_tag(cassette, token()) if claims else ""
                self.replays.use(cassette, paths, order, claims, tag)
                self.loaded_cassettes.append((cassette, paths, order, tag))
            self.sharing.changed(self)
        return cassettes

    def drop_cassettes(self) -> None:
        """Stop replaying every cassette (the server's ``--cassette`` ones too)."""
        with self._lock:
            self.loaded_cassettes.clear()
            self.replays = Replays(upstream=self._upstream)
            self.sharing.changed(self)

    def record_to(self, upstream: Upstream | None) -> None:
        """Record: what the cassettes do not answer (everything, in the ``all`` and ``rewrite``
        modes) goes to ``upstream`` and is kept in ``replays.recorded``; None stops it."""
        with self._lock:
            self._upstream = upstream
            self.replays.upstream = upstream

    def recorded(self, forward: Forward, interaction: Interaction | None,
                 problem: str | None = None) -> None:
        """What the upstream answered a forwarded request (None: nothing recordable)."""
        with self._lock:
            recorded(self, forward, interaction, problem)

    def replay(self, method: str, path: str, query: str, body: Any,
               headers: Mapping[str, str], size: int = 0
               ) -> tuple[Replayed, Wire, JournalEntry]:
        """Answer a request from the cassettes: the interaction, the wire to write (faults
        applied), and the journal entry. No interaction matches: ``OpenResponsesError`` 400
        ``cassette_miss`` naming the closest one and how it differs, or ``Forward`` when the
        engine records (``record_to``)."""
        with self._lock:
            return replay(self, method, path, query, body, headers, size)

    # -- answering ------------------------------------------------------------------------------
    def respond(
        self, body: Any, headers: Mapping[str, str], path: str = "/v1/responses"
    ) -> Reply | RawReply:
        """Answer a ``POST /v1/responses``; an ``OpenResponsesError`` is journaled and raised."""
        return self.answer(body, headers, path)[0]

    def continuation_cache(self) -> ResponseStore:
        """A connection's own cache of ``store: false`` responses (WebSocket mode): pass it to
        ``answer(local=...)`` so that they can be continued on that connection only. Capped
        like the store: past its limits the oldest go."""
        return ResponseStore(self.limits.socket_responses, self.limits.socket_bytes)

    def failed_inside(self, exc: BaseException) -> None:
        """Keep the traceback of a bug that escaped the server's answer to a request (the
        after-test report shows the newest ones: ``errors``)."""
        self.errors.append("".join(traceback.format_exception(exc)).rstrip())

    def finished(self, entry: JournalEntry, wait: bool = False) -> None:
        """The answer of ``entry`` was all written (or dropped, or the client left); ``wait``:
        published in a shared journal before this returns (``WrittenAhead``)."""
        entry.finished_at = self.elapsed()
        self.sharing.publish(entry, wait)

    def journal_view(self) -> list[JournalEntry]:
        """The journal as ``GET /_ormock/journal`` and the verdict read it: this engine's
        entries, or with a shared store those of every process (read back from the store)."""
        return self.sharing.journal(self)

    def elapsed(self) -> float:
        """Seconds since the engine started (the journal's clock; with a shared store, since
        the namespace started, on the wall clock every process shares), to the microsecond:
        ``round(t * 1e6) / 1e6``, the same value as ``round(t, 6)`` but for the last digit of
        a tie (read twice a request)."""
        return self.sharing.elapsed()

    def answer(
        self,
        body: Any,
        headers: Mapping[str, str],
        path: str = "/v1/responses",
        local: ResponseStore | None = None,
        parsed: ResponseRequest | None = None,
        size: int | None = None,
        transport: Transport | None = None,
        forced: Selection | None = None,
        again: JournalEntry | None = None,
    ) -> tuple[Reply | RawReply, JournalEntry]:
        """``respond``, with the journal entry (the server sets its ``finished_at``).

        ``transport``: the writer the reply goes to, ``"http"`` (SSE or JSON, as the request
        says) or ``"socket"`` (a WebSocket turn: text frames, and a step's fault that cannot
        exist on a WebSocket is refused, 400 ``fault_not_on_websocket``; a server-wide one is
        skipped, ``entry.skipped``). A writer needs only the reply's frames, so with a transport
        an unpaced reply with no fault to apply may come from the stream cache
        (``ormock.engine.cache``): the same bytes as a fresh build, with no ``events``. Python
        callers (no transport) get every event. ``parsed``: ``body`` already checked by
        ``parse_request`` (the server remembers the requests it has read). ``size``: the body's
        length in bytes, as read (the journal and the store count it against their limits;
        measured when not given). ``forced``: answer with this step, whatever the request
        matches (``respond_with``). ``again``: the entry of a stale attempt at this request,
        which this one replaces (``ormock.engine.attempt``).
        """
        entry = opened("POST", path, mask_headers(headers), body, self.elapsed(),
                       _body_size(body) if size is None else size)
        # ``with self._lock, FAKER_LOCK``, spelled out as acquire and release: every create
        # takes both
        lock = self._lock
        lock.acquire()
        try:
            FAKER_LOCK.acquire()
            try:
                if again is None and not self.sharing.shared:  # no attempt to note without a
                    self.journal.append(entry)  # shared store (``attempt.joined``'s first step)
                else:  # the journal's, in place of a stale attempt's
                    attempt.joined(self, entry, again)
                try:
                    reply = building.respond(self, parsed or parse_request(body), headers,
                                             entry, forced=forced, local=local,
                                             transport=transport)
                except Exception as error:
                    failed(entry, headers, error)  # ``answering``'s work, without a ``with``
                    self.journal.recount(entry)  # its error counted too
                    # a stale attempt is answered again from the start (the create route);
                    # an error answer is never finished: shared now, before the client has it
                    if not isinstance(error, attempt.Stale):
                        self.sharing.publish(entry, wait=True)
                    raise
                record(entry, reply)
                self.journal.recount(entry)  # its answer's parts counted too
                if self.sharing.shared and not written_at_once(reply, body, transport):
                    self.sharing.publish(entry)  # seen by other workers while it is written
            finally:
                FAKER_LOCK.release()
        finally:
            lock.release()
        if transport is None:  # a Python caller's: kept by reference for the inspector
            self.feed.planned(entry, reply)
        if self.on_reply:  # an attempt that may be stale runs them once it is not
            attempt.defer(self, [functools.partial(hook, entry, reply) for hook in self.on_reply])
        return reply, entry

    def writing(self, entry: JournalEntry) -> None:
        """The answer of ``entry`` is about to be written: its response is generating."""
        response_id = entry.response_id
        if response_id is not None:
            Generating.add(self.responses, response_id)

    def settle(self, entry: JournalEntry, sent: Written | None, claim: Claim | None) -> None:
        """The answer of ``entry`` is over (``sent``: what the writer sent; None: nothing
        was): what that changes of its response and its idempotency key (``written``)."""
        written(self.responses, entry, sent, claim)
        if self.pending_steps:
            step_uses.settled(self, entry, sent)

    def respond_with(self, scenario: Scenario, step: Step, body: Any) -> Reply | RawReply:
        """Answer ``body`` with a given step, whatever it matches (``ormock show``): the same
        path as ``answer``, journal included, with the step forced."""
        return self.answer(body, {}, forced=Selection(scenario, step))[0]

    # -- faults ---------------------------------------------------------------------------------
    def inject(self, fault: Fault | Mapping[str, Any] | str) -> Fault:
        """Apply a fault (object or spec such as ``{"http_error": 429, "when": {"nth": 1}}``)
        to every reply from now on."""
        if not isinstance(fault, Fault):
            fault = parse_fault(fault)
        with self._lock:
            self.faults.append(fault)
            self.sharing.changed(self, faults=True)
        return fault

    def clear_faults(self) -> None:
        """No more faults on every reply, and no chaos."""
        with self._lock:
            self.faults.clear()
            self.chaos = None
            self.sharing.changed(self, faults=True, chaos=True)

    def set_chaos(self, chaos: Chaos | None) -> None:
        """Seeded chaos on every reply from now on (None: none); its draws start over."""
        with self._lock:
            self.chaos = chaos
            self.sharing.changed(self, chaos=True)


def _body_size(body: Any) -> int:
    """A Python caller's body, measured as the server would have read it."""
    try:
        return len(encode_json(body))
    except (TypeError, ValueError, RecursionError):
        return 0
