"""``ormock probe``: its arguments, and the command that runs the battery (``ormock.probe``) and
reports."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from ormock.probe.battery import MAX_TOKENS
from ormock.probe.drive import DEFAULT_MODEL, Unreachable, base_url, run_probe

__all__ = ["DEFAULT_KEY_ENV", "add_parser", "run"]

DEFAULT_KEY_ENV = "OPENAI_API_KEY"


def run(args: argparse.Namespace) -> int:
    try:
        base_url(args.upstream)
    except ValueError as error:
        print(f"ormock probe: {error}", file=sys.stderr)
        return 2
    if args.timeout <= 0:
        print("ormock probe: --timeout is a number of seconds above 0", file=sys.stderr)
        return 2
    key = os.environ.get(args.key_env) or None
    try:
        run = asyncio.run(run_probe(args.upstream, model=args.model, key=key,
                                    profile=args.profile, timeout=args.timeout,
                                    cassette=args.cassette, progress=sys.stderr))
    except Unreachable as error:
        print(f"ormock probe: {error}; is the URL right and the server up?", file=sys.stderr)
        return 2
    print(json.dumps(run.to_dict(), indent=2) if args.json else run.table())
    if run.cassette_error is not None:
        print(f"ormock probe: the cassette was not written: {run.cassette_error}",
              file=sys.stderr)
        return 2
    return 0 if run.ok else 1


def add_parser(commands: Any) -> None:
    """Register ``ormock probe`` on the subparsers of the ``ormock`` command."""
    probe = commands.add_parser(
        "probe", help="hold a live provider to the protocol with a fixed battery, recorded",
        description="Send a fixed battery of requests to a live Responses API (plain text, "
        "streamed text, a tool call and its round trip, previous_response_id, a forced tool, "
        f"max_output_tokens {MAX_TOKENS}, an invalid request), record every exchange as a "
        "cassette, and report each rule the provider broke. Exits 1 when a MUST is broken, "
        "2 when the upstream cannot be reached or the cassette cannot be written.")
    probe.add_argument("--upstream", required=True, metavar="URL",
                       help="the provider's base URL, with or without /v1 "
                       "(https://api.openai.com)")
    probe.add_argument("--model", default=DEFAULT_MODEL,
                       help=f"the model every request names (default {DEFAULT_MODEL})")
    probe.add_argument("--key-env", default=DEFAULT_KEY_ENV, metavar="NAME",
                       help=f"the environment variable holding the API key (default "
                       f"{DEFAULT_KEY_ENV}); unset: no Authorization header")
    probe.add_argument("--cassette", default=None, metavar="OUT.yaml",
                       help="where to record (default probe-<host>-<UTC time>.yaml here)")
    probe.add_argument("--profile", choices=("openai", "openresponses"), default="openai",
                       help="how the provider streams (default openai: OpenAI's event "
                       "vocabulary, data: [DONE] optional, no official schema on its "
                       "payloads); openresponses holds it to every Open Responses rule")
    probe.add_argument("--json", action="store_true", help="print the report as JSON")
    probe.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                       help="per request: connect, and between bytes (default 60)")
    probe.set_defaults(func=run)
