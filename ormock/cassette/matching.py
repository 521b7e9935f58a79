"""Which recorded interaction answers a request.

A request matches an interaction on method, path (and query) and body, with the JSON paths a
user tells to ignore left out on both sides (``metadata``, ``user``, ``prompt_cache_key``,
``input[*].output``). Each interaction answers once, in recorded order: identical requests of
an agent loop get their answers in the order they were recorded (vcrpy replays the first one
again). With ``order="recorded"`` a request must match the next unused interaction. Ids are
never rewritten, so a follow-up naming a recorded ``previous_response_id`` or ``call_id``
matches as it is.

Across workers and replicas on one store (``--workers``, ``--store redis://...``) a player has
``claims``: "interaction k was played" is a count in the store (``(tag, "played", k)``, moved by
its atomic ``incr``), and only the request that makes it 1 plays k; one that loses the race
marks k played and looks again. ``used`` is then what this process knows: an interaction
another worker played is found out when this one claims it (``order="recorded"`` reads the
next one's count first), and before a miss is reported. Without ``claims`` (one process) a
play counts nothing in a store.

A miss names the closest interaction and shows the differences, a JSON diff by path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from ormock.cassette.model import Cassette, Interaction, RecordedRequest
from ormock.cassette.redact import parse_path
from ormock.protocol.depth import loads
from ormock.protocol.hints import short
from ormock.scenario.counters import Counters

__all__ = ["CassetteMiss", "Player", "json_diff"]

Order = Literal["any", "recorded"]
_MISSING = object()


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


def json_diff(recorded: Any, sent: Any, path: str = "", limit: int = 8) -> list[str]:
    """The differences between two JSON values, one line per path."""
    out: list[str] = []

    def walk(a: Any, b: Any, where: str) -> None:
        if len(out) >= limit or a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in list(a) + [k for k in b if k not in a]:
                here = f"{where}.{key}" if where else str(key)
                if key not in b:
                    out.append(f"{here}: recorded {short(a[key])}, not sent")
                elif key not in a:
                    out.append(f"{here}: sent {short(b[key])}, not in the recording")
                else:
                    walk(a[key], b[key], here)
            return
        if isinstance(a, list) and isinstance(b, list):
            for index in range(max(len(a), len(b))):
                here = f"{where}[{index}]"
                if index >= len(b):
                    out.append(f"{here}: recorded {short(a[index])}, not sent")
                elif index >= len(a):
                    out.append(f"{here}: sent {short(b[index])}, not in the recording")
                else:
                    walk(a[index], b[index], here)
            return
        out.append(f"{where or '(body)'}: recorded {short(a)}, sent {short(b)}")

    walk(recorded, sent, path)
    return out


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

    def describe(self) -> str:
        head = f"no recorded interaction in {self.file or 'the cassette'} matches {self.request}"
        if self.closest is None or self.index is None:
            return f"{head}: the cassette has no interaction for it"
        where = f"interaction {self.index + 1}"
        if self.closest.line is not None:
            where += f" (line {self.closest.line})"
        if self.used_up:
            return (f"{head}: {where} matches but was already played; record the repeat "
                    "(--ormock-record=new_episodes) or send it fewer times")
        played = " (played already)" if self.played else ""
        return f"{head}; closest is {where}{played}: " + "; ".join(self.differences)

    def __str__(self) -> str:
        return self.describe()


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

    def __post_init__(self) -> None:
        self.used = [False] * len(self.cassette.interactions)

    @classmethod
    def of(cls, cassette: Cassette, ignore: Iterable[str] = (), order: Order = "any",
           claims: Counters | None = None, tag: str = "") -> Player:
        paths = tuple(ignore)
        return cls(cassette, tuple(parse_path(p) for p in paths), order, claims=claims,
                   tag=tag, paths=paths)

    def _claim(self, index: int) -> bool:
        """Mark ``index`` played; whether this request plays it (not another worker)."""
        self.used[index] = True
        return self.claims is None or self.claims.add((self.tag, "played", index)) == 1

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
                     body: Any) -> list[str]:
        out = []
        if recorded.method != method:
            out.append(f"method: recorded {recorded.method}, sent {method}")
        if recorded.target != target:
            out.append(f"path: recorded {recorded.target}, sent {target}")
        return out + json_diff(self._key(_body_of(recorded)), self._key(body))

    def take(self, method: str, path: str, query: str, body: Any,
             socket: bool = False) -> tuple[int, Interaction]:
        """The interaction that answers this request, marked used; or ``CassetteMiss``."""
        target = f"{path}?{query}" if query else path
        interactions = self.cassette.interactions
        while True:
            found, best = self._match(method, target, body, socket)
            if found is not None:
                return found, interactions[found]
            if best is None or not self.refresh():  # nothing another worker played since
                break
        shown = f"{method} {target}"
        for index, interaction in enumerate(interactions):  # an exact match, played already
            if self.used[index] and not self._differences(interaction.request, method, target,
                                                          body):
                raise CassetteMiss(shown, interaction, index, [], self.cassette.file, True)
        if best is None:  # every interaction of this kind played: the closest of them
            for index, interaction in enumerate(interactions):
                if (interaction.socket is not None) != socket:
                    continue
                differences = self._differences(interaction.request, method, target, body)
                if best is None or len(differences) < len(best[1]):
                    best = (index, differences)
        if best is None:
            raise CassetteMiss(shown, file=self.cassette.file)
        closest, differences = best
        raise CassetteMiss(shown, interactions[closest], closest, differences,
                           self.cassette.file, played=self.used[closest])

    def _match(self, method: str, target: str, body: Any, socket: bool
               ) -> tuple[int | None, tuple[int, list[str]] | None]:
        """The interaction this request plays (claimed), else None and the closest unused
        one with its differences."""
        interactions = self.cassette.interactions
        while True:
            candidates = [i for i, used in enumerate(self.used) if not used
                          and (interactions[i].socket is not None) == socket]
            if self.order == "recorded":
                while candidates and self._played_elsewhere(candidates[0]):
                    del candidates[0]
                candidates = candidates[:1]
            best: tuple[int, list[str]] | None = None
            lost = False
            for index in candidates:
                differences = self._differences(interactions[index].request, method, target,
                                                body)
                if not differences:
                    if self._claim(index):
                        return index, None
                    lost = True  # another worker played it: look again
                    break
                if best is None or len(differences) < len(best[1]):
                    best = (index, differences)
            if not lost:
                return None, best

    def unused(self) -> list[int]:
        return [index for index, used in enumerate(self.used) if not used]

    def reset(self) -> None:
        self.used = [False] * len(self.used)


def request_body(raw: bytes) -> Any:
    """A request body as matching compares it: its JSON, or its text (also JSON nested past
    ``MAX_DEPTH``, as the recorder kept it: ``depth.loads``)."""
    try:
        return loads(raw)
    except ValueError:  # (too deep to read as well: ``depth.loads``)
        return raw.decode("utf-8", "replace")
