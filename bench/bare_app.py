"""The reference: a bare Starlette app serving precomputed ormock bytes, nothing else.

At startup it captures the SSE and JSON bodies ormock sends for the benchmark request (ormock's
engine, in this process), cuts the SSE body into events, and serves ``POST /v1/responses``:

* ``"stream": true``: a ``StreamingResponse`` writing one event per write (``--writes event``,
  the reference the ratios are taken against), or the whole stream in one write
  (``--writes one``);
* otherwise: a plain ``Response`` with the JSON bytes.

uvicorn runs it exactly as ``ormock serve`` runs ormock: the same event loop (uvloop when
installed), the same HTTP parser (httptools when installed), access log off, log level warning.

    python bench/bare_app.py --port 8790 [--case short|scenario|fixed|long-text]
        [--writes event|one]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator, Sequence

import cases
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ormock.server.runner import best_loop


def create_bare_app(case: str = "short", writes: str = "event") -> Starlette:
    events = cases.split_events(cases.capture(case, stream=True))
    chunks = events if writes == "event" else [b"".join(events)]
    json_body = cases.capture(case, stream=False) if case != "long-text" else b"{}"

    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    async def responses(request: Request) -> Response:
        body = await request.json()
        if body.get("stream"):
            return StreamingResponse(stream(), media_type="text/event-stream")
        return Response(json_body, media_type="application/json")

    return Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--case", choices=("short", "scenario", "fixed", "long-text"),
                        default="short")
    parser.add_argument("--writes", choices=("event", "one"), default="event",
                        help="event: one write per SSE event; one: the whole stream in one write")
    args = parser.parse_args(argv)
    app = create_bare_app(args.case, args.writes)
    print(f"bare app ({args.case}, writes={args.writes}) on http://{args.host}:{args.port}",
          file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", loop=best_loop(),
                access_log=False, lifespan="off")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
