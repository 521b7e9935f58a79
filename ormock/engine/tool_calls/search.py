"""The embedded default's web and file searches: a ``web_search_call`` whose query is the
user's words, its sources and a message citing them (``url_citation`` annotations whose
indices cover each link in the text); a ``file_search_call`` with results (file ids, names,
scores, text) when ``include`` asks for them, and a message naming the files."""

from __future__ import annotations

from ormock.engine.tool_calls.asked import Asked, Planned
from ormock.protocol.items import url_citation
from ormock.protocol.plan import ToolCallPlan
from ormock.protocol.types import Json

__all__ = ["file_search", "web_search"]

_SOURCES = "web_search_call.action.sources"
_RESULTS = "file_search_call.results"


def query_of(asked: Asked) -> str:
    """What to search for: the user's words (their first 100 characters), else a sentence."""
    text = " ".join(asked.text.split())
    return text[:100].rstrip() if text else asked.prose.sentence().rstrip(".")


def web_search(tool: Json, asked: Asked) -> Planned:
    query = query_of(asked)
    pages = []
    for _ in range(2):
        host = f"{asked.word()}.example.com"
        pages.append((host, f"https://{host}/{asked.word()}-{asked.word()}",
                      asked.prose.sentence().rstrip(".")))
    action: Json = {"type": "search", "query": query}
    if _SOURCES in asked.include:
        action["sources"] = [{"type": "url", "url": url} for _, url, _ in pages]
    said = asked.prose.sentence()
    citations = []
    for host, url, title in pages:
        link = f"[{host}]({url})"
        said += f" {asked.prose.sentence()} ("
        start = len(said)
        said += link + ")"
        citations.append(url_citation(url, start, start + len(link), title))
    return Planned([ToolCallPlan("web_search_call", {"action": action})], said, citations)


def file_search(tool: Json, asked: Asked) -> Planned:
    query = query_of(asked)
    results = []
    for rank in range(2):
        results.append({
            "file_id": f"file-{asked.hex(22)}",
            "filename": f"{asked.word()}-{asked.word()}.pdf",
            "score": round(0.92 - 0.17 * rank - asked.number(0, 50) / 1000, 4),
            "text": asked.prose.sentence(),
            "attributes": {},
        })
    fields: Json = {"queries": [query],
                    "results": results if _RESULTS in asked.include else None}
    named = " and ".join(str(r["filename"]) for r in results)
    said = f"According to {named}: {results[0]['text']}"
    return Planned([ToolCallPlan("file_search_call", fields)], said)
