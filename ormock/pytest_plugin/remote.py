"""A fake on a shared ``ormock serve`` (``--ormock-url``): a namespace of that server, opened,
configured, read and dropped through its admin API (``ormock.server.admin``).

Everything is checked here before it is sent (a scenario file is loaded, a fault parsed, a
cassette read), so a mistake is reported at its file and line as for a local fake; then it
goes as the admin API takes it: a scenario file as its YAML text, a mapping as JSON, a
cassette as ormock's YAML.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from ormock.engine.journal import JournalEntry

if TYPE_CHECKING:
    from ormock.cassette.matching import Order
    from ormock.cassette.model import Cassette
    from ormock.engine.core import Engine
    from ormock.engine.replays import Replays, Upstream
    from ormock.engine.verdict import Rules, Verdict
    from ormock.faults import Fault
    from ormock.faults.chaos import Chaos
    from ormock.scenario import Scenario

__all__ = ["RemoteBackend", "RemoteError"]


class RemoteError(RuntimeError):
    """The shared server refused a call, or did not answer."""


class RemoteBackend:
    """A namespace of the server at ``root``, reached with ``client`` (the session's)."""

    def __init__(self, client: httpx.Client, root: str, namespace: str) -> None:
        self.namespace = namespace
        self._client = client
        self._root = root
        self._admin = f"/{namespace}/_ormock"
        self._opened = False
        self._loaded: dict[str, Scenario] = {}  # by name: where their steps are, for reports

    @property
    def root(self) -> str:
        return self._root

    # -- the admin API ------------------------------------------------------------------------
    def _call(self, method: str, path: str, *, body: Any = None, text: str | None = None,
              params: Any = None, what: str) -> Any:
        headers = {"X-Ormock-Admin": "1"}
        content: bytes | None = None
        if text is not None:
            headers["Content-Type"] = "application/yaml"
            content = text.encode()
        elif body is not None:
            headers["Content-Type"] = "application/json"
            content = json.dumps(body).encode()
        try:
            answer = self._client.request(method, path, content=content, headers=headers,
                                          params=params)
        except httpx.HTTPError as error:
            raise RemoteError(f"{what}: the ormock server at {self._root} (--ormock-url) did "
                              f"not answer: {error}") from None
        try:
            data = answer.json()
        except ValueError:
            data = None
        if answer.is_error:
            message = data.get("error", {}).get("message") if isinstance(data, dict) else None
            raise RemoteError(f"{what}: the ormock server at {self._root} answered HTTP "
                              f"{answer.status_code}: {message or answer.text[:500]}")
        return data

    def open(self, settings: Mapping[str, Any]) -> None:
        self._call("POST", "/_ormock/namespaces", body={"name": self.namespace, **settings},
                   what=f"opening the namespace {self.namespace}")
        self._opened = True

    def engine(self) -> Engine:
        raise RuntimeError(
            f"ormock.engine is the engine of an in-process fake; this one is the namespace "
            f"{self.namespace!r} of the server at {self._root} (--ormock-url). Use "
            "ormock.use(...), ormock.inject(...), ormock.requests, ormock.verdict() and "
            "ormock.reset(), which work on both, or run without --ormock-url.")

    def load_scenario(self, scenario: Scenario) -> Scenario:
        source = Path(scenario.source) if scenario.source else None
        what = f"loading the scenario {scenario.name!r}"
        if source is not None and source.is_file():
            self._call("POST", f"{self._admin}/scenarios", text=source.read_text("utf-8"),
                       what=what)
        else:
            try:
                data = json.loads(json.dumps(scenario.data))
            except (TypeError, ValueError) as error:
                raise ValueError(
                    f"scenario {scenario.name!r} cannot be sent to the server of --ormock-url: "
                    f"it holds Python objects ({error}); give it as plain data (YAML/JSON "
                    "values), or run without --ormock-url") from None
            self._call("POST", f"{self._admin}/scenarios", body=data, what=what)
        self._loaded[scenario.name] = scenario
        return scenario

    def inject(self, fault: Fault) -> Fault:
        self._call("POST", f"{self._admin}/faults", body=fault.to_spec(),
                   what=f"adding the fault {fault}")
        return fault

    def set_chaos(self, chaos: Chaos) -> None:
        self._call("PUT", f"{self._admin}/chaos", body=str(chaos), what="setting chaos")

    def load_cassettes(self, path: Path, ignore: Sequence[str], order: Order
                       ) -> list[Cassette]:
        from ormock.cassette.fileformat import dump_cassette
        from ormock.engine.replays import cassettes_in

        cassettes = cassettes_in(path)  # read here: its mistakes said at its file and line
        for cassette in cassettes:
            # an ormock file goes as it is (its lines stay those reports name); a vcrpy one,
            # or each of a folder's, converted
            text = path.read_text("utf-8") if path.is_file() and cassette.origin == "ormock" \
                else dump_cassette(cassette)
            query = {"order": order, "file": cassette.file or str(path),
                     **({"ignore": ",".join(ignore)} if ignore else {})}
            self._call("POST", f"{self._admin}/cassettes", text=text, params=query,
                       what=f"loading the cassette {path}")
        return cassettes

    def record_to(self, upstream: Upstream) -> None:
        raise RuntimeError("--ormock-record cannot record through --ormock-url: the requests "
                           "reach the shared server, not this process; record without "
                           "--ormock-url")

    def replays(self) -> Replays | None:
        return None  # it never records (record_to)

    # -- reading --------------------------------------------------------------------------------
    def journal(self) -> list[JournalEntry]:
        if not self._opened:
            return []
        data = self._call("GET", f"{self._admin}/journal", what="reading the journal")
        return [JournalEntry.from_dict(row) for row in data["data"]]

    def leftovers(self) -> dict[str, Any]:
        if not self._opened:
            return {}
        found: dict[str, Any] = self._call("GET", f"{self._admin}/checks",
                                           what="reading the after-test checks")
        for row in found.get("unused_steps", []):  # the server read the text, not the file
            scenario = self._loaded.get(row.get("scenario"))
            step = next((s for s in scenario.steps if s.index == row.get("index")), None) \
                if scenario is not None else None
            if scenario is not None and step is not None:
                row["where"] = scenario.where(step)
        return found

    def verdict(self, allow: Iterable[str], rules: Rules | None) -> Verdict:
        from ormock.engine.verdict import CODES, Verdict

        codes = list(allow)
        unknown = sorted(set(codes) - set(CODES))
        if unknown:  # as judge says it
            raise ValueError(f"unknown verdict code {unknown[0]!r}; the codes are "
                             f"{', '.join(CODES)}")
        params: dict[str, str] = {"allow": ",".join(codes)} if codes else {}
        if rules is not None:
            params.update((f.name, str(getattr(rules, f.name))) for f in fields(rules))
        data = self._call("GET", f"{self._admin}/verdict", params=params,
                          what="reading the verdict")
        return Verdict.from_dict(data)

    def reset(self, scenarios: bool) -> None:
        self._call("POST", f"{self._admin}/reset",
                   params={"scenarios": "true" if scenarios else "false"},
                   what="resetting the fake")

    def close(self) -> None:
        if self._opened:
            self._opened = False
            self._call("DELETE", f"/_ormock/namespaces/{self.namespace}",
                       what=f"dropping the namespace {self.namespace}")
