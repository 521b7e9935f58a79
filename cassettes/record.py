"""Record the example cassettes of this folder: the real recorder (``ormock record``) in front of
a real ``ormock serve`` playing catalogue scenarios, the openai SDK as the client.

    make cassettes        # or: .venv/bin/python cassettes/record.py

Each example is one cassette; ``tests/test_example_cassettes.py`` replays every one. The
upstream is ormock itself (there is no provider to record from offline), serving scenarios
whose timing is real: the pauses in the files are the pauses the upstream made.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai

from ormock import OrmockServer
from ormock.cassette import load_cassette
from ormock.server.recorder import RecorderServer

HERE = Path(__file__).resolve().parent
KEY = "sk-" + "example-not-a-real-key-000000000000"
PACED = {"name": "paced-text", "seed": 3, "steps": [{"times": "forever", "reply": {
    "pacing": {"first_event": 0.08, "per_event": 0.012},
    "items": [{"message": "Recorded streams keep their pauses: each event at its offset."}]}}]}


def streamed_text(client: openai.OpenAI) -> None:
    for _ in client.responses.create(model="gpt-4.1-mini", input="Say something short.",
                                     stream=True):
        pass


def tool_loop(client: openai.OpenAI) -> None:
    tools: Any = [{"type": "function", "name": name, "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
        for name in ("get_weather", "get_time")]
    first = client.responses.create(model="ormock:tool-roundtrip", input="Weather and time in "
                                    "Paris?", tools=tools)
    outputs: Any = [{"type": "function_call_output", "call_id": item.call_id,
                     "output": "18C and sunny" if item.name == "get_weather" else "14:05"}
                    for item in first.output if item.type == "function_call"]
    client.responses.create(model="ormock:tool-roundtrip", input=outputs, tools=tools,
                            previous_response_id=first.id)


def rate_limited_then_success(client: openai.OpenAI) -> None:
    retrying = client.with_options(max_retries=2)
    for _ in retrying.responses.create(model="ormock:rate-limited-once", input="Hello?",
                                       stream=True):
        pass


def failed_midstream(client: openai.OpenAI) -> None:
    try:
        for _ in client.responses.create(model="ormock:failed-midstream", input="Go on.",
                                         stream=True):
            pass
    except openai.APIError:
        pass


def websocket_session(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        for text in ("First turn.", "Second turn."):
            connection.response.create(model="gpt-4.1-mini", input=text)
            for event in connection:
                if event.type in ("response.completed", "response.failed"):
                    break


EXAMPLES: dict[str, tuple[Callable[[openai.OpenAI], None], Any, int]] = {
    "streamed-text": (streamed_text, PACED, 1),
    "tool-loop": (tool_loop, None, 2),
    "rate-limited-then-success": (rate_limited_then_success, None, 2),
    "failed-midstream": (failed_midstream, None, 1),
    "websocket-session": (websocket_session, None, 1),
}


def record(name: str, folder: Path = HERE) -> Path:
    drive, scenario, count = EXAMPLES[name]
    target = folder / f"{name}.yaml"
    target.unlink(missing_ok=True)
    with OrmockServer(seed=0) as upstream:
        upstream.namespaces.open("u")
        if scenario is not None:
            upstream.engine("u").use(scenario)
        with RecorderServer(f"{upstream.url}/u/v1", folder, name=target.name,
                            profile="openresponses", log=lambda line: None) as recorder:
            drive(openai.OpenAI(base_url=recorder.base_url, api_key=KEY, max_retries=0))
            deadline = time.monotonic() + 10
            while len(load_cassette(target).interactions) < count:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name}: the recorder did not write {count} "
                                       "interactions")
                time.sleep(0.01)
    return target


def main(argv: list[str]) -> int:
    for name in argv or list(EXAMPLES):
        print(f"recorded {record(name)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
