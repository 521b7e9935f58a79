"""``ormock show NAME``: the exact bytes a scenario sends to a request (``--request``,
``--input``; the request is printed first), each event under its offset; ``--timeline`` and
``--json`` show it through ``ormock.commands.timeline``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_REQUEST", "add_parser", "run"]

DEFAULT_REQUEST = {"model": "ormock-1", "input": "Hello", "stream": True}
_EXAMPLE = '\'{"model": "ormock-1", "input": "Hello"}\''


def _show_request(args: argparse.Namespace) -> dict[str, object]:
    """The request ``ormock show`` answers: ``--request`` (JSON, or ``@FILE``), ``--input``, or
    the default; ``--model`` replaces its model; ``stream`` is true unless it says otherwise.
    ``ValueError`` says what to change."""
    if args.request is None:
        body: object = dict(DEFAULT_REQUEST)
        if args.input is not None:
            body = {"model": "ormock-1", "input": args.input}
    else:
        text, where = args.request, ""
        if text.startswith("@"):
            try:
                text = Path(text[1:]).read_text(encoding="utf-8")
            except OSError as error:
                raise ValueError(f"cannot read {args.request[1:]} ({error.strerror}); after @ "
                                 "give the path of a file that holds the request body") from None
            except UnicodeDecodeError:
                raise ValueError(f"{args.request[1:]} is not UTF-8 text; save the request "
                                 "body as UTF-8 JSON") from None
            where = f"{args.request[1:]} is "
        try:
            body = json.loads(text)
        except ValueError as error:
            raise ValueError(f"{where}not JSON ({error}); give a JSON object such as "
                             f"{_EXAMPLE}, or @FILE to read it from a file") from None
    if not isinstance(body, dict):
        kind = {list: "an array", str: "a string", bool: "true or false",
                type(None): "null"}.get(type(body), "a number")
        raise ValueError(f"a request body is a JSON object such as {_EXAMPLE}, not {kind}")
    if args.model is not None:
        body["model"] = args.model
    body.setdefault("stream", True)
    return body


def run(args: argparse.Namespace) -> int:
    from ormock.engine.core import Engine
    from ormock.protocol.checker import ProtocolError
    from ormock.protocol.errors import OpenResponsesError
    from ormock.protocol.reply import Reply
    from ormock.protocol.wire import coalesced
    from ormock.scenario import ScenarioError, find_scenario

    try:
        scenario = find_scenario(args.name)
    except ScenarioError as error:
        print(f"ormock: {error}", file=sys.stderr)
        return 2
    step = scenario.steps[args.step - 1] if 0 < args.step <= len(scenario.steps) else None
    if step is None:
        print(f"ormock: {scenario.name} has {len(scenario.steps)} steps", file=sys.stderr)
        return 2
    try:
        body = _show_request(args)
    except ValueError as error:
        print(f"ormock: --request: {error}", file=sys.stderr)
        return 2
    # a fresh engine, as a new server's namespace is: the same ids, clock and counters
    engine = Engine(seed=args.seed)
    engine.use(scenario)
    try:
        reply = engine.respond_with(scenario, step, body)
    except OpenResponsesError as error:  # the server would answer 400 with this
        param = f" (param {error.param})" if error.param else ""
        print(f"ormock: --request: {error.message}{param}", file=sys.stderr)
        return 2
    if args.json:  # everything below, as data
        from ormock.commands.timeline import reply_data

        try:
            shown = reply_data(engine.journal[-1], reply)
        except ProtocolError as error:
            print(f"ormock: this reply can only be streamed ({error})", file=sys.stderr)
            return 2
        print(json.dumps({"scenario": scenario.name, "step": step.index,
                          "steps": len(scenario.steps), "seed": args.seed, "request": body,
                          **shown}, indent=2, ensure_ascii=False))
        return 0
    print(f"--- scenario {scenario.name}, step {step.index} of {len(scenario.steps)}, "
          f"seed {args.seed}")
    print(f"--- request {json.dumps(body, ensure_ascii=False)}")
    if args.timeline:  # the events as the inspector and ormock demo show them
        from ormock.commands.timeline import reply_timeline

        print(reply_timeline(engine.journal[-1], reply))
        return 0
    if not isinstance(reply, Reply):
        print(f"HTTP {reply.status}")
        for key, value in reply.headers.items():
            print(f"{key}: {value}")
        print()
        sys.stdout.write(reply.body.decode("utf-8", "replace") + "\n")
        return 0
    if not reply.stream and reply.frames is None:  # a JSON body, when the stream would end
        try:
            payload = reply.json_body()
        except ProtocolError as error:
            print(f"ormock: this reply can only be streamed ({error}); the server answers 500 "
                  "unfoldable_reply: send the request with stream: true", file=sys.stderr)
            return 2
        print(f"--- +{reply.json_delay() * 1000:.1f} ms")
        sys.stdout.write(payload.decode("utf-8", "replace") + "\n")
        return 0
    offset = 0.0
    for frame in coalesced(reply.wire()) if args.coalesce else reply.wire():
        offset += frame.delay
        label = f" [{frame.action}]" if frame.action else ""
        print(f"--- +{offset * 1000:.1f} ms{label}")
        sys.stdout.write(frame.data.decode("utf-8", "replace"))
    return 0


def add_parser(commands: Any) -> None:
    show = commands.add_parser(
        "show", help="print the exact bytes and timing a scenario sends to a request",
        description="Print the bytes a fresh server with the same seed sends to the request, "
        "each event under its planned offset; the first two lines name the scenario, step and "
        "seed, and the request.")
    show.add_argument("name", help="a catalogue name or a scenario file")
    show.add_argument("--step", type=int, default=1, help="which step (default 1)")
    request = show.add_mutually_exclusive_group()
    request.add_argument("--request", default=None, metavar="JSON|@FILE",
                         help="the request body to answer, as JSON, or @FILE to read it from a "
                         "file (default: "
                         f"'{json.dumps(DEFAULT_REQUEST)}'); stream is true unless it says "
                         "false")
    request.add_argument("--input", default=None, metavar="TEXT",
                         help="shorthand for --request '{\"model\": \"ormock-1\", "
                         "\"input\": TEXT}'")
    show.add_argument("--model", default=None, help="replace the request's model")
    show.add_argument("--seed", type=int, default=0,
                      help="the server's seed: ids, timestamps, text (default 0)")
    show.add_argument("--coalesce", action="store_true",
                      help="show the writes as the server makes them (zero-delay runs merged)")
    show.add_argument("--timeline", action="store_true",
                      help="one line per event (offset, sequence number, type, indexes, a "
                      "glimpse of it), faults and checker findings where they strike, "
                      "instead of the bytes")
    show.add_argument("--json", action="store_true",
                      help="print it all as JSON: the frames with their offsets, the timeline, "
                      "the faults where they struck, the checker's findings")
    show.set_defaults(func=run)
