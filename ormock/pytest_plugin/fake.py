"""``OrmockFixture``: what the ``ormock`` fixture gives a test. One isolated fake, reached at its
own ``base_url``; what it loads, what it heard, and questions about what it heard."""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ormock.pytest_plugin.cassettes import FixtureCassettes
from ormock.pytest_plugin.conditions import describe, listing, mismatch, plural
from ormock.pytest_plugin.options import OrmockOptions
from ormock.pytest_plugin.session import OrmockSession

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI

    from ormock.engine.core import Engine
    from ormock.engine.journal import JournalEntry
    from ormock.engine.verdict import Rules, Verdict
    from ormock.faults import Fault
    from ormock.scenario import Scenario
    from ormock.server.runner import OrmockServer

__all__ = ["API_KEY", "OrmockFixture"]

API_KEY = "sk-ormock-test"
_UNSET: Any = object()


class OrmockFixture:
    """One isolated fake provider: a namespace of the session's ormock server."""

    def __init__(
        self,
        session: OrmockSession,
        namespace: str,
        options: OrmockOptions,
        *,
        test_path: Path | None = None,
        origin: str = "@pytest.mark.ormock",
        nodeid: str = "",
    ) -> None:
        self.namespace = namespace
        self.options = options
        self._session = session
        self._test_dir = test_path.parent if test_path is not None else None
        self._origin = origin  # how the opt-outs are spelled in after-test reports
        self._cassettes = FixtureCassettes(session, options, lambda: self.engine,
                                           self._existing_engine, test_path=test_path,
                                           nodeid=nodeid)
        self._engine: Engine | None = None
        self._closed = False
        self._opened = False
        self._clients: list[Any] = []

    # -- where it is -----------------------------------------------------------------------------
    @property
    def server(self) -> OrmockServer:
        """The session's server (shared by every fake; each has its own namespace)."""
        server = self._session.server()
        if not self._opened and not self._closed:  # requests may reach the namespace from now
            server.namespaces.open(self.namespace)
            self._opened = True
        return server

    @property
    def url(self) -> str:
        """The namespace's root: ``http://127.0.0.1:PORT/<namespace>`` (admin API under
        ``/_ormock/``)."""
        return f"{self.server.url}/{self.namespace}"

    @property
    def base_url(self) -> str:
        """What to give an OpenAI client: ``http://127.0.0.1:PORT/<namespace>/v1``."""
        return f"{self.server.url}/{self.namespace}/v1"

    @property
    def engine(self) -> Engine:
        """The engine behind this namespace (made on first use)."""
        if self._closed:
            raise RuntimeError(f"ormock fake {self.namespace!r} is closed: its test has ended")
        if self._engine is None:
            self._engine = self.server.namespaces.get(self.namespace)
        return self._engine

    def _existing_engine(self) -> Engine | None:
        """The engine, if a request or a call made one (without making one)."""
        if self._engine is None and not self._closed and self._session.started:
            namespaces = self.server.namespaces
            if self.namespace in namespaces.names():
                self._engine = namespaces.get(self.namespace)
        return self._engine

    # -- configuring -----------------------------------------------------------------------------
    def configure(self) -> None:
        """Apply the options that change the engine (at setup, before any request)."""
        options = self.options
        if options.cassette is not None and options.cassette is not False:
            self._cassettes.use(options.cassette)
        settings = self._session.settings
        if not (options.scenario or options.faults or options.chaos or options.profile
                or options.seed != settings.seed or options.speed != settings.speed):
            return  # nothing to set: the engine is made by the first request, if any
        engine = self.engine
        if options.profile is not None:
            from ormock.protocol.profile import get_profile

            engine.profile = get_profile(options.profile)
        if engine.seed != options.seed or engine.speed != options.speed:
            engine.seed, engine.speed = options.seed, options.speed
            engine.reset(scenarios=False)
        for scenario in options.scenario:
            self.use(scenario)
        for fault in options.faults:
            self._add_fault(fault)
        if options.chaos is not None:
            from ormock.faults.chaos import Chaos

            engine.chaos = Chaos.parse(options.chaos)

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
        from ormock.scenario import Scenario

        if isinstance(source, Scenario):
            return self.engine.use(source)
        if isinstance(source, (str, os.PathLike)):
            return self.engine.use(self._find(source))
        if isinstance(source, Mapping):
            if "steps" in source or "name" in source:
                return self.engine.use(source)
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
        return self.engine.inject(spec)

    # -- what it heard ---------------------------------------------------------------------------
    @property
    def requests(self) -> list[JournalEntry]:
        """Every request this fake received, oldest first: ``.path``, ``.headers`` (secrets
        masked), ``.json`` (the body), ``.status``, ``.response_id``, ``.scenario`` and ``.step``
        (what answered), ``.error``, ``.faults``, ``.events``."""
        engine = self._existing_engine()
        return list(engine.journal) if engine is not None else []

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
        from ormock.engine.verdict import judge

        return judge(self.engine, allow=allow, rules=rules)

    def assert_resilient(self, *, allow: Iterable[str] = (), rules: Rules | None = None
                         ) -> Verdict:
        """Fail unless the client coped well with this test's faults; the failure lists each
        finding and the ``allow=(...)`` that would accept it."""
        from ormock.engine.verdict import assert_resilient

        return assert_resilient(self.engine, allow=allow, rules=rules)

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
        for client in self._clients:
            client.close()
        self._clients.clear()
        engine = self._existing_engine()
        if engine is not None:
            self._session.bad_replies.pop(engine, None)
        if engine is not None or self._opened:
            self._session.server().namespaces.drop(self.namespace)
        self._engine = None
        self._closed = True

    def __repr__(self) -> str:
        where = self.base_url if self._session.started else f"/{self.namespace}/v1"
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
