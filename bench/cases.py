"""What the benchmark sends, and the exact bytes ormock answers with (captured in-process).

Shared by ``run.py`` (the load), ``bare_app.py`` (the reference server) and ``inprocess.py``
(timing ormock's app without HTTP).

The 1,000-delta stream (``long-text``) comes from stock ``ormock serve --scenario FILE``: a
scenario whose one step (``times: forever``) answers a message of 1,000 words, which ormock's
default ``words`` chunking streams as 1,000 deltas. ormock renders the step, builds every event,
frames, stores and journals per request, exactly as for any scenario; nothing is cached.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Json = dict[str, Any]

LONG_DELTAS = 1000
SEED = 0

# The benchmark request: the smallest valid one; "stream": true is added for streamed cases.
SHORT_BODY: Json = {"model": "m", "input": "hi"}


# The catalogue scenario the ``scenario`` case names by its model (``ormock:text``): a templated
# reply (``Hello! {{ faker.sentence(nb_words=8) }}``), rendered anew for every request.
SCENARIO_MODEL = "ormock:text"


def request_body(case: str, stream: bool, unique: int | None = None) -> Json:
    """The request body for a case (``short``, ``long-text`` or ``fixed``: the same request; the
    ``long-text`` server has the 1,000-word scenario loaded, the ``fixed`` one the fixed-text
    scenario; ``scenario``: the same request with ``model: ormock:text``). ``unique``: a request
    whose input differs from every other one (``hi 17``), so nothing can be reused from an
    earlier reply."""
    body = {**SHORT_BODY, "stream": True} if stream else dict(SHORT_BODY)
    if case == "scenario":
        body["model"] = SCENARIO_MODEL
    if unique is not None:
        body["input"] = f"hi {unique}"
    return body


def long_text() -> str:
    """1,000 words (deterministic), which ormock's ``words`` chunking streams as 1,000 deltas."""
    from faker import Faker

    faker = Faker()
    faker.seed_instance(SEED)
    return " ".join(faker.words(LONG_DELTAS))


# The fixed-text scenario's one reply (the ``fixed`` case: ``ormock serve --scenario FILE``), the
# same text for every request, as a peer serves its one canned answer
FIXED_TEXT = "Hello! This is the benchmark's fixed reply, the same text for every request."


def fixed_scenario() -> Json:
    """A scenario answering every request with the one message ``FIXED_TEXT``."""
    return {
        "name": "bench-fixed",
        "description": "Every request: one assistant message of a fixed text.",
        "steps": [{"times": "forever", "reply": {"items": [{"message": FIXED_TEXT}]}}],
    }


def long_scenario() -> Json:
    """A scenario answering every request with one message of 1,000 words."""
    return {
        "name": "bench-1000-deltas",
        "description": "Every request: one assistant message of 1,000 words (1,000 deltas).",
        "steps": [{"times": "forever", "reply": {"items": [{"message": long_text()}]}}],
    }


SCENARIOS = {"long-text": long_scenario, "fixed": fixed_scenario}  # a case's loaded scenario


def write_scenario(case: str, path: Path) -> Path:
    """The scenario of ``case`` (``long-text``, ``fixed``) as a YAML file, for ``ormock serve
    --scenario PATH``."""
    import yaml

    path.write_text(yaml.safe_dump(SCENARIOS[case](), sort_keys=False, width=1_000_000))
    return path


def capture(case: str, stream: bool) -> bytes:
    """The body a fresh ``ormock serve --seed 0`` sends for its first request of ``case``."""
    from ormock.engine.core import Engine
    from ormock.protocol.reply import Reply

    engine = Engine(seed=SEED)
    if case in SCENARIOS:
        engine.use(SCENARIOS[case]())
    reply = engine.respond(request_body(case, stream), {"content-type": "application/json"})
    if not isinstance(reply, Reply):
        raise SystemExit(f"bench: ormock answered the {case} request with {reply!r}")
    body: bytes = reply.sse_body() if stream else reply.json_body()
    return body


def split_events(sse: bytes) -> list[bytes]:
    """An SSE body cut into whole frames (each ends with its blank line), ``[DONE]`` included."""
    frames = [frame + b"\n\n" for frame in sse.split(b"\n\n") if frame]
    if b"".join(frames) != sse:
        raise ValueError("bench: the SSE body does not split into whole LF-framed events")
    return frames


def count_events(sse: bytes) -> tuple[int, int]:
    """(events, deltas) in an SSE body; ``data: [DONE]`` is not an event."""
    events = deltas = 0
    for frame in split_events(sse):
        if frame.startswith(b"data: [DONE]"):
            continue
        events += 1
        data = frame.split(b"data: ", 1)[1]
        if json.loads(data).get("type", "").endswith(".delta"):
            deltas += 1
    return events, deltas
