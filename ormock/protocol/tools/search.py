"""The search tools OpenAI runs: ``web_search_call`` (its ``action``; the answer's
``url_citation`` annotations are the next message's) and ``file_search_call`` (its queries and
results: file ids, names, scores, text)."""

from __future__ import annotations

from ormock.protocol.tools.kind import ToolKind
from ormock.protocol.types import Json

__all__ = ["FILE_SEARCH", "WEB_SEARCH"]


def _searching(fields: Json) -> Json:
    """A web search as it is added: its action's type only (the query comes with the done
    item)."""
    action = fields.get("action")
    kind = action.get("type", "search") if isinstance(action, dict) else "search"
    return {**fields, "action": {"type": kind}}


def _no_results_yet(fields: Json) -> Json:
    return {**fields, "queries": [], "results": None}


WEB_SEARCH = ToolKind(
    type="web_search_call",
    prefix="ws",
    required=("id", "action", "status"),
    opening=_searching,
    before=("in_progress", "searching"),
    after=("completed",),
)

FILE_SEARCH = ToolKind(
    type="file_search_call",
    prefix="fs",
    required=("id", "queries", "status"),
    opening=_no_results_yet,
    before=("in_progress", "searching"),
    after=("completed",),
)
