"""One journal entry as the inspector page shows it (``GET /_ormock/journal/{id}``): the entry,
its timeline of events with their payloads and offsets, what answered it, the faults and where
they struck, the checker's findings on the events they concern, and "copy as curl".

Everything here goes to a web page, so everything is masked: secret headers were masked when
the entry was made (``protocol.secrets.mask_headers``), the answer's (``set-cookie``) here; the
request body, the events and the curl command have every key-shaped value and every
secret-named field masked (``mask_json``/``mask_text``).
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from ormock.engine.feed import SentFrames
from ormock.engine.journal import JournalEntry
from ormock.protocol.checker import check_stream
from ormock.protocol.secrets import MASK, mask_headers, mask_json, mask_text
from ormock.protocol.sse import parse_sse
from ormock.server.relay import escaped_path

__all__ = ["api_path", "curl", "exchange", "summary"]


def summary(entry: JournalEntry) -> dict[str, Any]:
    """The entry as ``GET /_ormock/journal`` gives it, masked for a page, with what answered
    it."""
    data = entry.to_dict()
    data["answered_by"] = entry.answered_by
    data["body"] = mask_json(data.get("body"))
    if data.get("error"):
        data["error"] = mask_json(data["error"])
    return data


def api_path(entry: JournalEntry) -> str:
    """The entry's path without its namespace (``/v1/responses``): a create request's journal
    path holds the namespace, a replayed one's does not."""
    head = f"/{entry.namespace}/"
    return entry.path[len(head) - 1:] if entry.namespace and entry.path.startswith(head) \
        else entry.path


def _messages(sent: SentFrames, data: bytes) -> list[tuple[str | None, str, bool]]:
    """The messages of one frame: ``(sse event name, data, is [DONE])``; a WebSocket frame is
    one message, its text."""
    if sent.kind == "socket":
        return [(None, data.decode("utf-8", "replace"), False)] if data else []
    return [(m.event, m.data, m.is_done) for m in parse_sse(data)]


def _timeline(sent: SentFrames) -> tuple[list[dict[str, Any]], bytes]:
    """Each message sent, with its offset (ms from the first frame) and its indexes."""
    out: list[dict[str, Any]] = []
    offset = 0.0
    for wait, frame in sent.frames:
        offset += wait
        for name, text, done in _messages(sent, frame.data):
            row: dict[str, Any] = {"index": len(out), "offset_ms": round(offset * 1000, 3)}
            try:
                event = json.loads(text)
            except ValueError:
                row.update(type="[DONE]" if done else "(not JSON)", raw=mask_text(text[:2000]))
            else:
                if isinstance(event, dict):
                    row.update(type=event.get("type"),
                               sequence_number=event.get("sequence_number"),
                               output_index=event.get("output_index"),
                               content_index=event.get("content_index",
                                                       event.get("summary_index")),
                               item_id=event.get("item_id"), data=mask_json(event))
                    if name is not None and name != event.get("type"):
                        row["sse_event"] = name
                else:
                    row.update(type="(not an object)", data=mask_json(event))
            out.append(row)
    return out, sent.body


def _planned(entry: JournalEntry) -> list[dict[str, Any]]:
    """The timeline from the journal's summary, when the frames are no longer kept (or the
    answer was never written: a Python caller's)."""
    return [{"index": i, **e} for i, e in enumerate(entry.events)]


def _struck(entry: JournalEntry, timeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Where the answer's faults struck, as the fault machinery recorded it (``entry.struck``:
    the event index, frame and byte offset), with ``index`` the timeline row of that event (a
    timeline also has rows that are not events: a broken message, ``[DONE]``); None for a fault
    on the answer itself (an HTTP error)."""
    rows = [row["index"] for row in timeline if "data" in row]
    out = []
    for strike in entry.struck:
        shown = dict(strike)
        event = strike.get("index")
        if event is not None and rows and len(rows) != len(timeline):
            shown["index"] = rows[event] if event < len(rows) else rows[-1] + 1
        out.append(shown)
    return out


def _findings(body: bytes | None, timeline: list[dict[str, Any]], kind: str
              ) -> list[dict[str, Any]]:
    events = [row["data"] for row in timeline if "data" in row]
    if kind not in ("sse", "socket") or (body is None and not events):
        return []
    # a WebSocket turn is its events (no SSE framing, no [DONE]): checked as a list
    report = check_stream(body if body is not None and kind == "sse" else events, schema=False)
    return [{"rule": v.rule, "index": v.index, "message": mask_text(v.message)}
            for v in report.violations]


def _variable(header: str) -> str:
    """The environment variable a masked header's value is read from: its name in upper case,
    every character but a letter or digit an underscore (``x-api-key`` -> ``$X_API_KEY``)."""
    name = re.sub(r"[^A-Z0-9]", "_", header.upper())
    return name if name[:1].isalpha() else f"HEADER_{name}"


def curl(entry: JournalEntry, base: str) -> str:
    """The request as a curl command line, every argument quoted for a POSIX shell (a path, a
    header name or a value from a request is text, never a command); secret headers as
    ``$OPENAI_API_KEY``-like variables, the only thing the shell expands."""
    prefix = f"/{entry.namespace}" if entry.namespace else ""
    url = base.rstrip("/") + escaped_path(prefix + api_path(entry))
    words = ["curl", "-sS", "-N", shlex.quote(url)]
    for name, value in entry.headers.items():
        lowered = name.lower()
        if lowered in ("host", "content-length", "connection", "accept-encoding"):
            continue
        if value == MASK:
            shown, variable = ((f"{name}: Bearer ", "OPENAI_API_KEY") if lowered == "authorization"
                               else (f"{name}: ", _variable(name)))
            words += ["-H", shlex.quote(shown) + f'"${variable}"']
            continue
        words += ["-H", shlex.quote(f"{name}: {mask_text(value)}")]
    if entry.body is not None:
        words += ["-d", shlex.quote(json.dumps(mask_json(entry.body), ensure_ascii=False))]
    return " ".join(words)


def exchange(entry: JournalEntry, sent: SentFrames | None, base: str) -> dict[str, Any]:
    """Everything the page shows of one exchange."""
    data = summary(entry)
    if sent is not None and sent.kind in ("sse", "socket"):
        timeline, body = _timeline(sent)
        data["frames_kept"] = True
    else:
        timeline, body = _planned(entry), None
        data["frames_kept"] = sent is not None
    if sent is not None and sent.kind == "json":
        text = sent.body.decode("utf-8", "replace")
        try:
            data["response_body"] = mask_json(json.loads(text))
        except ValueError:
            data["response_body"] = mask_text(text[:20000])
    if sent is not None:
        data["response_headers"] = mask_headers({k.decode("latin-1"): v.decode("latin-1")
                                                 for k, v in sent.headers})
    data["timeline"] = timeline
    data["findings"] = _findings(body, timeline, sent.kind if sent is not None else
                                 "sse" if entry.stream else "json")
    data["struck"] = _struck(entry, timeline)
    data["transport"] = sent.kind if sent is not None else "sse" if entry.stream else "json"
    # a WebSocket turn is no HTTP request: no curl for it
    data["curl"] = curl(entry, base) if data["transport"] != "socket" else None
    return data
