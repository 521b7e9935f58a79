"""``ormock serve``: a fake Open Responses server (``ormock.server.runner.OrmockServer``) on
127.0.0.1:8787, with scenarios, cassettes, chaos, a profile, limits and plugins from the
command line."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from dataclasses import fields
from typing import Any

import ormock.plugins  # noqa: F401  (registers the real providers' profiles)
from ormock.cassette.matching import ORDERS
from ormock.engine.limits import Limits
from ormock.engine.store import StoreError, check_store
from ormock.engine.store.base import shown
from ormock.protocol.profile import OPENAI, OPENRESPONSES, PLATFORM, get_profile, profile_names

__all__ = ["add_allowed_host", "add_parser", "limit_options", "run"]


def run(args: argparse.Namespace) -> int:
    from ormock.commands.collector import tune_for_serving
    from ormock.commands.workers import Workers, refusal
    from ormock.plugins import PluginError, load_entry_points, load_plugins
    from ormock.scenario import ScenarioError
    from ormock.server.relay import log_stderr
    from ormock.server.runner import OrmockServer

    try:
        limits = Limits(**{f.name: getattr(args, f.name) for f in fields(Limits)})
    except ValueError as error:
        print(f"ormock: {error}", file=sys.stderr)
        return 2
    try:
        check_store(args.store)
    except ValueError as error:
        print(f"ormock: --store: {error}", file=sys.stderr)
        return 2
    try:  # plugins load first: a profile, a chaos spec or a scenario may name what they register
        load_entry_points()
        load_plugins(args.plugin)
        get_profile(args.profile)  # a plugin's profile is one of the names from here on
    except PluginError as error:
        print(f"ormock: --plugin: {error}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"ormock: --profile: {error}", file=sys.stderr)
        return 2
    refused = refusal(args.workers, args.store)
    if refused is not None:
        print(f"ormock: {refused}", file=sys.stderr)
        return 2
    try:
        cassettes = _cassettes(args)
    except ValueError as error:
        print(f"ormock: {error}", file=sys.stderr)
        return 2
    own = cassettes if not args.cassette_namespaces else []
    options: dict[str, Any] = dict(
        seed=args.seed, clock=args.clock, self_check=args.self_check, speed=args.speed,
        scenarios=args.scenario, scenario_dirs=args.scenario_dir, api_key=args.api_key,
        limits=limits, admin_hosts=args.admin_host, allowed_hosts=args.allowed_host,
        chaos=args.chaos or None,
        profile=args.profile, plugins=args.plugin, cassettes=own,
        cassette_ignore=args.cassette_ignore, cassette_order=args.cassette_order,
        store=args.store)
    server: OrmockServer | Workers
    try:
        if args.workers > 1:
            server = Workers(args.host, args.port, args.workers, options,
                             log_level=args.log_level, access_log=args.access_log)
        else:
            server = OrmockServer(args.host, args.port, log_level=args.log_level,
                                  access_log=args.access_log, say=log_stderr, **options)
    except PluginError as error:
        print(f"ormock: --plugin: {error}", file=sys.stderr)
        return 2
    except ScenarioError as error:
        print(f"ormock: {error}", file=sys.stderr)
        return 2
    except ValueError as error:  # a chaos spec that does not parse
        print(f"ormock: {'--chaos: ' if args.chaos else ''}{error}", file=sys.stderr)
        return 2
    except sqlite3.Error as error:  # the store's file cannot be opened
        print(f"ormock: --store {args.store}: {error}", file=sys.stderr)
        return 2
    except StoreError as error:  # a Redis nobody answers at, the redis package missing
        print(f"ormock: --store: {error}", file=sys.stderr)
        return 2
    except (OSError, OverflowError) as error:  # the address is taken, or not this machine's
        print(f"ormock: cannot listen on {args.host}:{args.port} ({error})", file=sys.stderr)
        return 3
    loaded = f"; scenarios: {', '.join(args.scenario)}" if args.scenario else ""
    notes = []
    if args.cassette_namespaces and isinstance(server, OrmockServer):
        for name, cassette in _by_name(cassettes):
            server.namespaces.open(name)
            server.namespaces.get(name).use_cassette(cassette)
            notes.append(f"ormock: {cassette.file} on {server.url}/{name}/v1")
        loaded += f"; {len(notes)} cassettes, a namespace each"
    elif args.cassette:
        settings = server.settings if isinstance(server, Workers) else server.namespaces.settings
        count = len(settings.cassettes)
        loaded += f"; replaying {count} cassette{'s' if count != 1 else ''}"
    if args.workers > 1:
        loaded += f"; {args.workers} workers on --store {shown(args.store)}"
    print(f"ormock serving Open Responses on {server.base_url} "
          f"(seed {args.seed}{loaded}; Ctrl-C stops)", file=sys.stderr, flush=True)
    for note in notes:
        print(note, file=sys.stderr, flush=True)
    if args.json:  # one line for a script that started it (with --port 0, the port it got)
        print(json.dumps({"base_url": server.base_url, "seed": args.seed,
                          "workers": args.workers, "scenarios": args.scenario,
                          "cassettes": args.cassette}), flush=True)
    tune_for_serving()  # this process only serves from here on (workers tune their own)
    try:
        server.serve_forever()
    except KeyboardInterrupt:  # Ctrl-C: uvicorn re-raises it once stopped
        return 0
    except RuntimeError as error:
        print(f"ormock: {error}", file=sys.stderr)
        return 3
    return 0


_LIMIT_HELP = {
    "max_body": "largest request body in bytes; larger gets 413",
    "max_header_bytes": "largest request headers in bytes, names and values together (HTTP, "
                        "WebSocket upgrade, admin API); more gets 431",
    "journal_entries": "requests each namespace's journal keeps",
    "journal_bytes": "request bytes each journal keeps",
    "store_responses": "stored responses each namespace keeps",
    "store_bytes": "bytes of stored responses each namespace keeps",
    "store_seconds": "seconds a stored response is kept after its last write (OpenAI: 30 days)",
    "namespaces": "namespaces open at once",
    "socket_responses": "store: false responses a WebSocket connection keeps",
    "socket_bytes": "bytes of those",
    "socket_seconds": "seconds a WebSocket connection lasts before the server closes it "
                      "(websocket_connection_limit_reached)",
    "errors": "tracebacks of failures inside the server kept",
    "error_bytes": "bytes of those",
    "loaded_scenarios": "scenarios the admin API loads into a namespace (past it: 400)",
    "loaded_faults": "faults the admin API adds to a namespace (past it: 400)",
    "loaded_cassettes": "cassettes the admin API loads into a namespace (past it: 400)",
}


def limit_options(parser: argparse.ArgumentParser) -> None:
    """A flag per ``Limits`` field (``--journal-bytes``), defaulting to its value."""
    group = parser.add_argument_group("limits (what the server keeps at most; oldest go first)")
    for field in fields(Limits):
        default = getattr(Limits(), field.name)
        if Limits.seconds(field.name):
            group.add_argument(Limits.option(field.name), type=float, default=default,
                               metavar="SECONDS",
                               help=f"{_LIMIT_HELP[field.name]} (default {default:,g})")
            continue
        group.add_argument(Limits.option(field.name), type=int, default=default,
                           metavar="N", help=f"{_LIMIT_HELP[field.name]} (default {default:,})")


def add_allowed_host(parser: argparse.ArgumentParser) -> None:
    """``--allowed-host NAME``: a name the server answers to besides loopback names and
    addresses (``ormock.server.perimeter``), for ``serve`` and ``record`` alike."""
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                        help="answer requests addressed to this name too (a Host or a web "
                        "page's Origin); loopback names and IP addresses always are, any "
                        "other name is refused (DNS rebinding, other sites' pages)")


def add_parser(commands: Any) -> None:
    serve = commands.add_parser("serve", help="start a fake Open Responses server")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default 127.0.0.1: loopback only)")
    serve.add_argument("--port", type=int, default=8787, help="port (default 8787)")
    serve.add_argument("--seed", type=int, default=0, help="seed for ids, text and chaos")
    serve.add_argument("--scenario", action="append", default=[], metavar="PATH_OR_NAME",
                       help="load a scenario (a file, or a catalogue name); repeatable")
    serve.add_argument("--scenario-dir", action="append", default=[], metavar="DIR",
                       help="a folder where scenario names are looked up; repeatable")
    serve.add_argument("--cassette", action="append", default=[], metavar="PATH",
                       help="replay a cassette (ormock's or vcrpy's), or every one in a folder, "
                            "before anything else (repeatable)")
    serve.add_argument("--cassette-ignore", action="append", default=[], metavar="JSON.PATH",
                       help="leave this JSON path out when matching a request to a recorded "
                            "one, e.g. metadata or input[*].output (repeatable)")
    serve.add_argument("--cassette-order", choices=tuple(ORDERS), default="any",
                       help="; ".join(f"{name}: {means}" for name, means in ORDERS.items())
                       + " (default any)")
    serve.add_argument("--cassette-match", choices=("exact", "lenient"), default="exact",
                       help="exact: bodies compared as recorded (default); lenient: null, "
                            "empty and absent alike")
    serve.add_argument("--cassette-namespaces", action="store_true",
                       help="each cassette in a namespace of its own, named by its file "
                            "(http://HOST:PORT/<name>/v1), instead of one pool")
    serve.add_argument("--vcr-serializer", default=None, metavar="MODULE:NAME",
                       help="a project's own vcrpy serializer, which reads every --cassette")
    serve.add_argument("--plugin", action="append", default=[], metavar="MODULE_OR_FILE",
                       help="load an ormock plugin (a module or .py file with "
                       "register(registry)); repeatable")
    serve.add_argument("--speed", type=float, default=1.0,
                       help="divide every scripted or recorded delay by this (0: no delays)")
    serve.add_argument("--chaos", default=None, metavar="SPEC",
                       help="seeded random faults, e.g. "
                       "'rate=0.2,seed=7,faults=http_error:429|fail_midstream|disconnect'")
    serve.add_argument("--profile", default="openresponses", metavar="NAME",
                       help="the provider played: openresponses (the official schema, "
                       "default), openai (OpenAI's spellings: response.reasoning_text.*, the "
                       "json_schema format echoed), platform (seed 002's stateful subset), "
                       "a real provider (" + ", ".join(_providers()) + ", docs/profiles.md), "
                       "or one a --plugin registers")
    serve.add_argument("--store", default="memory", metavar="memory|sqlite:PATH|redis://...",
                       help="where stored responses live: memory (default; gone when the "
                       "server stops), sqlite:PATH (one file, kept across restarts) or "
                       "redis://HOST:PORT/DB, rediss://..., unix:///PATH.sock?db=N (shared "
                       "by every worker and replica on it; pip install 'ormock[redis]')")
    serve.add_argument("--workers", type=int, default=1, metavar="N",
                       help="worker processes on the one port (default 1); more than 1 needs a "
                       "store they share: --store sqlite:PATH or redis://...")
    serve.add_argument("--clock", choices=("seeded", "real"), default="seeded",
                       help="timestamps: seeded (deterministic, default) or real")
    serve.add_argument("--api-key", default=None,
                       help="accept only 'Authorization: Bearer KEY' (default: any key)")
    limit_options(serve)
    serve.add_argument("--admin-host", action="append", default=[], metavar="ADDRESS",
                       help="allow the admin API (/_ormock/) from this client address too")
    add_allowed_host(serve)
    serve.add_argument("--self-check", action="store_true",
                       help="check every planned stream against the protocol and the official "
                       "schema before sending it (slower; a violation answers 500)")
    serve.add_argument("--log-level", default="warning")
    serve.add_argument("--access-log", action="store_true", help="log every request")
    serve.add_argument("--json", action="store_true",
                       help="once listening, print one JSON line on stdout: base_url, seed, "
                       "workers, scenarios, cassettes")
    serve.set_defaults(func=run)



def _providers() -> list[str]:
    """The registered profiles beyond the three built-in values: the real providers' (and an
    installed plugin's)."""
    builtin = {p.name for p in (OPENRESPONSES, OPENAI, PLATFORM)}
    return [name for name in profile_names() if name not in builtin]


