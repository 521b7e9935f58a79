"""Which recorded interaction answers a request.

A request matches an interaction on method, path (and query) and body, with the JSON paths a
user tells to ignore left out on both sides (``metadata``, ``user``, ``prompt_cache_key``,
``input[*].output``). How interactions answer is the player's ``order`` (``ORDERS``): with
``"any"`` (the default) each interaction answers once, in recorded order: identical requests of
an agent loop get their answers in the order they were recorded (vcrpy 9's default). With
``"recorded"`` a request must match the next unused interaction. With ``"repeat"`` (vcrpy's
``allow_playback_repeats=True``, as its ``Cassette.play_response``) a request takes the first
interaction it matches, played or not, as often as it comes: a later identical recording is
never played. Ids are never rewritten, so a follow-up naming a recorded
``previous_response_id`` or ``call_id`` matches as it is.

Across workers and replicas on one store (``--workers``, ``--store redis://...``) a player has
``claims``: "interaction k was played" is a count in the store (``(tag, "played", k)``, moved by
its atomic ``incr``), and only the request that makes it 1 plays k; one that loses the race
marks k played and looks again. ``used`` is then what this process knows: an interaction
another worker played is found out when this one claims it (``order="recorded"`` reads the
next one's count first), and before a miss is reported. With ``order="repeat"`` every play
is such an ``incr`` and none is lost: the count is how often every worker played k. Without
``claims`` (one process) a play counts nothing in a store.

A miss names the closest interaction and shows the differences, a JSON diff by path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from urllib.parse import parse_qsl, urlsplit

from ormock.cassette.differences import body_differences, json_diff
from ormock.cassette.model import Cassette, Interaction, RecordedRequest
from ormock.cassette.redact import REDACTED, parse_path
from ormock.protocol.depth import loads
from ormock.protocol.secrets import mask_query
from ormock.scenario.counters import Counters

__all__ = [
    "MATCHERS",
    "ORDERS",
    "ORMOCK_MATCH_ON",
    "VCR_MATCH_ON",
    "CassetteMiss",
    "Player",
    "json_diff",
    "match_on_of",
    "order_of",
]

Order = Literal["any", "recorded", "repeat"]
# how a cassette's interactions answer (``--cassette-order``, ``?order=``, ``cassette_order``,
# ``use_cassette(order=...)``), with what each means
ORDERS: dict[str, str] = {
    "any": "a request takes the first unused interaction it matches, each played once",
    "recorded": "a request must match the next unused interaction",
    "repeat": "a request takes the first interaction it matches, played or not, as often "
              "as it comes: vcrpy's allow_playback_repeats",
}
_MISSING = object()

# what a request is compared on: an ormock cassette's own (its body, JSON-aware, with the ignored
# paths left out), and vcrpy's default ``match_on`` for a vcrpy cassette
ORMOCK_MATCH_ON = ("method", "path", "query", "body")
VCR_MATCH_ON = ("method", "scheme", "host", "port", "path", "query")
# the matchers known by name: vcrpy's (``uri`` is scheme, host, port, path and query; ``body``
# compares JSON documents by path, ``raw_body`` the exact text; ``headers`` every header)
MATCHERS = ("method", "scheme", "host", "port", "path", "query", "uri", "body", "raw_body",
            "headers")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def order_of(value: object) -> Order:
    """``value`` as an ``Order``; a ``ValueError`` naming each order and what it does."""
    if isinstance(value, str) and value in ORDERS:
        return cast(Order, value)
    known = [f"{name!r} ({means})" for name, means in ORDERS.items()]
    raise ValueError(f"order must be {', '.join(known[:-1])} or {known[-1]}, not {value!r}")


def match_on_of(cassette: Cassette) -> tuple[str, ...]:
    """What requests are compared on for ``cassette``: its own ``match_on``, else vcrpy's
    default for a vcrpy cassette and ormock's for ormock's."""
    if cassette.match_on is not None:
        return cassette.match_on
    return VCR_MATCH_ON if cassette.origin == "vcr" else ORMOCK_MATCH_ON


def _origin_parts(origin: str | None) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of ``https://host[:port]``; None when unknown."""
    if not origin:
        return None
    parts = urlsplit(origin)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
    except ValueError:
        port = 0
    return scheme, (parts.hostname or "").lower(), port


def _strip(value: Any, path: tuple[str, ...]) -> Any:
    if not path:
        return _MISSING
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        keys = value if head == "*" else [head] if head in value else []
        out = dict(value)
        for key in keys:
            stripped = _strip(value[key], rest)
            if stripped is _MISSING:
                out.pop(key)
            else:
                out[key] = stripped
        return out
    if isinstance(value, list):
        if head == "*":
            return [v for v in (_strip(item, rest) for item in value) if v is not _MISSING]
        if head.isdigit() and int(head) < len(value):
            index = int(head)
            stripped = _strip(value[index], rest)
            return [*value[:index], *([] if stripped is _MISSING else [stripped]),
                    *value[index + 1:]]
    return value


