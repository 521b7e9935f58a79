"""``OrmockFixture``: what the ``ormock`` fixture gives a test. One isolated fake, reached at its
own ``base_url``; what it loads, what it heard, and questions about what it heard."""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ormock.engine.journal import JournalEntry
from ormock.pytest_plugin.backend import FakeBackend
from ormock.pytest_plugin.cassettes import FixtureCassettes
from ormock.pytest_plugin.conditions import describe, listing, mismatch, plural
from ormock.pytest_plugin.options import OrmockOptions
from ormock.pytest_plugin.session import OrmockSession

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI

    from ormock.engine.core import Engine
    from ormock.engine.verdict import Rules, Verdict
    from ormock.faults import Fault
    from ormock.scenario import Scenario
    from ormock.server.runner import OrmockServer

__all__ = ["API_KEY", "OrmockFixture"]

API_KEY = "sk-ormock-test"
_UNSET: Any = object()


class OrmockFixture:
    """One isolated fake provider: a namespace of the session's ormock server, or of the
    shared one of ``--ormock-url`` (``backend``: where it lives)."""

    def __init__(
        self,
        session: OrmockSession,
        backend: FakeBackend,
        options: OrmockOptions,
        *,
        test_path: Path | None = None,
        origin: str = "@pytest.mark.ormock",
        nodeid: str = "",
    ) -> None:
        self.namespace = backend.namespace
        self.options = options
        self._session = session
        self._backend = backend
        self._test_dir = test_path.parent if test_path is not None else None
        self._origin = origin  # how the opt-outs are spelled in after-test reports
        self._cassettes = FixtureCassettes(session, options, backend, test_path=test_path,
                                           nodeid=nodeid)
        self._closed = False
        self._clients: list[Any] = []

    # -- where it is -----------------------------------------------------------------------------
    @property
    def server(self) -> OrmockServer:
        """The session's server (shared by every fake; each has its own namespace); a local
        session's only."""
        server = self._session.server()
        _ = self._backend.root  # opens the namespace: requests may reach it from now
        return server

    @property
    def url(self) -> str:
        """The namespace's root: ``http://127.0.0.1:PORT/<namespace>`` (admin API under
        ``/_ormock/``)."""
        return f"{self._backend.root}/{self.namespace}"

    @property
    def base_url(self) -> str:
        """What to give an OpenAI client: ``http://127.0.0.1:PORT/<namespace>/v1``."""
        return f"{self._backend.root}/{self.namespace}/v1"

    @property
    def engine(self) -> Engine:
        """The engine behind this namespace (made on first use); a local fake's only."""
        return self._backend.engine()

    # -- configuring -----------------------------------------------------------------------------
    def configure(self) -> None:
        """Open the namespace with the fake's seed, speed and profile, then load its cassette,
        scenarios, faults and chaos (at setup, before any request)."""
        options = self.options
        profile = options.profile or (self._session.settings.profile
                                      if self._session.remote else None)
        self._backend.open({"seed": options.seed, "speed": options.speed,
                            "replay_speed": options.cassette_speed,
                            **({"profile": profile} if profile is not None else {})})
        if options.cassette is not None and options.cassette is not False:
            self._cassettes.use(options.cassette)
        for scenario in options.scenario:
            self.use(scenario)
        for fault in options.faults:
            self._add_fault(fault)
        if options.chaos is not None:
            from ormock.faults.chaos import Chaos

            self._backend.set_chaos(Chaos.parse(options.chaos))

    def use(self, source: Any = None, /, *, cassette: str | os.PathLike[str] | None = None
            ) -> Scenario | Fault | None:
        """Load into this fake, and return what was loaded:

        - a catalogue name (``"text"``) or a scenario file path (relative to the test file, then
          to the ``ormock_scenarios`` folder), or a mapping with ``steps``, or a ``Scenario``;
        - a fault: a mapping such as ``{"http_error": {"status": 429}}`` (with an optional
          ``when`` trigger), or a ``Fault``: applied to every reply from now on;
        - ``cassette=PATH``: a cassette (relative to the test file's folder) replayed before
          the scenarios; with ``--ormock-record`` recorded from the upstream (docs/pytest.md).
          Returns None.
        """
        __tracebackhide__ = True
        if cassette is not None:
            if source is not None:
                raise TypeError("ormock.use() takes a source or cassette=PATH, not both")
            self._cassettes.use(os.fspath(cassette))
            return None
        from ormock.scenario import ScenarioError

        try:
            return self._use(source)
        except ScenarioError as error:  # said where it is; ormock's own frames add nothing
            raise ScenarioError(error.message, file=error.file, line=error.line, key=error.key
                                ) from None

    def _use(self, source: Any) -> Scenario | Fault:
        from ormock.scenario import Scenario, load_scenario

        if isinstance(source, Scenario):
            return self._backend.load_scenario(source)
        if isinstance(source, (str, os.PathLike)):
            return self._backend.load_scenario(self._find(source))
        if isinstance(source, Mapping):
            if "steps" in source or "name" in source:
                return self._backend.load_scenario(load_scenario(source))
            return self._add_fault(source)
        from ormock.faults import Fault as FaultClass

        if isinstance(source, FaultClass):
            return self._add_fault(source)
        raise TypeError(
            "ormock.use() takes a catalogue name, a scenario file path, a scenario mapping (with "
            "'steps') or Scenario, a fault mapping ({'http_error': {'status': 429}}) or fault, "
            f"or cassette=PATH; not {source!r}"
        )

    def _find(self, source: str | os.PathLike[str]) -> Scenario:
        from ormock.scenario import ScenarioError, find_scenario
        from ormock.scenario.catalogue import load_file

        text = os.fspath(source)
        path = Path(text)
        folder = self._session.settings.scenarios_dir
        if isinstance(source, os.PathLike) or path.suffix in (".yaml", ".yml") or "/" in text:
            if path.is_absolute():
                candidates = [path]
            else:
                candidates = [base / path for base in (self._test_dir, folder) if base is not None]
            for candidate in candidates:
                if candidate.is_file():
                    return load_file(candidate.resolve())
            looked = ", ".join(str(c) for c in candidates)
            hint = "" if folder else " (set the ini option ormock_scenarios to add a folder)"
            raise ScenarioError(f"scenario file not found; looked for {looked}{hint}", file=text)
        return find_scenario(text, (folder,) if folder else ())

    # -- cassettes -------------------------------------------------------------------------------
    @property
    def default_cassette(self) -> Path:
        """``<test folder>/<ormock_cassette_dir>/<module>/<test>.yaml``: the cassette of
        ``cassette=True``."""
        return self._cassettes.default

    @property
    def recording(self) -> bool:
        """It records a cassette (a record mode, and a cassette to record)."""
        return self._cassettes.recording

    def settle(self, timeout: float = 10.0) -> None:
        """Wait (at most ``timeout`` s) until every forwarded request is recorded: its client
        can have the last byte before the server thread hands the interaction over."""
        self._cassettes.settle(timeout)

    def save_cassette(self) -> str | None:
        """After the test: write what it recorded (``new_episodes``: after what the file held);
        what went wrong, or None."""
        return self._cassettes.save()

    def _add_fault(self, spec: Any) -> Fault:
        from ormock.faults import Fault as FaultClass
        from ormock.faults import parse_fault

        return self._backend.inject(spec if isinstance(spec, FaultClass) else parse_fault(spec))

    def inject(self, fault: Fault | Mapping[str, Any] | str) -> Fault:
        """Apply a fault (a ``Fault``, or a spec such as ``{"http_error": {"status": 429}}``
        with an optional ``when``) to every reply from now on; returns it."""
        return self._add_fault(fault)

    def reset(self, *, scenarios: bool = False) -> None:
        """Start over: journal, stored responses, step counters; ``scenarios=True`` also
        unloads the scenarios and faults."""
        self._backend.reset(scenarios)

    # -- what it heard ---------------------------------------------------------------------------
    @property
    def requests(self) -> list[JournalEntry]:
        """Every request this fake received, oldest first: ``.path``, ``.headers`` (secrets
        masked), ``.json`` (the body), ``.status``, ``.response_id``, ``.scenario`` and ``.step``
        (what answered), ``.error``, ``.faults``, ``.events`` (``JournalEntry`` objects; on a
        shared server, read from its journal with ``JournalEntry.from_dict``)."""
        return [] if self._closed else self._backend.journal()

    @property
    def call_count(self) -> int:
        return len(self.requests)

    @property
    def last_request(self) -> JournalEntry:
        requests = self.requests
        if not requests:
            raise AssertionError(f"ormock fake {self.namespace!r} received no request")
        return requests[-1]

    def assert_called(self, times: int | None = None) -> None:
        """At least one request (``times=None``), or exactly ``times``."""
        __tracebackhide__ = True
        requests = self.requests
        if times is None and requests:
            return
        if times is not None and len(requests) == times:
            return
        wanted = "at least one request" if times is None else plural(times, "request")
        raise AssertionError(f"expected {wanted} to {self.base_url}, received "
                             f"{plural(len(requests), 'request')}{listing(requests)}")

    def assert_called_with(
        self,
        *,
        input_contains: str | None = None,
        tool_outputs: Sequence[str] | None = None,
        previous_response_id: str | None = _UNSET,
        model: str | None = None,
    ) -> None:
        """The last request: its input text contains ``input_contains``, it carries
        ``function_call_output`` items for every call id in ``tool_outputs``, it continues
        ``previous_response_id`` (``None``: continues nothing), it asks for ``model``."""
        __tracebackhide__ = True
        self._assert_match(False, input_contains, tool_outputs, previous_response_id, model)

    def assert_any_call(
        self,
        *,
        input_contains: str | None = None,
        tool_outputs: Sequence[str] | None = None,
        previous_response_id: str | None = _UNSET,
        model: str | None = None,
    ) -> None:
        """Like ``assert_called_with``, for any request rather than the last."""
        __tracebackhide__ = True
        self._assert_match(True, input_contains, tool_outputs, previous_response_id, model)

    def verdict(self, *, allow: Iterable[str] = (), rules: Rules | None = None) -> Verdict:
        """How the client coped with this test's faults, judged from the journal
        (``ormock.engine.verdict``): findings such as ignored Retry-After or a retry storm."""
        return self._backend.verdict(allow, rules)

    def assert_resilient(self, *, allow: Iterable[str] = (), rules: Rules | None = None
                         ) -> Verdict:
        """Fail unless the client coped well with this test's faults; the failure lists each
        finding and the ``allow=(...)`` that would accept it."""
        from ormock.engine.verdict import resilient

        allowed = tuple(allow)
        return resilient(self._backend.verdict(allowed, rules), allowed)

    def _assert_match(self, any_request: bool, input_contains: str | None,
                      tool_outputs: Sequence[str] | None, previous_response_id: str | None,
                      model: str | None) -> None:
        __tracebackhide__ = True
        requests = self.requests
        wanted: dict[str, Any] = {k: v for k, v in (("input_contains", input_contains),
                                    ("tool_outputs", tool_outputs), ("model", model))
                  if v is not None}
        if previous_response_id is not _UNSET:
            wanted["previous_response_id"] = previous_response_id
        if isinstance(tool_outputs, str):
            raise TypeError("tool_outputs is a list of call ids, e.g. ['call_1']")
        described = ", ".join(f"{k}={v!r}" for k, v in wanted.items()) or "anything"
        if not requests:
            raise AssertionError(f"expected a request with {described}; received none")
        candidates = requests if any_request else requests[-1:]
        reasons = [mismatch(entry, wanted) for entry in candidates]
        if any(not r for r in reasons):
            return
        if any_request:
            lines = [f"expected a request with {described}; none of the {len(requests)} matches:"]
        else:
            lines = [f"expected the last request to have {described}; it does not:"]
        for index, entry in enumerate(requests, 1):
            lines.append(f"  #{index} {describe(entry)}")
            if any_request or index == len(requests):
                lines.extend(f"      {reason}" for reason in mismatch(entry, wanted))
        raise AssertionError("\n".join(lines))

    # -- clients ---------------------------------------------------------------------------------
    def _client_options(self, options: dict[str, Any], http_client: Any) -> dict[str, Any]:
        options.setdefault("base_url", self.base_url)
        options.setdefault("api_key", API_KEY)
        options.setdefault("max_retries", 0)
        options.setdefault("timeout", 30.0)
        if "http_client" not in options:
            # the SDK's own HTTP client, with one TLS context per process: making a context
            # loads the CA store (~25 ms), which a fake on plain-HTTP loopback never uses
            options["http_client"] = http_client(verify=_tls_context())
        return options

    def openai(self, **options: Any) -> OpenAI:
        """An ``openai.OpenAI`` client pointed at this fake (closed after the test).

        Defaults: ``api_key="sk-ormock-test"``, ``max_retries=0`` (a fault surfaces at once and
        each call is one request; pass ``max_retries=N`` to test the SDK's retries),
        ``timeout=30``. Any keyword overrides them."""
        sdk = _openai_module()
        client: OpenAI = sdk.OpenAI(**self._client_options(options, sdk.DefaultHttpxClient))
        self._clients.append(client)
        return client

    def async_openai(self, **options: Any) -> AsyncOpenAI:
        """An ``openai.AsyncOpenAI`` client pointed at this fake (same defaults as ``openai()``;
        close it yourself, e.g. ``async with ormock.async_openai() as client``)."""
        sdk = _openai_module()
        client: AsyncOpenAI = sdk.AsyncOpenAI(
            **self._client_options(options, sdk.DefaultAsyncHttpxClient))
        return client

    # -- the end of the test ---------------------------------------------------------------------
    def close(self) -> None:
        """Close the clients it made and drop the namespace (its engine, journal, responses)."""
        if self._closed:
            return
        self._closed = True
        for client in self._clients:
            client.close()
        self._clients.clear()
        self._backend.close()

    def __repr__(self) -> str:
        started = self._session.started or self._session.remote
        where = self.base_url if started and not self._closed else f"/{self.namespace}/v1"
        return f"<OrmockFixture {where}>"


@functools.cache
def _tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


def _openai_module() -> Any:
    try:
        import openai
    except ImportError:
        raise RuntimeError("ormock.openai() and ormock.async_openai() need the openai package: "
                           "pip install openai (or point your own client at ormock.base_url)"
                           ) from None
    return openai
