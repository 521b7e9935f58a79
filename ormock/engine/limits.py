"""How much one ormock server keeps: the bounds that make sure nothing a client sends grows
memory without bound. One typed object, from ``OrmockServer(limits=...)`` or the command line
(``ormock serve --journal-bytes ...``); ``docs/server.md`` (Security) lists them."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

__all__ = ["MIB", "Limits"]

MIB = 1024 * 1024
# the limits that are times (any number above 0)
_SECONDS = frozenset({"socket_seconds", "store_seconds"})


@dataclass(frozen=True)
class Limits:
    """Per namespace, but for ``namespaces``, ``max_body`` and ``max_header_bytes`` (per
    request). Past a count or a size the oldest entries go (the newest one always stays), but
    for what the admin API loads (``loaded_*``), which it refuses past its count.
    ``socket_seconds`` is a time: a WebSocket connection is closed when it has lasted that long
    (``docs/server.md``, WebSocket mode); ``store_seconds`` too: a stored response (and its
    tombstone) is gone that long after it was last written, on every store (a Redis expiry on
    Redis)."""

    max_body: int = 16 * MIB  # bytes of one request body (HTTP and admin API); larger is 413
    # bytes of one request's headers, names and values (HTTP, WebSocket upgrade, admin API);
    # more is 431
    max_header_bytes: int = 64 * 1024
    journal_entries: int = 1000  # requests the journal keeps (past it, the oldest half goes)
    journal_bytes: int = 32 * MIB  # request bytes the journal keeps
    store_responses: int = 2000  # stored responses (previous_response_id, GET /v1/responses/ID)
    store_bytes: int = 128 * MIB  # bytes of stored responses and the requests they answered
    store_seconds: float = 30 * 24 * 3600.0  # how long a stored response is kept (OpenAI: 30 days)
    namespaces: int = 10_000  # namespaces open at once (past it the least recently used goes)
    socket_responses: int = 256  # store: false responses a WebSocket connection keeps
    socket_bytes: int = 64 * MIB
    socket_seconds: float = 3600.0  # how long a WebSocket connection lasts (OpenAI: 60 minutes)
    errors: int = 100  # tracebacks of failures inside the server
    error_bytes: int = MIB
    # what the admin API loads into a namespace: past these a load is refused (400), as nothing
    # loaded is dropped to make room
    loaded_scenarios: int = 1000  # scenarios of distinct names (a load of the same name replaces)
    loaded_faults: int = 1000
    loaded_cassettes: int = 100

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name in _SECONDS:
                if (not isinstance(value, (int, float)) or isinstance(value, bool)
                        or not math.isfinite(value) or value <= 0):
                    raise ValueError(f"limit {field.name} must be a number of seconds above 0, "
                                     f"not {value!r}")
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"limit {field.name} must be a whole number of at least 1, "
                                 f"not {value!r}")

    @classmethod
    def option(cls, name: str) -> str:
        """The command-line flag of a limit: ``journal_bytes`` -> ``--journal-bytes``."""
        return "--" + name.replace("_", "-")

    @classmethod
    def seconds(cls, name: str) -> bool:
        """Whether a limit is a time in seconds (a float flag) rather than a count."""
        return name in _SECONDS
