"""``ormock verdict``: judge how a client coped with the faults (``ormock.engine.verdict``),
from a journal file or a running server's ``/_ormock/verdict``; exit 1 on findings."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    from ormock.engine.verdict import judge, rules_from

    rules = {name: str(value) for name, value in (
        ("min_backoff", args.min_backoff), ("storm_retries", args.storm_retries),
        ("stall_timeout", args.stall_timeout), ("per_attempt", args.per_attempt))
        if value is not None}
    allow = [c.strip() for a in args.allow for c in a.split(",") if c.strip()]
    if (args.journal is None) == (args.url is None):
        print("ormock verdict: give a journal file (saved from GET /_ormock/journal) or --url "
              "of a running server", file=sys.stderr)
        return 2
    if args.url is not None:
        import httpx

        base = args.url.rstrip("/").removesuffix("/v1")
        if args.namespace:
            base += "/" + args.namespace.strip("/")
        try:
            answer = httpx.get(base + "/_ormock/verdict",
                               params=[("allow", ",".join(allow)), *rules.items()], timeout=30)
            data = answer.json()
        except (httpx.HTTPError, ValueError) as error:
            print(f"ormock verdict: cannot read {base}/_ormock/verdict ({error})",
                  file=sys.stderr)
            return 2
        if answer.status_code != 200:
            message = data.get("error", {}).get("message") if isinstance(data, dict) else data
            print(f"ormock verdict: {message}", file=sys.stderr)
            return 2
        print(json.dumps(data, indent=2) if args.json else data["report"])
        return 0 if data["ok"] else 1
    try:
        with (sys.stdin if args.journal == "-" else open(args.journal, encoding="utf-8")) as f:
            journal = json.load(f)
        found = judge(journal, allow=allow, rules=rules_from(rules))
    except OSError as error:
        print(f"ormock verdict: cannot read {args.journal} ({error.strerror})", file=sys.stderr)
        return 2
    except ValueError as error:  # bad JSON, a bad rule or code
        print(f"ormock verdict: {args.journal}: {error}", file=sys.stderr)
        return 2
    print(json.dumps(found.to_dict(), indent=2) if args.json else str(found))
    return 0 if found.ok else 1


def add_parser(commands: Any) -> None:
    verdict = commands.add_parser(
        "verdict", help="judge how a client coped with the faults, from a journal",
        description="Judge a client from the journal: retries of non-retryable errors, "
        "ignored retry-after, no backoff, retry storms, giving up too early, building on "
        "broken or failed streams, stalled streams never timed out. Exits 1 on findings.",
    )
    verdict.add_argument("journal", nargs="?", default=None,
                         help="a journal saved from GET /_ormock/journal (JSON; - for stdin)")
    verdict.add_argument("--url", default=None,
                         help="a running server instead, e.g. http://127.0.0.1:8787")
    verdict.add_argument("--namespace", default=None, help="with --url: the namespace to judge")
    verdict.add_argument("--allow", action="append", default=[], metavar="CODE",
                         help="a finding code to allow (repeatable, or comma-separated)")
    verdict.add_argument("--min-backoff", type=float, default=None, metavar="SECONDS",
                         help="a retry sooner than this after a failure has no backoff "
                         "(default 0.05)")
    verdict.add_argument("--storm-retries", type=int, default=None, metavar="N",
                         help="more retries of one request than this is a storm (default 5)")
    verdict.add_argument("--stall-timeout", type=float, default=None, metavar="SECONDS",
                         help="a stalled stream held open longer than this was never timed "
                         "out (default 30)")
    verdict.add_argument("--per-attempt", default=None, metavar="FIELD,FIELD",
                         help="body fields a client may change between attempts of one "
                         "request, left out when recognising a retry (default "
                         "client_metadata,prompt_cache_key; '' for none)")
    verdict.add_argument("--json", action="store_true", help="print the verdict as JSON")
    verdict.set_defaults(func=run)
