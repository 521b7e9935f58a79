"""One ``@pytest.mark.vcr`` test's cassette, served by an ormock fake: what pytest-recording's
``vcr`` fixture gives a test, and the fake behind it.

``VcrCassette.open`` does what pytest-recording's ``use_cassette`` does: merges ``vcr_config``
and the markers, makes the path (``<vcr_cassette_dir>/<default_cassette_name>.<serializer>``,
the markers' positional arguments as more cassettes, relative to ``vcr_cassette_dir``), deletes
the cassette first in ``rewrite`` (then records as ``new_episodes``), builds a ``vcr.VCR`` and
lets the project configure it (``pytest_recording_configure``: its serializers, persisters).
The cassettes are read through the project's serializer into one ormock cassette, matched as
vcrpy matches them (its ``match_on``; with ``allow_playback_repeats`` in ``repeat`` order, the
first interaction a request matches answering it every time), and loaded into a fake of the
test's own (a namespace of the session's server). ``routed`` sends the SDK's requests there
(``transport``).

Recording: a request no interaction answers (every request, in ``all``) is relayed by the fake
to the host it was going to, with the client's own headers, and kept; after the test the new
interactions are redacted as every ormock cassette is (secret headers ``REDACTED``, a
key-shaped value refuses the write), passed through vcrpy's ``before_record_request`` and
``before_record_response`` of the merged settings (``filter_headers``, ...), and saved through
the project's persister and serializer after what the file held (``all``: in place of the ones
they re-record, as vcrpy 9 does).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from copy import deepcopy
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from ormock.pytest_plugin.session import SESSION
from ormock.pytest_plugin.transport import Route, routed

if TYPE_CHECKING:
    from ormock.cassette.matching import Order

__all__ = ["HONOURED", "VcrCassette"]

# the vcrpy settings served (anything else in vcr_config or a marker fails the test, named)
HONOURED = frozenset({
    "record_mode", "serializer", "match_on", "filter_headers", "filter_query_parameters",
    "filter_post_data_parameters", "before_record_request", "before_record_response",
    "before_record", "decode_compressed_response", "ignore_hosts", "ignore_localhost",
    "allowed_hosts", "path_transformer", "cassette_library_dir", "allow_playback_repeats",
    "additional_matchers",
})
_FORWARDS = {"once": "once", "new_episodes": "new_episodes", "all": "all"}


def _merged(config: Mapping[str, Any], markers: list[pytest.Mark]) -> dict[str, Any]:
    merged = deepcopy(dict(config))
    for marker in reversed(markers):
        merged.update(marker.kwargs)
    return merged


def _load_raw(persister: Any, path: str, serializer: Any) -> tuple[list[Any], list[Any]]:
    """vcrpy's requests and responses of one file, as its persister reads them."""
    if not os.path.exists(path):
        return [], []
    try:
        loaded = persister.load_cassette(path, serializer=serializer)
    except (ValueError, OSError):  # CassetteNotFoundError (empty), CassetteDecodeError
        return [], []
    return list(loaded[0]), list(loaded[1])


