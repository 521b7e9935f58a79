"""The admin API under ``/_ormock/`` (and ``/<namespace>/_ormock/``), for clients in any language.

- ``POST /_ormock/scenarios``: load a scenario (YAML or JSON body); answers its name and steps.
- ``GET /_ormock/scenarios``: the loaded scenarios, with how often each step was used.
- ``DELETE /_ormock/scenarios/{name}``: unload one.
- ``GET /_ormock/catalogue``: the built-in scenarios, one line each.
- ``POST /_ormock/cassettes`` (an ormock cassette's YAML or JSON; ``?ignore=metadata,user``,
  ``?order=recorded`` or ``repeat``, ``?file=NAME`` the name reports give it): replay it
  before anything else; ``GET``: each cassette and which of its interactions were played, how
  often; ``DELETE``: stop replaying them all.
- ``POST /_ormock/reset``: forget responses, journal and counters (``?scenarios=true`` also
  unloads scenarios and faults).
- ``GET /_ormock/journal``: every request (its ``id``, ``namespace``), secrets masked (headers,
  and key-shaped or secret-named values in the body), what answered it and what went back;
  ``GET /_ormock/journal/{id}`` one exchange in full (``ormock.server.inspector``).
- ``GET /_ormock/verdict``: how the client coped with the faults (``ormock.engine.verdict``);
  ``?allow=code,...`` and the rules' thresholds (``?stall_timeout=5``) as query parameters.
- ``GET /_ormock/checks``: the facts of the pytest plugin's after-test checks
  (``ormock.engine.leftovers``: steps and recorded interactions never used, replies the client
  could not be sent, errors inside the server).
- ``POST /_ormock/namespaces`` (``{"name": NAME}``, optionally with the namespace's own
  ``seed``, ``speed``, ``profile`` and ``replay_speed``), ``GET``, ``DELETE .../{name}``.
- ``POST /_ormock/faults`` (a fault spec or a list, YAML or JSON), ``GET``, ``DELETE``: faults
  applied to every reply; ``PUT /_ormock/chaos`` (``rate=0.2,seed=7,faults=...``): seeded chaos.

Only clients on loopback may use it, unless the server was started with ``--admin-host``; and
no web page may (``refusal``, the one check of every route here): the ``Host`` must be a loopback
name, an ``--admin-host`` or the server's own address and port (no DNS rebinding), an ``Origin``
must be the server's own, and a change (any method but GET and HEAD) must have a JSON or YAML
``Content-Type`` or, without a body, ``X-Ormock-Admin: 1`` (no cross-site form or ``text/plain``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ormock.cassette.fileformat import parse_cassette
from ormock.cassette.matching import order_of
from ormock.engine.core import Engine
from ormock.engine.leftovers import leftovers
from ormock.engine.limits import Limits
from ormock.engine.namespaces import NAMESPACE_SETTINGS, Namespaces, check_name
from ormock.engine.verdict import judge, rules_from
from ormock.faults import parse_fault
from ormock.faults.chaos import Chaos
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.sse import encode_json
from ormock.scenario import ScenarioError, catalogue, load_scenario
from ormock.scenario.catalogue import load_file
from ormock.scenario.source import bound_data, safe_document
from ormock.server.asgi import Message
from ormock.server.body import DEFAULT_MAX_BODY, decode_json, read_body
from ormock.server.exchange import summary
from ormock.server.guard import refusal
from ormock.server.perimeter import address

__all__ = ["admin_routes"]

Endpoint = Callable[[Request], Coroutine[Any, Any, Response]]


def _json(value: Any, status: int = 200) -> Response:
    return Response(encode_json(value), status_code=status, media_type="application/json")


def _decode_json(raw: str) -> Any:
    """A JSON body, or a 400 ``invalid_json`` (``ormock.server.body.decode_json``), held to the
    bounds of scenario documents (``bound_data``: a ``ScenarioError`` past them)."""
    data = decode_json(raw)
    bound_data(data, "body")
    return data


def _error(error: OpenResponsesError) -> Response:
    return _json(error.envelope(), error.status)


def _describe(engine: Engine) -> list[dict[str, Any]]:
    out = []
    for scenario in engine.scenarios.scenarios:
        out.append({
            "name": scenario.name,
            "description": scenario.description,
            "source": scenario.source,
            "strict": scenario.strict,
            "order": scenario.order,
            "steps": [
                {"index": s.index, "name": s.name,
                 "times": "forever" if s.times is None else s.times,
                 "used": engine.scenarios.used(scenario, s)}
                for s in scenario.steps
            ],
        })
    return out


def _full(kept: int, adding: int, most: int, what: str, limit: str, free: str
          ) -> OpenResponsesError | None:
    """The 400 of a load that would leave a namespace more than ``most`` ``what`` (the limit
    ``limit``), saying how to make room; None when there is room."""
    if kept + adding <= most:
        return None
    return OpenResponsesError(
        f"A namespace holds at most {most:,} {what} loaded through the admin API and has "
        f"{kept:,}: nothing was loaded. To make room, {free}; or start the server with a "
        f"larger {Limits.option(limit)}.", code=f"too_many_{what}", param="body")


async def _bounded(request: Request, limit: int) -> Request:
    """The request again, its body read with the server's size limit (413 past it)."""
    raw = await read_body(request.receive, request.headers.get("content-length", ""), limit)
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await request.receive()
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return Request(request.scope, replay)


