"""Replaying cassettes over HTTP: any request under ``[/<namespace>]/v1/`` of a namespace that
has cassettes is answered from them first, whatever its method, path or body (a recorded 400 to
an invalid request replays too); so is any other path below such a namespace (a provider's path
kept as it was: ``/<namespace>/openai/v1/responses``), and an Azure path (``/openai/...``) of the
default namespace (``replay_candidates``).

The route is tried before every other one (a create, which no route of the router takes, asks
``claimed`` first: ``ormock.server.front``), and only claims a request when the namespace's
engine has cassettes, so a server without them pays one dictionary lookup (with a shared store, also
the read of the admin stamp, which serving the request then skips: a cassette loaded on another
worker routes here too). The answer is the recorded one, written by the one HTTP writer: the
status line after the recorded wait for the headers, then the body's writes as the upstream
split them, each after its recorded pause (divided by the server's ``--speed``; instant at 0),
ended the way the upstream ended it.

A namespace that records (``Engine.record_to``, the pytest plugin's ``--ormock-record``) is
claimed too, cassettes or not: what no interaction answers (everything, in the ``all`` and
``rewrite`` modes) is relayed to its upstream as it arrives (``ormock.server.relay.Relay``, the
relay of ``ormock record``) and the interaction handed to the engine (``Engine.recorded``).
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import URLPath
from starlette.routing import BaseRoute, Match, NoMatchFound

from ormock.cassette.matching import request_body
from ormock.engine.core import Engine
from ormock.engine.delivery import Delivery
from ormock.engine.namespaces import Namespaces
from ormock.engine.replays import Forward
from ormock.engine.writer import Tally, cut_short, left_during, send_wire
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.types import Receive, Scope, Send
from ormock.server.body import read_body, send_error
from ormock.server.relay import Relay, relayed_path

__all__ = ["REPLAYED", "ReplayRoute", "namespace_of", "replay_candidates"]

# set in the request's ``scope["state"]`` when a cassette answers it: what wraps the app
# (``profile_errors``) leaves the recorded bytes alone
REPLAYED = "ormock_replayed"


def replay_candidates(path: str) -> list[str]:
    """The namespaces a request to ``path`` may be a replay of, most specific first: the one
    of ``[/<namespace>]/v1/...``; the first segment's, for any other path below it (a client
    routed in process keeps its provider's path: ``/<namespace>/openai/v1/responses``,
    ``/<namespace>/openai/deployments/NAME/...``, ``/<namespace>/responses``); and the
    default namespace for an Azure path (``/openai/...``). Never the admin API's."""
    if path.startswith("/_ormock"):
        return []
    out = []
    named = namespace_of(path)
    if named is not None:
        out.append(named)
    head, slash, rest = path[1:].partition("/")
    if head and slash and head not in out and not rest.startswith("_ormock"):
        out.append(head)
    if path.startswith("/openai/") and "" not in out:
        out.append("")
    return out


def namespace_of(path: str) -> str | None:
    """The namespace of a ``[/<namespace>]/v1/...`` path (``""`` for none), or None for a path
    outside ``/v1``."""
    if path.startswith("/v1/") or path == "/v1":
        return ""
    head, slash, rest = path[1:].partition("/")
    if slash and (rest.startswith("v1/") or rest == "v1") and head:
        return head
    return None


class ReplayRoute(BaseRoute):
    def __init__(self, namespaces: Namespaces, max_body: int,
                 on_bug: Any) -> None:  # on_bug(scope, send, exc): the app's 500 answer
        self.namespaces = namespaces
        self.max_body = max_body
        self.on_bug = on_bug

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        for name in replay_candidates(scope.get("path", "")):
            claimed = self.claimed(name)
            if claimed is not None:
                return Match.FULL, {"path_params": {"namespace": claimed} if claimed else {}}
        return Match.NONE, {}

    def claimed(self, name: str, *, lazily: bool = False, found: Engine | None = None
                ) -> str | None:
        """The namespace whose cassettes answer a request to namespace ``name`` when this
        route claims it (``_claims``), else None."""
        if not self._claims(name, lazily=lazily, found=found):
            return None
        if name == "openai" and self._engine(name, lazily=True) is None:
            return ""  # no namespace of that name: the default's Azure path
        return name

    def _claims(self, name: str, *, lazily: bool = False, found: Engine | None = None) -> bool:
        """Whether a ``/v1`` request to namespace ``name`` is this route's: the namespace has
        cassettes or records (with a shared store, as the other processes left it; not
        pulled first when ``lazily``). ``found``: its engine as the caller found it
        (``Namespaces.find``), which is the one without a shared store."""
        engine = self._engine(name, lazily=lazily, found=found)
        if engine is None:  # ``/openai/v1/...``: the default namespace's Azure path
            if name == "openai":
                return self._claims("", lazily=lazily)
            return not name and bool(self.namespaces.settings.cassettes)
        return engine.replaying

    def _engine(self, name: str, *, lazily: bool = False, found: Engine | None = None
                ) -> Engine | None:
        """The engine of namespace ``name`` as routing sees it (with a shared store, as the
        other processes left it, unless ``lazily``); None when it is unknown or closed (the
        route that serves the request says so)."""
        namespaces = self.namespaces
        if namespaces.backend is None:
            return found if found is not None else namespaces.find(name)
        try:
            return namespaces.serve(name, lazily=lazily)
        except OpenResponsesError:
            return None

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        name = scope.get("path_params", {}).get("namespace", "")
        try:
            engine = self.namespaces.serve(name)
            raw = await read_body(receive, headers.get("content-length", ""), self.max_body)
            path = scope["path"][len(name) + 1:] if name else scope["path"]
            query = scope.get("query_string", b"").decode("latin-1")
            body = request_body(raw) if raw else None
            replayed, wire, entry = engine.replay(scope["method"], path, query, body, headers,
                                                  len(raw))
        except Forward as forward:
            try:
                target = relayed_path(scope, name)
            except OpenResponsesError as error:
                await send_error(send, error)
                return
            await self._forward(engine, forward, scope, raw, path, target, receive, send)
            return
        except OpenResponsesError as error:
            await send_error(send, error)
            return
        except Exception as exc:
            await self.on_bug(scope, send, exc)
            return
        scope.setdefault("state", {})[REPLAYED] = True
        delivery = Delivery(engine, entry, wire, stateful=False, flight=self.namespaces.in_flight)
        delivery.begin()
        written = None
        try:
            if replayed.headers_delay and await left_during(receive, replayed.headers_delay):
                written = Tally().written(wire.kind, "client gone")  # nothing went out
            else:
                written = await send_wire(delivery.watch(send), receive, wire, delivery.ahead)
        finally:
            delivery.over(written)

    async def _forward(self, engine: Engine, forward: Forward, scope: Scope, raw: bytes,
                       path: str, target: str, receive: Receive, send: Send) -> None:
        upstream = forward.upstream
        problems: list[str] = []
        relay = Relay(upstream.url, upstream_key=upstream.key, log=problems.append,
                      pooled=False, name="ormock (recording)")
        self.namespaces.in_flight.count += 1
        try:
            interaction = await relay.exchange(scope, raw, receive, send, path=path,
                                               target=target)
        except Exception as exc:
            engine.recorded(forward, None, f"the relay failed: {exc!r}")
            raise
        finally:
            self.namespaces.in_flight.count -= 1
        if not cut_short():  # the server stopping cut it: not relayed whole, nor a miss
            engine.recorded(forward, interaction, "; ".join(problems) or None)

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        raise NoMatchFound(name, path_params)