class VcrCassette:
    """What pytest-recording's ``vcr`` fixture gives: ``play_count``, ``play_counts``,
    ``all_played``, ``requests``, ``responses``, ``record_mode``, ``rewound``,
    ``write_protected``, ``len()``; and ``ormock``: the fake that answers (faults, journal)."""

    def __init__(self, fake: Any, path: str, mode: str, settings: dict[str, Any],
                 vcr_config: dict[str, Any], raw: tuple[list[Any], list[Any]]) -> None:
        self.ormock = fake
        self.path = path
        self.record_mode = mode
        self._settings = settings  # vcrpy's merged config (serializer, filters, ...)
        self._config = vcr_config
        self._old_requests, self._old_responses = raw
        self._origin: str | None = None
        self.rewound = bool(self._old_requests)

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def open(cls, request: pytest.FixtureRequest, name: str, folder: str, record_mode: str,
             markers: list[pytest.Mark], config: Mapping[str, Any],
             pytestconfig: pytest.Config) -> VcrCassette:
        from vcr import VCR

        merged = _merged(config, markers)
        unknown = sorted(set(merged) - HONOURED)
        if unknown:
            pytest.fail(f"ormock (ormock_vcr): the vcrpy setting{'s' if len(unknown) > 1 else ''}"
                        f" {', '.join(map(repr, unknown))} of vcr_config or @pytest.mark.vcr "
                        "cannot be served by an ormock fake; the ones served are "
                        f"{', '.join(sorted(HONOURED))}. Run this test with pytest-recording "
                        "(without ormock_vcr), or drop the setting.", pytrace=False)
        mode = str(merged.get("record_mode", record_mode))
        folder = os.fspath(merged.get("cassette_library_dir") or folder)  # vcrpy's, as there
        suffix = "." + str(merged.get("serializer", "yaml"))
        transform = VCR.ensure_suffix(suffix)
        if "path_transformer" in merged:
            transform = merged["path_transformer"]
        path = str(transform(os.path.join(folder, name)))
        if mode == "rewrite":
            if os.path.exists(path):
                os.remove(path)
            mode = "new_episodes"
        vcr = VCR(cassette_library_dir=folder, record_mode=mode)
        pytestconfig.hook.pytest_recording_configure(config=pytestconfig, vcr=vcr)
        settings = vcr.get_merged_config(**{k: v for k, v in merged.items()
                                             if k not in ("allowed_hosts", "record_mode")})
        extras = [p if os.path.isabs(p) else os.path.join(folder, p)
                  for marker in markers for p in map(str, marker.args)]
        fake = cls._fake(request)
        raw: tuple[list[Any], list[Any]] = ([], [])
        for file in dict.fromkeys([path, *extras]):  # every file's, as pytest-recording reads
            requests, responses = _load_raw(settings["persister"], file, settings["serializer"])
            raw[0].extend(requests)
            raw[1].extend(responses)
        cassette = cls(fake, path, mode, settings, merged, raw)
        cassette._load([path, *extras], merged)
        return cassette

    @staticmethod
    def _fake(request: pytest.FixtureRequest) -> Any:
        from ormock.pytest_plugin.fake import OrmockFixture
        from ormock.pytest_plugin.options import resolve

        session = request.config.stash[SESSION]
        if session.remote:
            pytest.fail("ormock (ormock_vcr): the vcr fakes are on the session's own server; "
                        "run without --ormock-url / ORMOCK_URL", pytrace=False)
        fake = OrmockFixture(session, session.backend(request.node.nodeid),
                             resolve(session.settings, {"strict": False}),
                             test_path=request.path, origin="@pytest.mark.vcr",
                             nodeid=request.node.nodeid)
        fake.configure()
        return fake

    def _load(self, paths: list[str], merged: Mapping[str, Any]) -> None:
        from ormock.cassette.fileformat import CassetteError
        from ormock.cassette.matching import MATCHERS
        from ormock.cassette.model import Cassette
        from ormock.cassette.vcr import from_vcr

        names = [*merged.get("match_on", ("method", "scheme", "host", "port", "path", "query")),
                 *merged.get("additional_matchers", ())]  # as vcrpy joins them
        custom = [m for m in names if not isinstance(m, str) or m not in MATCHERS]
        if custom:
            pytest.fail(f"ormock (ormock_vcr): match_on {custom!r}: an ormock fake matches on "
                        f"vcrpy's own matchers only ({', '.join(MATCHERS)})", pytrace=False)
        interactions: list[Any] = []
        seen: set[str] = set()
        for file in paths:
            if file in seen or not os.path.exists(file) or not os.path.getsize(file):
                continue
            seen.add(file)
            try:
                loaded = from_vcr(file, serializer=self._settings["serializer"],
                                  persister=self._settings["persister"])
            except (CassetteError, ValueError) as error:
                pytest.fail(f"ormock (ormock_vcr): the cassette {file} could not be read: "
                            f"{error}", pytrace=False)
            interactions += loaded.interactions
        cassette = Cassette(tuple(interactions), file=self.path, origin="vcr",
                            match_on=tuple(str(n) for n in names))
        # vcrpy's allow_playback_repeats: the first interaction a request matches answers,
        # played or not (``Cassette.play_response``); else each plays once
        order: Order = "repeat" if merged.get("allow_playback_repeats") else "any"
        if self.record_mode != "all":  # ``all`` replays nothing
            self.ormock.engine.use_cassette(cassette, order=order)
        else:
            self.ormock.engine.use_cassette(replace(cassette, interactions=()), order=order)

    # -- recording ---------------------------------------------------------------------------
    @property
    def recording(self) -> bool:
        """Whether what the cassette does not answer goes to the provider."""
        return self.record_mode in ("new_episodes", "all") or (
            self.record_mode == "once" and not self.rewound)

    @property
    def write_protected(self) -> bool:
        return not self.recording

    def _seen(self, origin: str) -> None:
        """A request routed to the fake was going to ``origin``: a recording fake relays to
        it (one provider per test)."""
        if not self.recording:
            return
        if self._origin is None:
            from ormock.engine.replays import Upstream

            self._origin = origin
            self.ormock.engine.record_to(Upstream(origin, None, _FORWARDS.get(
                self.record_mode, "new_episodes")))
        elif origin != self._origin:
            raise RuntimeError(f"ormock (ormock_vcr): this test records from {self._origin} "
                               f"and now asks {origin}; an ormock fake records from one host "
                               "per test")

    @contextmanager
    def routed(self) -> Iterator[VcrCassette]:
        server = self.ormock.server
        hosts = self._config.get("ignore_hosts", ())
        route = Route(server.url, self.ormock.namespace,
                      ignore_hosts=frozenset(h.lower() for h in hosts),
                      ignore_localhost=bool(self._config.get("ignore_localhost", False)),
                      seen=self._seen, own_thread=server.on_its_thread,
                      matched_as=None if self.recording else self._matched_as)
        with routed(route):
            yield self

    def _matched_as(self, method: str, uri: str, headers: dict[str, str], body: bytes) -> Any:
        """The request as vcrpy matches it when it only replays: through the merged
        ``before_record_request`` (``filter_headers``, ``filter_query_parameters``,
        ``filter_post_data_parameters``, ``ignore_hosts``, the project's own), as the cassette
        holds it; None for one that leaves it out (it goes out as it would). A recording fake
        gets the request as it was made: it relays that one to the provider."""
        from vcr.request import Request

        return self._settings["before_record_request"](Request(method, uri, body, headers))

    # -- what a test reads -------------------------------------------------------------------
    def _players(self) -> list[Any]:
        replays = self.ormock.engine.replays
        return list(replays.players)

    @property
    def play_counts(self) -> Counter[int]:
        return Counter({i: n for p in self._players() for i, n in enumerate(p.counts()) if n})

    @property
    def play_count(self) -> int:
        return sum(self.play_counts.values())

    @property
    def all_played(self) -> bool:
        return len(self.play_counts) == len(self._old_requests)

    def _new(self) -> tuple[list[Any], list[Any]]:
        """The interactions this test recorded so far, as vcrpy's requests and responses."""
        from ormock.cassette.model import Cassette
        from ormock.cassette.redact import Redaction
        from ormock.cassette.vcr import vcr_dict

        replays = self.ormock.engine.replays
        deadline = time.monotonic() + 10.0  # the client can have the last byte before the
        while replays.pending > 0 and time.monotonic() < deadline:  # server hands it over
            time.sleep(0.002)
        interactions = replays.new_interactions()
        if not interactions:
            return [], []
        cassette = Redaction().cassette(Cassette(tuple(interactions), upstream=self._origin))
        data, _ = vcr_dict(cassette, self._origin)
        requests, responses = [], []
        for req, resp in zip(data["requests"], data["responses"], strict=True):
            filtered = self._settings["before_record_request"](req)
            answer = self._settings["before_record_response"](deepcopy(resp)) if filtered \
                else None
            if filtered and answer is not None:
                requests.append(filtered)
                responses.append(answer)
        return requests, responses

    @property
    def requests(self) -> list[Any]:
        return [*self._old_requests, *self._new()[0]]

    @property
    def responses(self) -> list[Any]:
        return [*self._old_responses, *self._new()[1]]

    def __len__(self) -> int:
        return len(self.requests)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"the vcr fixture of ormock's mode (ormock_vcr) has no {name!r}: it gives "
            "play_count, play_counts, all_played, requests, responses, record_mode, rewound, "
            "write_protected, len() and ormock (the fake: inject, requests, verdict); run this "
            "test with pytest-recording (without ormock_vcr) for vcrpy's own Cassette")

    # -- after the test ----------------------------------------------------------------------
    def close(self) -> str | None:
        """Save what was recorded (as vcrpy saves: only when something was), drop the fake;
        what went wrong, or None."""
        try:
            return self._save() if self.recording else None
        finally:
            self.ormock.close()

    def _save(self) -> str | None:
        from vcr.matchers import requests_match
        from vcr.serialize import serialize

        from ormock.cassette.redact import SecretFound, scan

        requests, responses = self._new()
        if not requests:
            return None
        old = list(zip(self._old_requests, self._old_responses, strict=True))
        if self.record_mode == "all":  # vcrpy 9: the re-recorded ones replace the old ones
            old = [(q, r) for q, r in old if not any(
                requests_match(new, q, self._settings["match_on"]) for new in requests)]
        data = {"requests": [q for q, _ in old] + requests,
                "responses": [r for _, r in old] + responses}
        serializer = self._settings["serializer"]
        try:
            leaks = scan(serialize({"requests": requests, "responses": responses},
                                   serializer))
            if leaks:
                raise SecretFound(self.path, leaks)
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            self._settings["persister"].save_cassette(self.path, data, serializer=serializer)
        except SecretFound as refusal:
            return f"ormock (ormock_vcr): the cassette {self.path} was not written: {refusal}"
        except (OSError, TypeError, ValueError) as error:
            return f"ormock (ormock_vcr): the cassette {self.path} could not be written: {error}"
        return None

