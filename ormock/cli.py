"""The ``ormock`` command: ``ormock serve`` starts a fake on 127.0.0.1:8787."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from .app import create_app
    from .engine import Namespaces
    from .server import best_loop

    namespaces = Namespaces(seed=args.seed, clock=args.clock, self_check=args.self_check)
    app = create_app(namespaces, api_key=args.api_key, max_body=args.max_body, seed=args.seed)
    print(f"ormock serving Open Responses on http://{args.host}:{args.port}/v1 "
          f"(seed {args.seed}; Ctrl-C stops)", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                loop=best_loop(), access_log=args.access_log, lifespan="off")
    return 0


def _check(args: argparse.Namespace) -> int:
    from .protocol.checker import check_stream

    failed = False
    for path in args.files:
        try:
            with open(path, "rb") as handle:
                report = check_stream(handle.read(), schema=not args.no_schema)
        except OSError as error:
            print(f"{path}: cannot read ({error.strerror})", file=sys.stderr)
            failed = True
            continue
        for violation in report.violations:
            line = f":{violation.line}" if violation.line else ""
            print(f"{path}{line}: {violation}")
        failed = failed or not report.ok
        if report.ok:
            print(f"{path}: ok ({len(report.events)} events)")
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ormock", description="A scriptable fake Open Responses provider for tests."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="start a fake Open Responses server")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default 127.0.0.1: loopback only)")
    serve.add_argument("--port", type=int, default=8787, help="port (default 8787)")
    serve.add_argument("--seed", type=int, default=0, help="seed for ids, text and chaos")
    serve.add_argument("--clock", choices=("seeded", "real"), default="seeded",
                       help="timestamps: seeded (deterministic, default) or real")
    serve.add_argument("--api-key", default=None,
                       help="accept only 'Authorization: Bearer KEY' (default: any key)")
    serve.add_argument("--max-body", type=int, default=16 * 1024 * 1024,
                       help="largest request body in bytes (default 16 MiB); larger gets 413")
    serve.add_argument("--self-check", action="store_true",
                       help="check every planned stream against the protocol and the official "
                       "schema before sending it (slower; a violation answers 500)")
    serve.add_argument("--log-level", default="warning")
    serve.add_argument("--access-log", action="store_true", help="log every request")
    serve.set_defaults(func=_serve)
    check = commands.add_parser("check", help="check SSE captures against the protocol")
    check.add_argument("files", nargs="+", help="raw SSE bodies (text/event-stream captures)")
    check.add_argument("--no-schema", action="store_true",
                       help="skip validation against the official schema")
    check.set_defaults(func=_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