def _cassettes(args: argparse.Namespace) -> list[Any]:
    """The ``--cassette`` paths as the server takes them: the paths themselves, or (with
    ``--vcr-serializer``, ``--cassette-match lenient`` or ``--cassette-namespaces``) the
    cassettes read here. A file of a folder that cannot be read is named on stderr and left
    out; ``ValueError`` for what stops the start."""
    import warnings
    from dataclasses import replace

    from ormock.cassette.fileformat import CassetteError
    from ormock.cassette.vcr import serializer_from
    from ormock.engine.replays import CassetteSkipped, cassettes_in

    special = (args.vcr_serializer or args.cassette_match != "exact"
               or args.cassette_namespaces)
    if not args.cassette or (not special and args.workers > 1):
        return list(args.cassette)
    if special and args.workers > 1:
        raise ValueError("--vcr-serializer, --cassette-match lenient and --cassette-namespaces "
                         "are for one process: drop --workers")
    serializer = serializer_from(args.vcr_serializer) if args.vcr_serializer else None
    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CassetteSkipped)
        try:
            for path in args.cassette:
                out += cassettes_in(path, serializer)
        except CassetteError as error:
            raise ValueError(str(error)) from None
    for warning in caught:
        print(f"ormock: --cassette: {warning.message}", file=sys.stderr)
    if args.cassette_match == "lenient":
        out = [replace(cassette, match_lenient=True) for cassette in out]
    return out


def _by_name(cassettes: list[Any]) -> list[tuple[str, Any]]:
    """Each cassette with its namespace: its file's name made URL-safe (``-2``, ``-3`` for a
    name taken)."""
    import re
    from pathlib import Path

    taken: set[str] = set()
    out = []
    for cassette in cassettes:
        base = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(cassette.file or "cassette").stem)
        base = base.strip("-.") or "cassette"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        out.append((name, cassette))
    return out
