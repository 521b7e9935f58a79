"""A stream as a compact timeline in the terminal: one line per event (its offset, sequence
number, type, indexes and a glimpse of its payload), faults and checker findings where they
struck. ``ormock show NAME --timeline`` and ``ormock demo`` print it.

Rows are the inspector's (``ormock.server.exchange``): dicts with ``index``, ``offset_ms``,
``type``, ``sequence_number``, ``output_index``, ``content_index`` and ``data`` (the event).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ormock.engine.feed import SentFrames
from ormock.engine.journal import JournalEntry
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.wire import Frame, Kind
from ormock.server.exchange import exchange

__all__ = ["format_timeline", "reply_data", "reply_timeline", "rows_of_frames"]

_GLIMPSE = 48


def rows_of_frames(frames: Iterable[Frame], kind: Kind = "sse") -> list[dict[str, Any]]:
    """Timeline rows of a wire's frames (each event with the offset of its frame), an action
    (a close, a reset, a stall) as a row of its own."""
    rows: list[dict[str, Any]] = []
    offset = 0.0
    for frame in frames:
        offset += frame.delay if frame.delay != float("inf") else 0.0
        if frame.action is not None:
            rows.append({"index": len(rows), "offset_ms": round(offset * 1000, 3),
                         "type": f"[{frame.action}]", "action": frame.action})
            continue
        for event in frame.carried(kind):
            rows.append({"index": len(rows), "offset_ms": round(offset * 1000, 3),
                         "type": event.get("type"),
                         "sequence_number": event.get("sequence_number"),
                         "output_index": event.get("output_index"),
                         "content_index": event.get("content_index",
                                                    event.get("summary_index")),
                         "data": event})
    return rows


def _glimpse(row: dict[str, Any]) -> str:
    data = row.get("data")
    if not isinstance(data, dict):
        return ""
    for key in ("delta", "text", "arguments"):
        if isinstance(data.get(key), str):
            return json.dumps(data[key][:_GLIMPSE], ensure_ascii=False)
    if isinstance(data.get("item"), dict):
        item = data["item"]
        name = f" {item['name']}" if isinstance(item.get("name"), str) else ""
        return f"{item.get('type')}{name}"
    response = data.get("response")
    if isinstance(response, dict):
        return f"status {response.get('status')}"
    if data.get("type") == "error":
        return str(data.get("code") or data.get("message", ""))[:_GLIMPSE]
    return ""


def _runs(rows: list[dict[str, Any]], marked: set[Any]) -> list[list[dict[str, Any]]]:
    """Consecutive rows of one type on one lane (the deltas of a text) as one run; a row a
    fault or finding concerns starts a run of its own."""
    runs: list[list[dict[str, Any]]] = []
    for row in rows:
        last = runs[-1][-1] if runs else None
        if (last is not None and row["index"] not in marked and row.get("type") ==
                last.get("type") and str(row.get("type", "")).endswith(".delta")
                and (row.get("output_index"), row.get("content_index")) ==
                (last.get("output_index"), last.get("content_index"))):
            runs[-1].append(row)
        else:
            runs.append([row])
    return runs


def _line(run: list[dict[str, Any]], indent: str) -> str:
    first, last = run[0], run[-1]
    where = ""
    if first.get("output_index") is not None:
        where = f"[{first['output_index']}"
        where += f".{first['content_index']}]" if first.get("content_index") is not None else "]"
    number = first.get("sequence_number")
    numbers = "" if number is None else f"#{number}"
    if len(run) > 1 and last.get("sequence_number") is not None:
        numbers += f"-{last['sequence_number']}"
    kind = str(first.get("type"))
    if len(run) > 1:
        kind += f" x{len(run)}"
        text = "".join(str(r["data"].get("delta", "")) for r in run
                       if isinstance(r.get("data"), dict))
        glimpse = json.dumps(text[:_GLIMPSE], ensure_ascii=False)
    else:
        glimpse = _glimpse(first)
    return (f"{indent}{first.get('offset_ms', 0):>9.1f} ms  {numbers:>7}  {kind:<44} "
            f"{where:<6} {glimpse}").rstrip()


def format_timeline(rows: list[dict[str, Any]], struck: Iterable[dict[str, Any]] = (),
                    findings: Iterable[dict[str, Any]] = (), indent: str = "  ") -> str:
    """The rows as lines (a run of deltas on one lane as one line), each fault (``struck``)
    and finding on the line before the event it concerns."""
    at: dict[Any, list[str]] = {}
    for s in struck:
        at.setdefault(s.get("index"), []).append(f"!! fault {s['fault']} ({s['what']})")
    for f in findings:
        at.setdefault(f.get("index"), []).append(f"?? {f['rule']}: {f['message']}")
    lines = [indent + note for note in at.pop(None, [])]
    for run in _runs(rows, set(at)):
        lines += [indent + note for note in at.pop(run[0]["index"], [])]
        lines.append(_line(run, indent))
    for notes in at.values():  # after the last event: a drop, a missing terminal event
        lines += [indent + note for note in notes]
    return "\n".join(lines)


def reply_timeline(entry: JournalEntry, reply: Reply | RawReply) -> str:
    """The timeline of a reply made but not sent (``ormock show``): its planned frames, read
    as the inspector reads the frames a writer sent."""
    if isinstance(reply, RawReply):
        faults = f" (fault {', '.join(entry.faults)})" if entry.faults else ""
        retry = {k: v for k, v in reply.headers.items() if "retry" in k.lower()}
        told = "  ".join(f"{k}: {v}" for k, v in retry.items())
        return f"  HTTP {reply.status}{faults}  {told}".rstrip()
    frames = reply.wire()
    sent = SentFrames("sse" if reply.stream else "json", 200, (),
                      tuple((f.delay, f) for f in frames if f.action is None))
    shown = exchange(entry, sent, "")
    rows = rows_of_frames(frames, sent.kind) if sent.kind == "sse" else shown["timeline"]
    return format_timeline(rows, shown["struck"], shown["findings"])


def reply_data(entry: JournalEntry, reply: Reply | RawReply) -> dict[str, Any]:
    """A reply made but not sent, as data (``ormock show --json``): its status and headers,
    each frame with its planned offset, action and text, the timeline with the faults where
    they struck and the checker's findings (as ``GET /_ormock/journal/{id}`` gives them)."""
    if isinstance(reply, RawReply):
        return {"status": reply.status, "headers": dict(reply.headers),
                "delay_ms": round(reply.delay * 1000, 3),
                "body": reply.body.decode("utf-8", "replace"), "frames": [], "timeline": [],
                "struck": list(entry.struck), "findings": []}
    frames = reply.wire() if reply.stream or reply.frames is not None else [
        Frame(reply.json_body(), reply.json_delay())]
    kind: Kind = "sse" if reply.stream else "json"
    sent = SentFrames(kind, 200, (), tuple((f.delay, f) for f in frames if f.action is None))
    shown = exchange(entry, sent, "")
    listed, offset = [], 0.0
    for frame in frames:
        offset += frame.delay if frame.delay != float("inf") else 0.0
        listed.append({"offset_ms": round(offset * 1000, 3), "action": frame.action,
                       "stall_ms": None if frame.action != "stall" or frame.delay == float("inf")
                       else round(frame.delay * 1000, 3),
                       "data": frame.data.decode("utf-8", "replace")})
    return {"status": 200, "headers": dict(reply.headers), "frames": listed,
            "timeline": shown["timeline"], "struck": shown["struck"],
            "findings": shown["findings"]}
