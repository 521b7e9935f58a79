"""Stored responses: what ``previous_response_id`` continues and ``GET /v1/responses/{id}``
returns, kept per engine namespace (and, for ``store: false`` in WebSocket mode, per
connection), as bytes in a ``StoreBackend`` (memory, or an SQLite file)."""

from __future__ import annotations

import builtins
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ormock.engine.bounded import Bounded
from ormock.engine.store.base import StoreBackend
from ormock.engine.store.memory import MemoryBackend
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json

__all__ = ["ResponseStore", "Stored"]


_KIND = "response"
_META = "meta"  # the store's own bookkeeping (how many engines started on it)
_TOMBSTONE = "tombstone"  # a deleted response: it answers 404, its children still resolve it


class Stored:
    """A stored response, the input it answered and its parent: its context (everything the
    model saw: the ancestors' inputs and outputs, then its own input) is rebuilt from the chain
    when asked for, so a chain of n turns holds n inputs, not n copies of the context.

    In a store it is bytes (``encode``/``decode``): one JSON line (the parent's id, its own
    input, its context's tokens, and the context before it when the parent lives in another
    store), then the Response JSON as it was sent (a memory store keeps the value, and makes
    those bytes only when they are read). A decoded one reads its parent from its
    store when first asked, and parses its Response only if something asks for it.
    ``context_tokens``: the tokens of the context, counted once; ``chain_tokens``: those of
    context and output, which a continuation starts from (counted when first continued).
    ``size``: the bytes it holds in a store. ``owner``: the sha256 of the API key that created
    it (None: a request without one); only that key sees it (``ResponseStore.visible``).
    ``extensions``: the request's extension fields in effect (its own over its parent's,
    ``inherit_extensions``), kept whole so that a continuation needs no ancestor to know them;
    a header without the key (an older record) holds none."""

    __slots__ = ("_encoded", "_input_json", "_parent", "_raw", "_response", "_size", "_store",
                 "chain_tokens", "context_tokens", "deleted", "extensions", "id", "input", "owner",
                 "parent_id", "prior")

    def __init__(self, response: Json | None, new_input: list[Json],
                 parent: Stored | None = None, *, raw: bytes | None = None,
                 context_tokens: int = 0, owner: str | None = None,
                 extensions: Json | None = None, input_json: str | None = None) -> None:
        self._response = response
        self._raw = raw
        self._parent = parent
        self._store: ResponseStore | None = None  # the store it was read from or kept in
        self._encoded: bytes | None = None  # the bytes it was decoded from, or kept as
        self._size: int | None = None  # their length, once counted
        self.id: str | None = None  # known once kept or read
        self.parent_id: str | None = None if parent is None else parent.response_id
        self.prior: list[Json] | None = None  # the context before it, held when not linked
        self.input = new_input
        self._input_json = input_json  # its ``encode_json`` text, when the request made it
        self.context_tokens = context_tokens
        self.chain_tokens: int | None = None
        self.owner = owner
        self.extensions: Json = extensions or {}
        self.deleted = False  # buried (``ResponseStore.bury``): kept for its children only

    @property
    def response_id(self) -> str:
        return self.id if self.id is not None else str(self.response["id"])

    @property
    def parent(self) -> Stored | None:
        """The response it continues, read from its store when first asked; an ancestor the
        store no longer holds (past its caps, the oldest go) is a 400."""
        if self._parent is None and self.parent_id is not None:
            # never kept on the object: a stored response does not hold its chain alive
            found = self._store.get(self.parent_id) if self._store is not None else None
            if found is None:
                limit = f" at most {self._store.limit}," if self._store is not None else ""
                raise OpenResponsesError(
                    f"Response {self.parent_id!r}, an earlier turn of this chain (the parent "
                    f"of {self.id or 'a stored response'!r}), is no longer stored (the store keeps"
                    f"{limit} the oldest go first), so the chain's context cannot be rebuilt.",
                    type="invalid_request", code="previous_response_not_found",
                    param="previous_response_id",
                )
            return found
        return self._parent

    def chain(self) -> list[Stored]:
        """This response and its ancestors, newest first, up to the first that keeps the
        context before it (``prior``) or has no parent."""
        chain: list[Stored] = []
        node: Stored | None = self
        while node is not None:
            chain.append(node)
            if node.prior is not None:
                break
            node = node.parent
        return chain

    @property
    def context(self) -> list[Json]:
        """The ancestors' inputs and outputs, oldest first, then its own input."""
        chain = self.chain()
        items: list[Json] = list(chain[-1].prior or [])
        for node in reversed(chain[1:]):
            items += node.input
            items += node.response["output"]
        items += self.input
        return items

    @property
    def response(self) -> Json:
        if self._response is None:
            assert self._raw is not None
            self._response = json.loads(self._raw)
        return self._response

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = encode_json(self.response).encode()
        return self._raw

    @property
    def size(self) -> int:
        """The length of ``encode()``, counted once, without making the record's bytes."""
        if self._encoded is not None:
            return len(self._encoded)
        if self._size is None:
            head = self.header()  # its UTF-8 length: its length when it is ASCII
            self._size = (len(head) if head.isascii() else len(head.encode())) + 1 + len(
                self._raw if self._raw is not None else self.raw)
        return self._size

    def encode(self) -> bytes:
        """Its bytes in a store: a JSON header line, then the Response JSON; made again at
        each call, unless it was decoded from them or kept as them (``ResponseStore``)."""
        if self._encoded is not None:
            return self._encoded
        # compact JSON holds no raw line break: the first one ends the header
        raw = self._raw if self._raw is not None else self.raw  # (no property call)
        return (self.header() + "\n").encode() + raw  # one copy of raw

    def _changed(self) -> None:
        """Its header changed: its bytes are made again, and counted again."""
        self._encoded = self._size = None

    def header(self) -> str:
        """Its header line: ``encode_json`` of ``{"parent", "input", "context_tokens"}``, then
        ``prior``, ``owner``, ``extensions`` and ``deleted`` when set, written key by key (the
        whole dict's text, tests/test_store.py holds it, without the encoder's walk)."""
        tokens = self.context_tokens
        head = (f'{{"parent":{"null" if self.parent_id is None else encode_json(self.parent_id)}'
                f',"input":{self._input_json or encode_json(self.input)},"context_tokens":'
                f'{repr(tokens) if type(tokens) is int else encode_json(tokens)}')
        if self.prior is not None:
            head += ',"prior":' + encode_json(self.prior)
        if self.owner is not None:
            head += ',"owner":' + encode_json(self.owner)
        if self.extensions:
            head += ',"extensions":' + encode_json(self.extensions)
        if self.deleted:
            head += ',"deleted":true'
        return head + "}"

    @classmethod
    def decode(cls, value: bytes, response_id: str | None = None,
               store: ResponseStore | None = None) -> Stored:
        """A stored response from its bytes; its parent is read from ``store`` when asked."""
        head, _, raw = value.partition(b"\n")
        header = json.loads(head)
        stored = cls(None, header["input"], raw=raw,
                     context_tokens=int(header.get("context_tokens", 0)),
                     owner=header.get("owner"), extensions=header.get("extensions"))
        stored.parent_id, stored.prior = header.get("parent"), header.get("prior")
        stored.deleted = bool(header.get("deleted", False))
        stored.id, stored._store, stored._encoded = response_id, store, value
        return stored