def admin_routes(namespaces: Namespaces, admin_hosts: frozenset[str] = frozenset(),
                 max_body: int = DEFAULT_MAX_BODY) -> list[Route]:
    hosts = frozenset(address(h) for h in admin_hosts)

    def guarded(handler: Callable[[Request, Engine], Coroutine[Any, Any, Response]]) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            refused = refusal(request, hosts)
            if refused is not None:
                return _error(refused)
            try:
                engine = namespaces.serve(request.path_params.get("namespace", ""))
                engine.pull()  # what another worker changed (a shared store)
                return await handler(await _bounded(request, max_body), engine)
            except OpenResponsesError as error:
                return _error(error)

        return endpoint

    async def load(request: Request, engine: Engine) -> Response:
        raw = (await request.body()).decode("utf-8", "replace")
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        try:
            if kind == "application/json":
                data = _decode_json(raw)
                scenario = load_scenario(data if isinstance(data, dict) else {"steps": data})
            else:
                scenario = load_scenario(raw if "\n" in raw else raw + "\n")
            new = 0 if engine.scenarios.get(scenario.name) is not None else 1  # or it replaces
            full = _full(len(engine.scenarios.scenarios), new, engine.limits.loaded_scenarios,
                         "scenarios", "loaded_scenarios",
                         "unload one (DELETE /_ormock/scenarios/NAME), load it under a name "
                         "already loaded, or reset with ?scenarios=true")
            if full is not None:
                return _error(full)
            engine.use(scenario)
        except ValueError as error:  # ScenarioError too
            return _error(OpenResponsesError(f"The scenario was not loaded: {error}",
                                             code="invalid_scenario", param="body"))
        return _json({"name": scenario.name, "steps": len(scenario.steps)}, 201)

    async def listing(request: Request, engine: Engine) -> Response:
        return _json({"object": "list", "data": _describe(engine)})

    async def unload(request: Request, engine: Engine) -> Response:
        name = request.path_params["name"]
        if not engine.unload(name):
            return _error(OpenResponsesError(f"No loaded scenario named {name!r}.",
                                             type="not_found", code="unknown_scenario",
                                             param="name"))
        return _json({"name": name, "deleted": True})

    async def load_cassette(request: Request, engine: Engine) -> Response:
        raw = (await request.body()).decode("utf-8", "replace")
        ignore = [p for p in request.query_params.get("ignore", "").split(",") if p]
        asked = request.query_params.get("order", "any")
        try:  # ``?file=``: the name its reports and journal entries give it
            cassette = parse_cassette(raw, request.query_params.get("file") or "<admin body>")
        except ValueError as error:  # CassetteError too
            return _error(OpenResponsesError(
                f"The cassette was not loaded: {error}. The body is an ormock cassette's YAML "
                "or JSON; a vcrpy cassette is loaded with `ormock serve --cassette FILE` or "
                "converted with `ormock cassette import FILE`.",
                code="invalid_cassette", param="body"))
        try:
            order = order_of(asked)
        except ValueError as error:
            return _error(OpenResponsesError(f"{error}.", code="invalid_order", param="order"))
        full = _full(len(engine.replays.players), 1, engine.limits.loaded_cassettes,
                     "cassettes", "loaded_cassettes", "drop them (DELETE /_ormock/cassettes)")
        if full is not None:
            return _error(full)
        engine.use_cassette(cassette, ignore=ignore, order=order)
        return _json({"interactions": len(cassette.interactions), "order": order,
                      "ignore": ignore}, 201)

    async def list_cassettes(request: Request, engine: Engine) -> Response:
        return _json({"object": "list", "data": engine.replays.summary()})

    async def drop_cassettes(request: Request, engine: Engine) -> Response:
        count = len(engine.replays.players)
        engine.drop_cassettes()
        return _json({"deleted": count})

    async def builtin(request: Request, engine: Engine) -> Response:
        data = []
        for name, path in catalogue().items():
            try:
                description = load_file(path).description
            except ScenarioError as error:
                description = f"(does not load: {error})"
            data.append({"name": name, "description": description})
        return _json({"object": "list", "data": data})

    async def reset(request: Request, engine: Engine) -> Response:
        everything = request.query_params.get("scenarios", "").lower() in ("1", "true", "yes")
        engine.reset(scenarios=everything)
        return _json({"reset": True, "scenarios_unloaded": everything})

    async def _spec(request: Request) -> Any:
        raw = (await request.body()).decode("utf-8", "replace")
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        return _decode_json(raw) if kind == "application/json" else safe_document(raw, "body")

    async def add_faults(request: Request, engine: Engine) -> Response:
        try:
            spec = await _spec(request)
            specs = spec if isinstance(spec, list) else [spec]
            faults = [parse_fault(s, f"faults[{i}]") for i, s in enumerate(specs)]
        except ValueError as error:  # ScenarioError too
            return _error(OpenResponsesError(f"The fault was not added: {error}",
                                             code="invalid_fault", param="body"))
        full = _full(len(engine.faults), len(faults), engine.limits.loaded_faults, "faults",
                     "loaded_faults", "clear them (DELETE /_ormock/faults)")
        if full is not None:
            return _error(full)
        for fault in faults:
            engine.inject(fault)
        return _json({"faults": [f.to_spec() for f in engine.faults]}, 201)

    async def list_faults(request: Request, engine: Engine) -> Response:
        chaos = str(engine.chaos) if engine.chaos is not None else None
        return _json({"faults": [f.to_spec() for f in engine.faults], "chaos": chaos})

    async def clear_faults(request: Request, engine: Engine) -> Response:
        engine.clear_faults()
        return _json({"faults": [], "chaos": None})

    async def set_chaos(request: Request, engine: Engine) -> Response:
        try:
            spec = await _spec(request)
            if isinstance(spec, dict):
                engine.set_chaos(Chaos.from_mapping(spec))
            elif isinstance(spec, str):
                engine.set_chaos(Chaos.parse(spec))
            else:  # never str() a parsed document: a list of aliases can be gigabytes
                kind = {list: "a list", int: "a number", float: "a number", bool: "a boolean",
                        type(None): "an empty body"}.get(type(spec), type(spec).__name__)
                raise ValueError("chaos is a mapping {rate, seed, faults} or a string such as "
                                 f"rate=0.2,seed=7,faults=http_error:429|disconnect, not {kind}")
        except ValueError as error:  # ScenarioError too
            return _error(OpenResponsesError(f"Chaos was not set: {error}",
                                             code="invalid_chaos", param="body"))
        return _json({"chaos": str(engine.chaos)}, 201)

    async def journal(request: Request, engine: Engine) -> Response:
        # as the inspector shows them: secrets in the bodies masked too (``exchange.summary``)
        return _json({"object": "list", "data": [summary(e) for e in engine.journal_view()]})

    async def verdict(request: Request, engine: Engine) -> Response:
        query = request.query_params
        allow = [c.strip() for v in query.getlist("allow") for c in v.split(",") if c.strip()]
        try:
            rules = rules_from({k: v for k, v in query.items() if k != "allow"})
            found = judge(engine.journal_view(), now=engine.elapsed(), allow=allow,
                          rules=rules)
        except ValueError as error:
            return _error(OpenResponsesError(f"No verdict: {error}", code="invalid_verdict",
                                             param="query"))
        return _json(found.to_dict())

    async def checks(request: Request, engine: Engine) -> Response:
        return _json(leftovers(engine))

    async def open_namespace(request: Request, engine: Engine) -> Response:
        try:
            data = _decode_json((await request.body()).decode("utf-8", "replace"))
        except ValueError as error:
            return _error(OpenResponsesError(f"The body is not JSON ({error}); send "
                                             '{"name": "NAME"}.', code="invalid_json",
                                             param="body"))
        name = data.get("name") if isinstance(data, dict) else None
        if not isinstance(name, str):
            return _error(OpenResponsesError('Send {"name": "NAME"}: the namespace to open.',
                                             code="missing_required_parameter", param="name"))
        own = {k: v for k, v in data.items() if k != "name"}
        try:  # "" is the default namespace's, always open: no name to open
            namespaces.open(check_name(name), own)
        except OpenResponsesError as error:
            return _error(error)
        if own:
            return _json({"name": name, "path": f"/{name}/v1",
                          **{k: own[k] for k in NAMESPACE_SETTINGS if k in own}}, 201)
        return _json({"name": name, "path": f"/{name}/v1"}, 201)

    async def list_namespaces(request: Request, engine: Engine) -> Response:
        return _json({"object": "list", "data": namespaces.opened(), "limit": namespaces.limit})

    async def drop_namespace(request: Request, engine: Engine) -> Response:
        name = request.path_params["name"]
        if name not in namespaces.opened():
            return _error(OpenResponsesError("No open namespace of that name.", type="not_found",
                                             code="unknown_namespace", param="name"))
        namespaces.drop(name)
        return _json({"name": name, "deleted": True})

    routes = [
        Route("/_ormock/namespaces", guarded(open_namespace), methods=["POST"]),
        Route("/_ormock/namespaces", guarded(list_namespaces), methods=["GET"]),
        Route("/_ormock/namespaces/{name}", guarded(drop_namespace), methods=["DELETE"]),
    ]
    for prefix in ("", "/{namespace:str}"):
        base = prefix + "/_ormock"
        routes += [
            Route(base + "/scenarios", guarded(load), methods=["POST"]),
            Route(base + "/scenarios", guarded(listing), methods=["GET"]),
            Route(base + "/scenarios/{name}", guarded(unload), methods=["DELETE"]),
            Route(base + "/catalogue", guarded(builtin), methods=["GET"]),
            Route(base + "/cassettes", guarded(load_cassette), methods=["POST"]),
            Route(base + "/cassettes", guarded(list_cassettes), methods=["GET"]),
            Route(base + "/cassettes", guarded(drop_cassettes), methods=["DELETE"]),
            Route(base + "/reset", guarded(reset), methods=["POST"]),
            Route(base + "/journal", guarded(journal), methods=["GET"]),
            Route(base + "/verdict", guarded(verdict), methods=["GET"]),
            Route(base + "/checks", guarded(checks), methods=["GET"]),
            Route(base + "/faults", guarded(add_faults), methods=["POST"]),
            Route(base + "/faults", guarded(list_faults), methods=["GET"]),
            Route(base + "/faults", guarded(clear_faults), methods=["DELETE"]),
            Route(base + "/chaos", guarded(set_chaos), methods=["PUT"]),
        ]
    return routes
