"""One reply to ``POST /v1/responses``, step by step: context, choice, echo, build (or the stream
cache), faults, keep.

``Engine.answer`` opens the journal entry, takes the engine's lock and calls ``respond``; each
step here is a function of the engine and the ``Turn`` (``ormock.engine.turn``) that holds what
the steps share. A reply the stream cache may answer (``ormock.engine.cache``: a transport, no
fault, no pacing, no self-check, no literal events, no conversation) is looked up by
``cache_key``; a fresh build of such a reply is remembered for the next one (``fresh``,
``remember``) once its content comes a second time (``StreamCache.again``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ormock.engine.cache import RecordingIds, StreamTemplate, issued_reply
from ormock.engine.choose import MODEL_PREFIX, SCENARIO_HEADER, choose, set_of
from ormock.engine.compiled import final_usage
from ormock.engine.compose import self_check
from ormock.engine.context import context_of, context_tokens, restored
from ormock.engine.conversations import Joined, join_conversation
from ormock.engine.embedded import default_plan
from ormock.engine.entry_answer import final_response
from ormock.engine.faulting import fault_reply, faults_for
from ormock.engine.journal import JournalEntry, Sent, summarize
from ormock.engine.stateful import owner_of
from ormock.engine.step_uses import after_faults, refused
from ormock.engine.store import ResponseStore, Stored
from ormock.engine.turn import NO_FIELDS, RequestFields, Turn, background_check, socket_check
from ormock.faults import Fault
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.plan import FunctionCallPlan, ItemPlan, ReasoningPlan, ReplyPlan
from ormock.protocol.reasoning import INCLUDE_ENCRYPTED, reasoning_key, seal
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.request import ResponseRequest
from ormock.protocol.response import new_response
from ormock.protocol.sse import DONE_FRAME, Framed, encode_json
from ormock.protocol.stream import build_events, build_final, build_frames
from ormock.protocol.tools import spelled
from ormock.protocol.types import Json
from ormock.protocol.wire import Pacing, Transport
from ormock.scenario import Selection
from ormock.scenario.generated_text import Draws

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["build", "cache_key", "echo_of", "fresh", "issue", "keep", "plan_of", "planned",
           "remember", "respond"]


def respond(
    engine: Engine,
    request: ResponseRequest,
    headers: Mapping[str, str],
    entry: JournalEntry,
    forced: Selection | None = None,
    local: ResponseStore | None = None,
    transport: Transport | None = None,
) -> Reply | RawReply:
    """The reply to a parsed request (the caller holds ``engine.lock`` and journals it), a
    stream framed as the provider played frames one. A step the request gives nothing to do
    is not taken: no chain to rebuild (``context_of``), no reasoning item to restore, no
    scenario loaded or named to choose from, no fault or chaos to look for."""
    # as the namespace's provider reads it: fields it drops unread, a continuation it refuses
    request = engine.profile.accepted(request)
    # its items come before the input (no call for a body naming none: nearly every one)
    joined = join_conversation(engine, request) if "conversation" in request.body else None
    owner = owner_of(headers)  # the sha256 of its API key: only that key sees it
    if request.previous_response_id is None:  # no chain: the context is the input itself
        context, parent, tokens = request.input, None, request.input_tokens  # read, not changed
    else:
        context, parent = context_of(engine.responses, request, local, owner)
        tokens = context_tokens(request, parent)
    if request.sends_reasoning:
        context, added = restored(request, context, engine.seed)
        tokens += added
    if joined is not None:
        context, tokens = [*joined.items, *context], joined.tokens + tokens
    # ``generate: false`` (a warm-up, Codex's first WebSocket message): an answer with no
    # output, from no scenario step (it uses none); with no scenario loaded and none named by
    # the header or the model, the embedded default's
    model = request.model
    selection = None if request.body.get("generate") is False else forced or (
        choose(engine, request, headers)
        if engine.scenarios.scenarios or headers.get(SCENARIO_HEADER)
        or (model is not None and model.startswith(MODEL_PREFIX)) else None)
    try:
        return _respond(engine, request, entry, selection, forced is None, context, parent,
                        tokens, joined, owner, local, transport)
    except OpenResponsesError:
        if selection is not None and forced is None:  # an error uses no step
            refused(engine, selection, entry)
        raise


def _respond(engine: Engine, request: ResponseRequest, entry: JournalEntry,
             selection: Selection | None, counted: bool, context: list[Json],
             parent: Stored | None, tokens: int, joined: Joined | None, owner: str | None,
             local: ResponseStore | None, transport: Transport | None) -> Reply | RawReply:
    """``respond`` once the step is chosen (``counted``: its use was counted)."""
    # the provider played: the chosen scenario's profile, else the namespace's
    profile = (selection.scenario.profile if selection is not None else None) or engine.profile
    turn = Turn(request, entry, selection, context, parent, tokens, local,
                transport == "socket", profile)
    profile.check_request(request)
    if selection is not None:
        entry.scenario, entry.step = selection.scenario.name, selection.step.index
        if counted:
            entry.step_used = True
    created, completed = engine.clock.pair()  # now(), now()
    step_reply = turn.step_reply
    scenario = selection.scenario if selection else None
    # the faults that may strike: none to look for when neither the engine, the step nor its
    # scenario has any
    faults = faults_for(engine, step_reply, scenario, selection.step.index if selection else 0) \
        if (engine.faults or engine.chaos is not None or (step_reply and step_reply.faults)
            or (scenario is not None and scenario.chaos is not None)) else []
    pacing = step_reply.pacing if step_reply else None
    key = cache_key(engine, turn, transport, joined, faults, pacing)
    if key is not None:
        template = engine.cache.get(key)
        if template is not None:  # the same content as an earlier reply, fresh ids
            return _framed(turn, issue(engine, turn, template, created, completed, owner))
    turn.echo = echo_of(turn)  # only a build repeats them (a cache hit has its bytes)
    if joined is not None:
        turn.echo["conversation"] = {"id": joined.id}
    if key is not None and not turn.socket and not turn.literal:
        return _framed(turn, fresh(engine, turn, key, created, completed, owner))
    ids = RecordingIds(engine.ids) if key is not None else engine.ids
    reply = planned(engine, turn, build(engine, turn, ids, completed_at=completed,
                                        created_at=created), pacing)
    unfit = socket_check(turn.step_reply, entry) if turn.socket else \
        background_check(turn.step_reply, entry) if request.echo.get("background") else None
    out = fault_reply(engine, reply, faults, entry, unfit)
    if selection is not None and counted and entry.faults:
        after_faults(engine, selection, reply, out, entry, transport is not None)
    final = final_response(out.events) if isinstance(out, Reply) else None
    if final is None or not isinstance(final.get("id"), str):
        return _framed(turn, out)
    raw = None  # the final Response's JSON, when already encoded (the store keeps it)
    if isinstance(ids, RecordingIds) and out is reply:
        out, raw = remember(engine, key, reply, final, ids, created, completed)
    keep(engine, selection, final["id"], bool(final.get("store", True)),
         Stored(final, request.input, parent, raw=raw, context_tokens=turn.context_tokens,
                owner=owner, extensions=turn.extensions, input_json=request.input_json), local)
    if joined is not None:
        joined.append(engine, final.get("output") or [])
    return _framed(turn, out)


def _framed(turn: Turn, out: Reply | RawReply) -> Reply | RawReply:
    """A streamed reply framed as the provider played frames its streams (most frame them
    as Open Responses does: the reply as it is)."""
    framing = turn.profile.framing
    if framing.spec or not isinstance(out, Reply) or not out.stream or out.socket:
        return out
    return replace(out, framing=framing)


def cache_key(engine: Engine, turn: Turn, transport: Transport | None, joined: Joined | None,
              faults: list[Fault], pacing: Pacing | None) -> Hashable | None:
    """The stream cache's key of this reply's content (the step, the request's canonical body:
    ``ResponseRequest.content_key``, the stream flag, the transport, the profile, the extension
    fields), or None when it may not come from the cache: no transport (a Python caller gets
    every event), a conversation (its context is not the body's), background mode (its run
    needs the events), a fault, the self-check, pacing or literal events."""
    if not transport or joined is not None or turn.request.echo.get("background") or (
            faults or engine.self_check or (pacing and pacing.paced) or turn.literal
            or turn.request.body.get("generate") is False):
        return None
    selection = turn.selection
    return (selection.scenario.identity if selection else None,
            selection.step.index if selection else 0, turn.request.content_key(),
            turn.request.stream,
            turn.socket, turn.profile.name,
            encode_json(turn.extensions) if turn.extensions else None)


def echo_of(turn: Turn) -> Json:
    """The request fields the Response repeats, with the model a parent or step sets and the
    extension fields in effect (inherited along the chain)."""
    request, parent, step_reply = turn.request, turn.parent, turn.step_reply
    echo = {**request.echo, **turn.extensions}
    profile = turn.profile
    if profile.echo_json_schema and (text_format := echo.get("text", {}).get("format", {})
                                     ).get("type") == "json_schema":
        schema = request.body["text"]["format"]["schema"]
        echo["text"] = {**echo["text"], "format": {**text_format, "schema": schema}}
    if not profile.stateful:  # a provider that keeps nothing says so
        echo["store"] = False
    if request.model is None and parent is not None:
        echo["model"] = parent.response["model"]
    if step_reply is not None and step_reply.model:
        echo["model"] = step_reply.model
    return echo


def build(engine: Engine, turn: Turn, ids: Any, created_at: int,
          completed_at: int) -> list[Json]:
    """The events of the reply: the embedded default's, or the chosen step's."""
    step_reply = turn.step_reply
    snapshot = new_response(ids.new("resp"), created_at, turn.echo)  # drawn for every reply
    if turn.literal:  # literal events are sent as written
        assert step_reply is not None
        return step_reply.literal_events()
    events = build_events(plan_of(engine, turn), snapshot, ids,
                          input_tokens=turn.context_tokens + turn.request.prompt_tokens,
                          completed_at=completed_at)
    _usage(turn, events[-1]["response"])
    turn.profile.rename(events)
    return events


def plan_of(engine: Engine, turn: Turn) -> ReplyPlan:
    """What the reply says: nothing for ``generate: false``, the embedded default's plan, or
    the chosen step's rendered; its reasoning sealed into ``encrypted_content`` when the
    request includes it (``ormock.protocol.reasoning``); OpenAI's tool items spelled as the
    profile sends them (``ormock.protocol.tools.spelled``)."""
    request, selection, step_reply = turn.request, turn.selection, turn.step_reply
    if request.body.get("generate") is False:
        return ReplyPlan(items=[])
    if selection is None or step_reply is None:
        plan = default_plan(request, turn.context, engine.faker, engine.seed)
    else:
        # a reply with no template draws nothing: no seed of its own to derive
        draws = Draws(engine.faker, request.content_seed(
            selection.scenario.seed + selection.step.index)) if step_reply.templated else None
        # the request's fields offered only to templates that read them
        plan = step_reply.plan(draws, RequestFields(turn) if step_reply.reads_request
                               else NO_FIELDS)
    include = request.body.get("include")
    if include and INCLUDE_ENCRYPTED in include:
        plan = _sealed(plan, reasoning_key(engine.seed))
    profile = turn.profile
    if profile.tool_calls_kept is not None:
        plan = _calls_kept(plan, profile.tool_calls_kept)
    return spelled(plan, profile.openai_items)


def _sealed(plan: ReplyPlan, key: bytes) -> ReplyPlan:
    """The plan with each reasoning item's summary and content sealed into its
    ``encrypted_content`` (a step's own value is kept)."""
    items: list[ItemPlan] = [
        replace(item, encrypted_content=seal(key, item.summary, item.content))
        if isinstance(item, ReasoningPlan) and item.encrypted_content is None else item
        for item in plan.items]
    return replace(plan, items=items)


def _calls_kept(plan: ReplyPlan, kept: int) -> ReplyPlan:
    """The plan with only its first ``kept`` function calls (a provider that passes on only
    the first calls the model makes: ``Profile.tool_calls_kept``)."""
    if sum(isinstance(i, FunctionCallPlan) for i in plan.items) <= kept:
        return plan
    calls = 0
    items = []
    for item in plan.items:
        calls += isinstance(item, FunctionCallPlan)
        if not isinstance(item, FunctionCallPlan) or calls <= kept:
            items.append(item)
    return replace(plan, items=items)


def _usage(turn: Turn, final: Json) -> None:
    """The terminal snapshot's usage: a step's own counts, or none when the profile sends
    only a reply's own."""
    final_usage(turn.step_reply, turn.profile, final)


def fresh(engine: Engine, turn: Turn, key: Hashable, created: int, completed: int,
          owner: str | None) -> Reply:
    """A new content's reply over HTTP with no fault, no pacing and no literal events (what the
    stream cache may answer): filled into its compiled template (``ormock.engine.compiled``)
    when its plan has a shape one holds, else built from its plan without the events a full
    build makes: a JSON reply from its terminal snapshot and the types of its events
    (``build_final``), a stream with its deltas framed from a template (``build_frames``);
    the same bytes, journal summary and ids, drawn in the same order, as a full build. Its
    body is sent as it is, and kept by the store, and by the cache when its content came
    before (``StreamCache.again``)."""
    plan = plan_of(engine, turn)  # it draws no id: the response id is still the first
    tokens = turn.context_tokens + turn.request.prompt_tokens
    stream = turn.request.stream
    template = engine.compiled.template(plan, turn.echo, turn.profile, turn.step_reply, stream)
    if template is not None:
        body, raw, summary, drawn = template.fill(
            engine.ids, plan.items[0].parts[0],  # type: ignore[union-attr,arg-type]
            created, completed, tokens)
        response_id = drawn[0]
        prefixes: Sequence[str] = template.prefixes
        status, store, final, ends = template.status, template.store, None, template.completed
    else:
        response_id = engine.ids.new("resp")  # drawn first, as a build does
        ids = RecordingIds(engine.ids)  # an IdFactory that remembers its draws
        ids.prefixes.append("resp")
        ids.drawn.append(response_id)
        body, raw, summary, final = _built(turn, plan, ids, response_id, created, completed,
                                           tokens)
        prefixes, drawn = ids.prefixes, ids.drawn
        status, store = str(final["status"]), bool(final.get("store", True))
        ends = final.get("completed_at") is not None
    entry = turn.entry
    entry.response_id, entry.response_status = response_id, status
    if engine.cache.again(key):  # kept from a content's second reply on
        engine.cache.put(key, StreamTemplate(
            body=body, final=raw, prefixes=tuple(prefixes), ids=tuple(drawn),
            created=created, completed=completed if ends else None, summary=summary,
            status=status, store=store))
    keep(engine, turn.selection, response_id, store,
         Stored(final, turn.request.input, turn.parent, raw=raw,
                context_tokens=turn.context_tokens, owner=owner, extensions=turn.extensions,
                input_json=turn.request.input_json), turn.local)
    return issued_reply(stream, body, summary, False)


def _built(turn: Turn, plan: ReplyPlan, ids: Any, response_id: str, created: int,
           completed: int, tokens: int) -> tuple[bytes, bytes, Sent, Json]:
    """``fresh``'s reply built from its plan: the body, the final Response's JSON, the
    journal summary and the final Response."""
    snapshot = new_response(response_id, created, turn.echo)
    names = turn.profile.event_names
    if turn.request.stream:
        parts, final, types = build_frames(plan, snapshot, ids, input_tokens=tokens,
                                           completed_at=completed, names=names)
        _usage(turn, final)
        if names:
            for part in parts:
                if type(part) is dict:
                    part["type"] = names.get(part["type"], part["type"])
        framed = Framed(parts)
        body = b"".join([*framed.frames, DONE_FRAME])
        raw = (framed.snapshot if framed.response is final else encode_json(final)).encode()
    else:
        final, types = build_final(plan, snapshot, ids, input_tokens=tokens,
                                   completed_at=completed)
        _usage(turn, final)
        body = raw = encode_json(final).encode()
    summary = Sent(types=tuple([names.get(t, t) for t in types]) if names else tuple(types),
                   numbers=tuple(range(len(types))), delays=None, output_ids=_output_ids(final))
    return body, raw, summary, final


def _output_ids(final: Json) -> tuple[str, ...]:
    """The ids ``summarize`` finds in a built stream's item events: each output item's id and
    call id, in order, once each (an item is added and done with the same ones)."""
    found: list[str] = []
    for item in final.get("output") or ():
        found += [v for k in ("id", "call_id")
                  if isinstance(v := item.get(k), str) and v not in found]
    return tuple(found)


def planned(engine: Engine, turn: Turn, events: list[Json], pacing: Pacing | None) -> Reply:
    """The planned reply of these events: its pacing, a literal body's frames."""
    if engine.speed != 1.0:  # carried even unpaced, for a slow fault
        pacing = replace(pacing or Pacing(), speed=engine.speed)
    step_reply = turn.step_reply
    reply = Reply(events=events, stream=turn.request.stream, pacing=pacing,
                  seed=turn.request.content_seed(engine.seed),
                  frames=step_reply.literal_frames(events)
                  if step_reply is not None and turn.literal and turn.request.stream
                  and not turn.socket else None,
                  built=None if turn.literal else events, socket=turn.socket,
                  profile=turn.profile)
    if engine.self_check and not turn.literal:
        self_check(reply.events, turn.profile)
    return reply


def issue(engine: Engine, turn: Turn, template: StreamTemplate, created: int, completed: int,
          owner: str | None) -> Reply:
    """A reply from the stream cache: the template's bytes under fresh ids."""
    body, final_raw, fresh, summary = template.issue(engine.ids, created, completed)
    entry = turn.entry
    entry.response_id, entry.response_status = fresh[0], template.status
    keep(engine, turn.selection, fresh[0], template.store,
         Stored(None, turn.request.input, turn.parent, raw=final_raw,
                context_tokens=turn.context_tokens, owner=owner, extensions=turn.extensions,
                input_json=turn.request.input_json), turn.local)
    return issued_reply(turn.request.stream, body, summary, turn.socket)


def remember(engine: Engine, key: Any, reply: Reply, final: Json, ids: RecordingIds,
             created: int, completed: int) -> tuple[Reply, bytes]:
    """Keep the bytes of a reply for the next request of the same content (when it came
    before: ``StreamCache.again``); the reply with those bytes (sent as they are) and its
    journal summary, and the final Response's JSON (encoded once: the store keeps the same
    bytes)."""
    final_raw: bytes | None = None
    if reply.socket:  # one text frame a line (JSON text holds no raw line break)
        body = b"\n".join(frame.data for frame in reply.wire())
    elif reply.stream and reply.frames is None and reply.body is None:  # keep the final JSON
        framed = Framed(reply.events)
        body = b"".join([*framed.frames, DONE_FRAME])
        if framed.response is final:
            final_raw = framed.snapshot.encode()
    else:
        body = reply.sse_body() if reply.stream else reply.json_body()
    reply = reply.issued(body, summarize(reply.events, None))
    if final_raw is None:
        final_raw = body if not reply.stream else encode_json(final).encode()
    if engine.cache.again(key):  # kept from a content's second reply on
        engine.cache.put(key, StreamTemplate(
            body=body,
            final=final_raw,
            prefixes=tuple(ids.prefixes),
            ids=tuple(ids.drawn),
            created=created,
            completed=completed if final.get("completed_at") is not None else None,
            summary=reply.summary,
            status=str(final.get("status")),
            store=bool(final.get("store", True)),
        ))
    return reply, final_raw


def keep(engine: Engine, selection: Selection | None, response_id: str, store: bool,
         stored: Stored, local: ResponseStore | None) -> None:
    """Remember a response: for ``step:N`` matching (a step some ``step:N`` names), and stored
    for continuations."""
    if selection is not None and selection.continued:
        set_of(engine, selection.scenario).answered(selection, response_id)
    if store:
        engine.responses.keep(response_id, stored)
    elif local is not None:
        local.keep(response_id, stored)