class ResponseStore:
    """Stored responses by id, oldest first, as bytes in a ``StoreBackend`` (kind
    ``"response"``); past ``limit`` responses or ``max_bytes`` (their encoded size), the oldest
    go. Without a backend, a memory one of its own with those caps.

    On a ``MemoryBackend`` a response is kept as the ``Stored`` value itself (``put_value``,
    counted at its exact ``size``), and ``get`` gives that value back: its bytes are made only
    when something reads the backend's bytes (a page, a compare, a rewrite). A record read as
    bytes (from an SQLite file, Redis, or one rewritten by ``bury`` or ``change``) is decoded,
    and the ones read most recently are kept decoded (at most ``limit`` of them, and
    ``DECODED_BYTES`` of their bytes), so that a long chain is not parsed again at every turn;
    one is used only while the backend still holds the very bytes it was decoded from.
    ``ttl``: the seconds a response (and its tombstone) is kept after its last write."""

    DECODED_BYTES = 32 * 1024 * 1024

    def __init__(self, limit: int = 2000, max_bytes: int = 128 * 1024 * 1024, *,
                 backend: StoreBackend | None = None, ttl: float | None = None) -> None:
        self.limit = limit
        self.ttl = ttl
        self.max_bytes = max_bytes
        if backend is None:
            backend = MemoryBackend(max_keys=limit, max_bytes=max_bytes)
        self.backend: StoreBackend = backend
        # a memory backend (not one shared by other processes, ``Holding``) holds each response
        # as its ``Stored`` value: its bytes are made only when something reads them as bytes
        self._values = backend if type(backend) is MemoryBackend else None
        # each one's bytes are those it was decoded from (``encode`` gives them back, kept)
        self._decoded: Bounded[str, Stored] = Bounded(limit, self.DECODED_BYTES,
                                                      lambda stored: len(stored.encode()))
        self._lock = threading.Lock()  # of the decoded ones (the backend has its own)
        # the ids of its responses still being written (``ormock.engine.stateful.Generating``)
        self.generating: set[str] = set()

    def keep(self, response_id: str, stored: Stored) -> None:
        """Store a response; a parent that lives elsewhere (another store, or none) is not
        linked to: the context before it is kept with it instead."""
        parent = stored._parent
        if parent is not None and parent._store is not self and stored.prior is None:
            stored.prior = parent.context + parent.response["output"]
            stored.parent_id = None
            stored._changed()
        stored.id = response_id
        values = self._values
        if values is not None:
            stored._store = self
            if stored.parent_id is not None:
                stored._parent = None  # read through the store from now on
            stored.size  # noqa: B018 (counted now, outside the backend's lock)
            values.put_value(_KIND, response_id, stored, self.ttl)
            return
        value = stored._encoded = stored.encode()
        self.backend.put(_KIND, response_id, value, self.ttl)
        stored._store = self
        if stored.parent_id is not None:
            stored._parent = None  # read through the store from now on
        self._remember(response_id, stored, len(value))

    def get(self, response_id: str, default: Stored | None = None) -> Stored | None:
        values = self._values
        if values is None:
            value = self.backend.get(_KIND, response_id)
        else:
            found = values.get_value(_KIND, response_id)
            if type(found) is Stored and found._store is self:
                return found  # kept by this store (another's on the same keys: read as bytes)
            value = found if found is None or isinstance(found, bytes) else found.encode()
        if value is None:
            return default
        with self._lock:
            found = self._decoded.get(response_id)  # a use: the most recent now
            if found is not None and (found._encoded is value or found._encoded == value):
                return found
        stored = Stored.decode(value, response_id, self)
        self._remember(response_id, stored, len(value))
        return stored

    def visible(self, response_id: str, owner: str | None) -> Stored | None:
        """The response as its owner sees it: None when absent, deleted (``bury``), or
        created with another API key (``owner``: the sha256 of the caller's key)."""
        if self.buried(response_id):
            return None
        found = self.get(response_id)
        if found is None or found.deleted or found.owner != owner:
            return None
        return found

    def bury(self, response_id: str) -> None:
        """Delete a response for its clients, leaving a tombstone (kind ``"tombstone"``): the
        id answers 404 from now on and cannot be continued, while the record stays for the
        children that already continue it (their context is rebuilt through it). The record
        is marked too, so that it stays buried should the caps drop its tombstone first."""
        self.backend.put(_TOMBSTONE, response_id, b"", ttl=self.ttl)
        while True:
            value = self.backend.get(_KIND, response_id)
            if value is None:
                return
            marked = Stored.decode(value, response_id, self)
            if marked.deleted:
                return
            marked.deleted = True
            marked._changed()
            if self._rewrite(response_id, value, marked.encode()):
                return

    def buried(self, response_id: str) -> bool:
        return self.backend.get(_TOMBSTONE, response_id) is not None

    def update(self, response_id: str, response: Json) -> bool:
        """Replace the Response JSON of a stored response (its header, so its chain and owner,
        kept): whether it was still stored. Atomic against another update of it."""
        return self.change(response_id, lambda _: response) is not None

    def change(self, response_id: str, change: Callable[[Json], Json | None]) -> Json | None:
        """Replace the Response JSON with ``change(current)`` unless that is None (leave it),
        atomically (compare-and-set: of racing changes, each sees the one before it): the
        Response stored now, or None when the response is not stored."""
        while True:
            old = self.backend.get(_KIND, response_id)
            if old is None:
                return None
            head, _, raw = old.partition(b"\n")
            current: Json = json.loads(raw)
            new = change(current)
            if new is None:
                return current
            if self._rewrite(response_id, old, head + b"\n" + encode_json(new).encode()):
                return new

    def _rewrite(self, response_id: str, old: builtins.bytes, new: builtins.bytes) -> bool:
        """Replace a record if it still is ``old`` (it becomes the newest of the kind)."""
        if not self.backend.compare_and_set(_KIND, response_id, old, new, ttl=self.ttl):
            return False
        self._forget(response_id)
        return True

    def _remember(self, response_id: str, stored: Stored, size: int) -> None:
        """Keep ``stored`` (``size``: its bytes in the backend) decoded."""
        with self._lock:
            if size > self.DECODED_BYTES:
                self._decoded.pop(response_id, None)
            else:
                self._decoded[response_id] = stored

    def pop(self, response_id: str, default: Any = None) -> Any:
        found = self.get(response_id)
        self._forget(response_id)
        if found is None or not self.backend.delete(_KIND, response_id):
            return default
        return found

    def _forget(self, response_id: str) -> None:
        with self._lock:
            self._decoded.pop(response_id, None)

    def start(self) -> int:
        """Count a start of an engine on this store: how many came before since it was last
        cleared (0 on a fresh store, 1 after a restart on the same file, ...)."""
        while True:
            found = self.backend.get(_META, "starts")
            before = int(found) if found is not None else 0
            if self.backend.compare_and_set(_META, "starts", found, str(before + 1).encode()):
                return before

    def clear(self) -> None:
        """Forget every stored response of this namespace (and its other kinds' keys)."""
        self.backend.clear()
        with self._lock:
            self._decoded.clear()

    def __getitem__(self, response_id: str) -> Stored:
        found = self.get(response_id)
        if found is None:
            raise KeyError(response_id)
        return found

    def __contains__(self, response_id: object) -> bool:
        if not isinstance(response_id, str):
            return False
        values = self._values
        found = (self.backend.get(_KIND, response_id) if values is None
                 else values.get_value(_KIND, response_id))
        return found is not None

    def items(self) -> Iterator[tuple[str, Stored]]:
        """Every stored response, oldest first (page by page)."""
        for key, value in self._pages():
            yield key, Stored.decode(value, key, self)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self._pages())

    def keys(self) -> set[str]:
        """The ids it holds."""
        return set(self)

    def values(self) -> Iterator[Stored]:
        return (stored for _, stored in self.items())

    def __len__(self) -> int:
        return sum(1 for _ in self._pages())

    @property
    def bytes(self) -> int:
        """The bytes its responses take in the backend."""
        return sum(len(value) for _, value in self._pages())

    def _pages(self) -> Iterator[tuple[str, builtins.bytes]]:
        after: str | None = None
        while True:
            page = self.backend.list(_KIND, after=after, limit=500)
            yield from page
            if len(page) < 500:
                return
            after = page[-1][0]
