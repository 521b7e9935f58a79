"""Stored responses: what a continuation and ``GET /v1/responses/{id}`` read. Today one backend,
in memory (``memory``); the stateful issue puts a small protocol here (SQLite, Redis)."""

from ormock.engine.store.memory import ResponseStore, Stored, check_call_outputs

__all__ = ["ResponseStore", "Stored", "check_call_outputs"]