@dataclass
class CassetteMiss(LookupError):
    """No unused interaction matches; ``closest`` the nearest one and how it differs."""

    request: str
    closest: Interaction | None = None
    index: int | None = None
    differences: list[str] = field(default_factory=list)
    file: str | None = None
    used_up: bool = False
    played: bool = False  # the closest one was played already
    reason: str | None = None  # why no interaction could answer, when it is not a near miss
    vcr: bool = False  # the cassette is vcrpy's (recorded with pytest-recording's options)

    @property
    def how_to_record(self) -> str:
        if self.vcr:
            return "--record-mode=new_episodes with pytest-recording or ormock_vcr"
        return "ormock record, or --ormock-record=new_episodes in pytest"

    def describe(self) -> str:
        head = f"no recorded interaction in {self.file or 'the cassette'} matches {self.request}"
        if self.reason is not None:
            return f"{head}: {self.reason}"
        if self.closest is None or self.index is None:
            return f"{head}: the cassette has no interaction for it"
        where = f"interaction {self.index + 1}"
        if self.closest.line is not None:
            where += f" (line {self.closest.line})"
        if self.used_up:
            return (f"{head}: {where} matches but was already played; record the repeat "
                    f"({self.how_to_record}) or send it fewer times")
        played = " (played already)" if self.played else ""
        return f"{head}; closest is {where}{played}: " + "; ".join(self.differences)

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class _Sent:
    method: str
    target: str
    body: Any
    origin: str | None
    headers: dict[str, str] | None


# (index, rank, differences): the closest interaction so far
_Best = tuple[int, tuple[int, int, int], list[str]]


def _closer(best: _Best | None, index: int, recorded: RecordedRequest, sent: _Sent,
            differences: list[str]) -> _Best:
    """The closer of ``best`` and this interaction: on the same method and path first, then
    the one with the fewest differences."""
    rank = (recorded.method != sent.method, recorded.path != sent.target.partition("?")[0],
            len(differences))
    if best is None or rank < best[1]:
        return (index, rank, differences)
    return best


def _sent_query(recorded: str, sent: str) -> list[tuple[str, str]]:
    """The sent query's parameters, sorted, each the recorder wrote ``REDACTED`` (a key in the
    query: ``ormock.protocol.secrets.mask_query``) taken as that: any key matches."""
    redacted = {name for name, value in parse_qsl(recorded) if value == REDACTED}
    return sorted((name, REDACTED if name in redacted else value)
                  for name, value in parse_qsl(sent))


def _body_of(request: RecordedRequest) -> Any:
    return request.body if request.body is not None else request.text


