"""``ormock demo``: catalogue scenarios through the official openai SDK, against a fresh server.

Each scenario gets a namespace of its own on one new server (``demo-NAME``); the SDK streams a
request to it (and, when the answer calls tools, sends their outputs back, as an agent loop
does), with its usual retries. For each scenario the command prints the timeline of every
request the server answered (``ormock.commands.timeline``), its faults and the checker's
findings, and what the client did: the text it got or the exception it raised, and the retries
it made. The inspector (``/_ormock/``) shows the same exchanges; ``--serve`` keeps the server
up until Ctrl-C, otherwise the command exits 0 when done. ``--json`` prints it all as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from typing import Any

__all__ = ["DEFAULT_SCENARIOS", "add_parser", "run"]

DEFAULT_SCENARIOS = ("text", "tool-roundtrip", "failed-midstream", "rate-limited-once",
                     "vendor-events", "broken-sequence")
_TURNS = 4  # tool rounds at most, per scenario


def add_parser(commands: Any) -> None:
    demo = commands.add_parser(
        "demo", help="run catalogue scenarios through the openai SDK and show what happened",
        description="Run scenarios of the catalogue through the official openai SDK against "
        "a fresh server, printing for each a timeline of its events and what the client did "
        "(the exception it raised, the retries it made), and the inspector's URL.")
    demo.add_argument("names", nargs="*", metavar="NAME",
                      help=f"catalogue scenarios (default: {' '.join(DEFAULT_SCENARIOS)})")
    demo.add_argument("--serve", action="store_true",
                      help="keep the server (and the inspector) up until Ctrl-C")
    demo.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    demo.add_argument("--port", type=int, default=None,
                      help="port (default: 8787 with --serve, any free one without)")
    demo.add_argument("--seed", type=int, default=0, help="the server's seed (default 0)")
    demo.add_argument("--json", action="store_true", help="print the results as JSON")
    demo.set_defaults(func=run)


def _client_run(base_url: str) -> dict[str, Any]:
    """Drive one scenario as an agent would: stream, send tool outputs back, stop at text."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="sk-" + "demo", max_retries=2,
                           timeout=10.0)
    turns, previous, text = 0, None, ""
    request: list[Any] | str = "Hello! What is the weather in Paris?"
    try:
        while turns < _TURNS:
            turns += 1
            final = None
            extra: dict[str, Any] = {"previous_response_id": previous} if previous else {}
            with client.responses.stream(model="ormock-1", input=request,
                                         **extra) as stream:
                for _ in stream:
                    pass
                final = stream.get_final_response()
            text, previous = final.output_text, final.id
            calls = [item for item in final.output if item.type == "function_call"]
            if not calls:
                break
            request = [{"type": "function_call_output", "call_id": call.call_id,
                        "output": json.dumps({"ok": True, "tool": call.name})}
                       for call in calls]
    except Exception as error:  # what the client raised is the result here
        return {"outcome": "raised", "turns": turns,
                "exception": f"{type(error).__module__}.{type(error).__name__}: {error}"}
    return {"outcome": "completed", "turns": turns, "output_text": text}


def _describe(name: str) -> str:
    from ormock.scenario import find_scenario

    return find_scenario(name).description or ""


def _one(server: Any, name: str) -> dict[str, Any]:
    from ormock.scenario import find_scenario
    from ormock.server.exchange import exchange

    namespace = f"demo-{name}"
    server.namespaces.open(namespace)
    engine = server.namespaces.get(namespace)
    engine.use(find_scenario(name))
    client = _client_run(f"{server.url}/{namespace}/v1")
    requests = [exchange(entry, engine.feed.frames_of(entry.id), server.url)
                for entry in list(engine.journal)]
    client["requests"] = len(requests)
    client["retries"] = max(len(requests) - client["turns"], 0)
    return {"name": name, "description": _describe(name), "namespace": namespace,
            "requests": requests, "client": client}


def _print(result: dict[str, Any]) -> None:
    from ormock.commands.timeline import format_timeline

    print(f"== {result['name']}: {result['description']}")
    for shown in result["requests"]:
        faults = f"  faults: {', '.join(shown['faults'])}" if shown["faults"] else ""
        print(f"  -- {shown['id']} {shown['method']} {shown['path']}  HTTP {shown['status']}  "
              f"{len(shown['timeline'])} events  {shown['ended']}{faults}")
        if shown["timeline"] or shown["struck"] or shown["findings"]:
            print(format_timeline(shown["timeline"], shown["struck"], shown["findings"],
                                  indent="     "))
        elif shown.get("error"):
            print(f"     error: {shown['error'].get('message')}")
    client = result["client"]
    did = (f"completed: {client['output_text'][:70]!r}" if client["outcome"] == "completed"
           else f"raised {client['exception'][:200]}")
    print(f"  client {did}; {client['requests']} request(s), {client['retries']} "
          f"retr{'y' if client['retries'] == 1 else 'ies'}")
    print()


def run(args: argparse.Namespace) -> int:
    from ormock.scenario import ScenarioError, catalogue
    from ormock.server.runner import OrmockServer

    names = args.names or list(DEFAULT_SCENARIOS)
    known = catalogue()
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"ormock demo: not in the catalogue: {', '.join(unknown)} (ormock scenarios "
              "lists it)", file=sys.stderr)
        return 2
    port = args.port if args.port is not None else (8787 if args.serve else 0)
    try:
        server = OrmockServer(args.host, port, seed=args.seed)
    except OSError as error:
        print(f"ormock demo: cannot listen on {args.host}:{port} ({error.strerror}); pick "
              "another --port", file=sys.stderr)
        return 2
    results = []
    with server:
        inspector = f"{server.url}/_ormock/"
        if not args.json:
            print(f"ormock demo: {len(names)} scenarios on {server.url}; inspector: "
                  f"{inspector}\n", flush=True)
        for number, name in enumerate(names, 1):
            if args.json:  # progress where it does not mix with the JSON
                print(f"ormock demo: [{number}/{len(names)}] {name}", file=sys.stderr,
                      flush=True)
            try:
                result = _one(server, name)
            except ScenarioError as error:
                print(f"ormock demo: {name}: {error}", file=sys.stderr)
                return 2
            results.append(result)
            if not args.json:
                _print(result)
                sys.stdout.flush()
        if args.json:
            print(json.dumps({"url": server.url, "inspector": inspector,
                              "scenarios": results}, indent=2, ensure_ascii=False))
        else:
            print(f"inspector: {inspector}")
        if args.serve:
            print(f"ormock demo: serving on {server.url} until Ctrl-C", file=sys.stderr,
                  flush=True)
            with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: the server stops
                threading.Event().wait()
    return 0
