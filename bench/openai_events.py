"""Regenerate ``ormock/protocol/openai_events.json``: the openai profile's event vocabulary.

The vocabulary is read from the installed openai SDK (``openai.types.responses.
ResponseStreamEvent``, a discriminated union of pydantic models: each member's ``type``
Literal), so it is never a hand-kept list. The SDK is a test-only dependency; ormock
reads the generated file at run time. ``tests/test_checker_openai.py`` regenerates it and fails when
the committed file differs.

    python bench/openai_events.py            # rewrite the file
    python bench/openai_events.py --check    # exit 1 when it is stale
"""

from __future__ import annotations

import json
import sys
import typing
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parent.parent / "ormock" / "protocol" / "openai_events.json"


def _members(union: Any) -> list[Any]:
    while typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    return list(typing.get_args(union)) or [union]


def vocabulary() -> dict[str, Any]:
    """Every streaming event type the installed SDK knows (with its model's name), and the SDK
    version."""
    import openai
    from openai.types.responses import ResponseStreamEvent

    events: dict[str, str] = {}
    for model in _members(ResponseStreamEvent):
        (name,) = typing.get_args(model.model_fields["type"].annotation)
        events[name] = model.__name__
    return {"openai_sdk": openai.__version__,
            "events": {name: events[name] for name in sorted(events)}}


def render(data: dict[str, Any]) -> str:
    """The file's text: one line per event type, so a new SDK's changes read as a short diff."""
    lines = [f" {json.dumps(name)}: {json.dumps(entry)}" for name, entry in data["events"].items()]
    return (f'{{\n "openai_sdk": {json.dumps(data["openai_sdk"])},\n "events": {{\n '
            + ",\n ".join(lines) + "\n }\n}\n")


def main(argv: list[str]) -> int:
    text = render(vocabulary())
    if "--check" in argv:
        stale = not OUTPUT.exists() or OUTPUT.read_text() != text
        print(f"{OUTPUT.name}: {'stale' if stale else 'up to date'}")
        return 1 if stale else 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT} ({len(json.loads(text)['events'])} event types)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