@dataclass
class Player:
    """Plays a cassette's interactions; one ``Player`` per served cassette (per namespace)."""

    cassette: Cassette
    ignore: tuple[tuple[str, ...], ...] = ()
    order: Order = "any"
    used: list[bool] = field(default_factory=list)
    claims: Counters | None = None  # shared across processes: who played what
    tag: str = ""  # the claims' name: the cassette's content hash and its load
    paths: tuple[str, ...] = ()  # ``ignore`` as given
    plays: list[int] = field(default_factory=list)  # how often this process played each

    def __post_init__(self) -> None:
        self.used = [False] * len(self.cassette.interactions)
        self.plays = [0] * len(self.cassette.interactions)

    @classmethod
    def of(cls, cassette: Cassette, ignore: Iterable[str] = (), order: Order = "any",
           claims: Counters | None = None, tag: str = "") -> Player:
        paths = tuple(ignore)
        return cls(cassette, tuple(parse_path(p) for p in paths), order, claims=claims,
                   tag=tag, paths=paths)

    def _claim(self, index: int) -> bool:
        """Mark ``index`` played; whether this request plays it (not another worker; in
        ``repeat`` order always: a play takes nothing from another)."""
        self.used[index] = True
        count = 1 if self.claims is None else self.claims.add((self.tag, "played", index))
        if count == 1 or self.order == "repeat":
            self.plays[index] += 1
            return True
        return False

    def unplay(self, index: int) -> None:
        """Take back a play of ``index`` (its answer never reached the client whole): the next
        request that matches it plays it. In one process only: a shared store's claims only
        count up."""
        if self.claims is None and self.plays[index] > 0:
            self.plays[index] -= 1
            self.used[index] = self.plays[index] > 0

    def counts(self) -> list[int]:
        """How often each interaction was played, by every worker on a shared store (vcrpy's
        ``play_counts``): once at most, but in ``repeat`` order."""
        self.refresh()
        if self.order != "repeat":
            return [int(used) for used in self.used]
        if self.claims is None:
            return list(self.plays)
        return [self.claims.value((self.tag, "played", index)) if used else 0
                for index, used in enumerate(self.used)]

    def _played_elsewhere(self, index: int) -> bool:
        if self.claims is None or self.claims.value((self.tag, "played", index)) == 0:
            return False
        self.used[index] = True
        return True

    def refresh(self) -> bool:
        """Learn what other workers played (one read per interaction not known played);
        whether anything was new. Nothing to learn without shared claims."""
        if self.claims is None:
            return False
        return any([self._played_elsewhere(i) for i in self.unused()])

    def _key(self, body: Any) -> Any:
        for path in self.ignore:
            stripped = _strip(body, path)
            body = None if stripped is _MISSING else stripped
        return body

    def _differences(self, recorded: RecordedRequest, method: str, target: str,
                     body: Any, origin: str | None = None,
                     headers: dict[str, str] | None = None) -> list[str]:
        """How a sent request differs from ``recorded`` on what the cassette matches on, in
        vcrpy's order; scheme, host and port only where the request says where it was going
        (``origin``: routed in process; a client pointed at ormock has only ormock's)."""
        out: list[str] = []
        on = match_on_of(self.cassette)
        if "method" in on and recorded.method != method:
            out.append(f"method: recorded {recorded.method}, sent {method}")
        sent_at, recorded_at = _origin_parts(origin), _origin_parts(recorded.origin)
        if sent_at is not None and recorded_at is not None:
            for index, name in enumerate(("scheme", "host", "port")):
                if (name in on or "uri" in on) and sent_at[index] != recorded_at[index]:
                    out.append(f"{name}: recorded {recorded_at[index]}, sent {sent_at[index]}")
        path, _, query = target.partition("?")
        if ("path" in on or "uri" in on) and recorded.path != path:
            out.append(f"path: recorded {recorded.path}, sent {path}")
        if ("query" in on or "uri" in on) and \
                sorted(parse_qsl(recorded.query)) != _sent_query(recorded.query, query):
            out.append(f"query: recorded {recorded.query or '(none)'}, "
                       f"sent {mask_query(query) or '(none)'}")
        if "headers" in on and headers is not None:
            out += json_diff({k: v for k, v in recorded.headers.items()},
                             {k.lower(): v for k, v in headers.items()
                              if k.lower() in recorded.headers}, "headers")
        if "raw_body" in on:
            a, b = _body_of(recorded), body
            if a != b:
                out += body_differences(a, b)
        elif "body" in on:
            out += body_differences(self._key(_body_of(recorded)), self._key(body),
                                    self.cassette.match_lenient)
        return out

    def take(self, method: str, path: str, query: str, body: Any,
             socket: bool = False, origin: str | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, Interaction]:
        """The interaction that answers this request, marked used; or ``CassetteMiss``.
        ``origin``: the scheme, host and port the request was going to, when it says so."""
        sent = _Sent(method, f"{path}?{query}" if query else path, body, origin, headers)
        interactions = self.cassette.interactions
        while True:
            found, best = self._match(sent, socket)
            if found is not None:
                return found, interactions[found]
            if best is None or not self.refresh():  # nothing another worker played since
                break
        shown = f"{method} {path}?{mask_query(query)}" if query else f"{method} {path}"
        for index, interaction in enumerate(interactions):  # an exact match, played already
            if self.used[index] and not self._compare(interaction.request, sent):
                raise CassetteMiss(shown, interaction, index, [], self.cassette.file, True,
                                   vcr=self.cassette.origin == "vcr")
        if best is None:  # every interaction of this kind played: the closest of them
            for index, interaction in enumerate(interactions):
                if (interaction.socket is not None) == socket:
                    best = _closer(best, index, interaction.request, sent,
                                   self._compare(interaction.request, sent))
        if best is None:
            raise CassetteMiss(shown, file=self.cassette.file, vcr=self.cassette.origin == "vcr")
        closest, differences = best[0], best[2]
        raise CassetteMiss(shown, interactions[closest], closest, differences,
                           self.cassette.file, played=self.used[closest],
                           vcr=self.cassette.origin == "vcr")

    def _compare(self, recorded: RecordedRequest, sent: _Sent) -> list[str]:
        return self._differences(recorded, sent.method, sent.target, sent.body, sent.origin,
                                 sent.headers)

    def _match(self, sent: _Sent, socket: bool) -> tuple[int | None, _Best | None]:
        """The interaction this request plays (claimed), else None and the closest one it
        could have played with its differences."""
        interactions = self.cassette.interactions
        while True:
            again = self.order == "repeat"  # played ones answer again: vcrpy's repeats
            candidates = [i for i, used in enumerate(self.used) if (again or not used)
                          and (interactions[i].socket is not None) == socket]
            if self.order == "recorded":
                while candidates and self._played_elsewhere(candidates[0]):
                    del candidates[0]
                candidates = candidates[:1]
            best: _Best | None = None
            lost = False
            for index in candidates:
                differences = self._compare(interactions[index].request, sent)
                if not differences:
                    if self._claim(index):
                        return index, None
                    lost = True  # another worker played it: look again
                    break
                best = _closer(best, index, interactions[index].request, sent, differences)
            if not lost:
                return None, best

    def unused(self) -> list[int]:
        return [index for index, used in enumerate(self.used) if not used]

    def reset(self) -> None:
        self.used = [False] * len(self.used)
        self.plays = [0] * len(self.plays)


def request_body(raw: bytes) -> Any:
    """A request body as matching compares it: its JSON, or its text (also JSON nested past
    ``MAX_DEPTH``, as the recorder kept it: ``depth.loads``)."""
    try:
        return loads(raw)
    except ValueError:  # (too deep to read as well: ``depth.loads``)
        return raw.decode("utf-8", "replace")
