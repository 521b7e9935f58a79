"""``ormock record``: a recording proxy in front of a real provider (``ormock.server.recorder``).

``ormock record --upstream https://api.openai.com/v1 --upstream-key-env OPENAI_API_KEY
--cassettes cassettes/`` listens on 127.0.0.1:8787; point a client at ``http://127.0.0.1:8787/v1``
with any key. Each finished interaction is written to the session's cassette at once and
reported on stderr (``POST /v1/responses 200 14 events 523 ms``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import ormock.plugins  # noqa: F401  (registers the real providers' profiles)
from ormock.commands.cassette import add_redaction_options
from ormock.commands.serve import add_allowed_host
from ormock.engine.limits import Limits
from ormock.protocol.profile import profile_names

__all__ = ["add_parser", "run"]

DEFAULT_MAX_BODY = Limits().max_body


def add_parser(commands: Any) -> None:
    record = commands.add_parser(
        "record", help="record a real provider's answers to a cassette, as a proxy",
        description="Proxy every request to --upstream, relay its answer as it arrives, and "
        "write each exchange (bytes and timing) to a cassette in --cassettes, rewritten "
        "atomically after every interaction. Secret headers are always redacted.")
    record.add_argument("--upstream", required=True, metavar="URL",
                        help="the provider's base URL, e.g. https://api.openai.com/v1")
    record.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1: loopback only)")
    record.add_argument("--port", type=int, default=8787, help="port (default 8787; 0: any)")
    record.add_argument("--cassettes", required=True, metavar="DIR",
                        help="the folder the cassette is written in (made if missing)")
    record.add_argument("--name", default=None,
                        help="the cassette's file name (default recording-<UTC time>.yaml)")
    record.add_argument("--upstream-key-env", default=None, metavar="NAME",
                        help="send the upstream 'Authorization: Bearer $NAME' instead of the "
                        "client's key (the client may then hold a dummy key)")
    add_redaction_options(record)
    record.add_argument("--max-body", type=int, default=DEFAULT_MAX_BODY, metavar="BYTES",
                        help="the largest request body relayed; a larger one is answered 413 "
                        f"and never reaches the upstream (default {DEFAULT_MAX_BODY:,})")
    add_allowed_host(record)
    record.add_argument("--profile", choices=profile_names(), default="openai",
                        help="the profile the cassette says it was recorded with "
                        "(default openai)")
    record.add_argument("--log-level", default="warning")
    record.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ormock.server.recorder import RecorderServer

    if args.max_body < 1:
        print(f"ormock record: --max-body {args.max_body}: give a number of bytes, 1 or more",
              file=sys.stderr)
        return 2
    key = None
    if args.upstream_key_env is not None:
        key = os.environ.get(args.upstream_key_env)
        if not key:
            print(f"ormock record: --upstream-key-env {args.upstream_key_env}: that "
                  "environment variable is not set", file=sys.stderr)
            return 2
    try:
        server = RecorderServer(
            args.upstream, args.cassettes, args.port, args.host, name=args.name,
            upstream_key=key, redact_headers=args.redact_header,
            redact_paths=args.redact_path, profile=args.profile, log_level=args.log_level,
            max_body=args.max_body, allowed_hosts=args.allowed_host)
    except (ValueError, FileExistsError) as error:
        print(f"ormock record: {error}", file=sys.stderr)
        return 2
    except (OSError, OverflowError) as error:
        print(f"ormock record: cannot listen on {args.host}:{args.port} or write in "
              f"{args.cassettes} ({error})", file=sys.stderr)
        return 3
    print(f"ormock recording {server.app.upstream_public} on {server.base_url} into "
          f"{server.cassette} (Ctrl-C stops)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        return 0
    except RuntimeError as error:
        print(f"ormock record: {error}", file=sys.stderr)
        return 3
    return 0
