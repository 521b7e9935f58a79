"""The ``ormock`` command.

``ormock serve`` starts a fake on 127.0.0.1:8787; ``ormock scenarios`` lists the catalogue;
``ormock show NAME`` prints the exact bytes a scenario sends to a request (``--request``,
``--input``; the request is printed first), with each event's offset;
``ormock check FILE...`` lints scenario files and raw SSE captures; ``ormock verdict`` judges how
a client coped with the faults, from a journal file or a running server; ``ormock record``
proxies a real provider and writes what it answers to a cassette (``ormock.commands.record``);
``ormock cassette`` converts cassettes to and from vcrpy's (``ormock.cassette.cli``); ``ormock
probe`` holds a live provider to the protocol and records it (``ormock.probe``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ormock.commands import check as check_command
from ormock.commands import demo as demo_command
from ormock.commands import journal as journal_command
from ormock.commands import record as record_command
from ormock.commands import serve as serve_command
from ormock.protocol.profile import profile_names

__all__ = ["main"]


def _scenarios(args: argparse.Namespace) -> int:
    from ormock.scenario import ScenarioError, catalogue
    from ormock.scenario.catalogue import load_file
    from ormock.scenario.schema import schema_text

    if args.schema:
        sys.stdout.write(schema_text())
        return 0
    entries = catalogue()
    width = max((len(n) for n in entries), default=0)
    status, listed = 0, list[dict[str, object]]()
    for name, path in entries.items():
        try:
            loaded = load_file(path)
        except ScenarioError as error:
            description, status = f"DOES NOT LOAD: {error}", 1
            listed.append({"name": name, "path": str(path), "error": str(error)})
        else:
            description = loaded.description
            listed.append({"name": name, "path": str(path), "description": description,
                           "steps": len(loaded.steps)})
        if not args.json:
            print(f"{name.ljust(width)}  {description}")
    if args.json:
        print(json.dumps(listed, indent=2, ensure_ascii=False))
    return status


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


def _show(args: argparse.Namespace) -> int:
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


def _verdict(args: argparse.Namespace) -> int:
    from ormock.engine.verdict import judge, rules_from

    rules = {name: str(value) for name, value in (
        ("min_backoff", args.min_backoff), ("storm_retries", args.storm_retries),
        ("stall_timeout", args.stall_timeout)) if value is not None}
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ormock", description="A scriptable fake Open Responses provider for tests."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve_command.add_parser(commands)

    listing = commands.add_parser("scenarios", help="list the built-in scenarios")
    listing.add_argument("--schema", action="store_true",
                         help="print the JSON Schema of scenario files instead")
    listing.add_argument("--json", action="store_true",
                         help="print the catalogue as JSON (name, path, description, steps)")
    listing.set_defaults(func=_scenarios)

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
    show.set_defaults(func=_show)

    check = commands.add_parser(
        "check", help="lint scenario files (.yaml) and raw SSE captures against the protocol"
    )
    check.add_argument("files", nargs="+")
    check.add_argument("--no-schema", action="store_true",
                       help="skip validation of SSE captures against the official schema")
    check.add_argument("--profile", choices=profile_names(), default=None,
                       help="how the provider streams (default: openresponses). openai: the "
                       "openai SDK's event types are known ones, data: [DONE] is optional, "
                       "reasoning may be re-encrypted in the terminal snapshot")
    check.add_argument("--resumed", action="store_true",
                       help="each capture is a resumed tail (GET ...?stream=true&"
                       "starting_after=N): it may begin mid-sequence")
    check.add_argument("--starting-after", type=int, default=None, metavar="N",
                       help="a resumed tail whose first sequence_number is N+1 (implies "
                       "--resumed)")
    check.add_argument("--json", action="store_true",
                       help="print each file's result and findings as JSON")
    check.set_defaults(func=check_command.run)

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
    verdict.add_argument("--json", action="store_true", help="print the verdict as JSON")
    verdict.set_defaults(func=_verdict)

    from ormock.commands.cassette import add_parser as add_cassette  # ormock cassette ...

    add_cassette(commands)
    record_command.add_parser(commands)
    journal_command.add_parser(commands)
    demo_command.add_parser(commands)
    from ormock.commands.probe import add_parser as add_probe  # ormock probe --upstream URL

    add_probe(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # `ormock show NAME | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
