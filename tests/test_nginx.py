"""The nginx recipe of ``docs/scaling.md``, run as it is written there: Debian's nginx (a process
of the test's own, as the current user) in front of two ``ormock serve`` replicas on one
redis-server, driven through the openai SDK. A chain lands on both replicas and each one's
journal shows it; a paced stream and a stalled one reach the client event by event while the
replica is still writing them (nothing held back until the end); a WebSocket turn passes
through."""

from __future__ import annotations

import contextlib
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import openai
import pytest
from stores import RedisServer, free_port, serve

NGINX = "/usr/sbin/nginx"
DOC = Path(__file__).resolve().parent.parent / "docs" / "scaling.md"
KEY = "sk-" + "test-nginx"
# what the test changes in the recipe: the addresses (each must be there exactly once)
LISTEN = "listen 127.0.0.1:8080;"
REPLICAS = ("server 127.0.0.1:8787;", "server 127.0.0.1:8788;")

pytestmark = pytest.mark.skipif(not Path(NGINX).exists(),
                                reason=f"{NGINX} not found: apt-get install -y nginx")


def recipe() -> str:
    """The one ```nginx block of docs/scaling.md."""
    blocks = re.findall(r"^```nginx\n(.*?)^```$", DOC.read_text(), re.DOTALL | re.MULTILINE)
    assert len(blocks) == 1, f"{DOC} should hold one ```nginx block, not {len(blocks)}"
    text: str = blocks[0]
    return text


def configured(port: int, replicas: tuple[str, str]) -> str:
    """The recipe with its addresses replaced by the test's."""
    text = recipe()
    for old, new in [(LISTEN, f"listen 127.0.0.1:{port};"),
                     *((line, f"server {address};") for line, address in zip(REPLICAS, replicas,
                                                                             strict=True))]:
        assert text.count(old) == 1, f"the recipe in {DOC} no longer has {old!r} once"
        text = text.replace(old, new)
    return text


class Balanced(NamedTuple):
    url: str  # nginx's base URL, http://127.0.0.1:PORT/v1
    replicas: tuple[str, str]  # each replica's address, HOST:PORT, as nginx names it
    access_log: Path


def _address(base_url: str) -> str:
    return base_url.removeprefix("http://").removesuffix("/v1")


@contextlib.contextmanager
def nginx(folder: Path, replicas: tuple[str, str]) -> Iterator[tuple[int, Path]]:
    """nginx with the recipe in ``folder`` (its prefix: logs, temp and the pid are there) on a
    free port, once it accepts connections; stopped by pid at the end."""
    port = free_port()
    (folder / "logs").mkdir()
    (folder / "temp").mkdir()
    conf = folder / "ormock-nginx.conf"
    conf.write_text(configured(port, replicas))
    process = subprocess.Popen([NGINX, "-p", str(folder), "-c", str(conf), "-e", "stderr"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                assert process.stderr is not None
                raise AssertionError(f"nginx exited ({process.returncode}): "
                                     f"{process.stderr.read()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port),
                                                                        0.2):
                break
            assert time.monotonic() < deadline, "nginx did not listen within 30 s"
            time.sleep(0.05)
        yield port, folder / "logs" / "access.log"
    finally:
        process.terminate()  # SIGTERM: nginx's fast shutdown
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


@pytest.fixture(scope="module")
def balanced(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Balanced]:
    """nginx and its two replicas, for the tests of this module (each looks at its own
    requests only: by request id, by response id)."""
    store = redis_server.fresh_url()
    with serve("--store", store, "--seed", "1") as one, \
            serve("--store", store, "--seed", "1") as two:
        replicas = (_address(one.base_url), _address(two.base_url))
        with nginx(tmp_path_factory.mktemp("nginx"), replicas) as (port, access_log):
            yield Balanced(f"http://127.0.0.1:{port}/v1", replicas, access_log)


def _sdk(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0,
                         _strict_response_validation=True)


def _journal(replica: str) -> list[dict[str, Any]]:
    """``GET /_ormock/journal`` of one replica, asked directly (not through nginx)."""
    answer = httpx.get(f"http://{replica}/_ormock/journal", timeout=10)
    assert answer.status_code == 200, answer.text
    data: list[dict[str, Any]] = answer.json()["data"]
    return data


def _logged(access_log: Path, pattern: str) -> re.Match[str]:
    """The first line of nginx's access log matching ``pattern`` (a line is written once its
    request is done: waited for)."""
    deadline = time.monotonic() + 10
    while True:
        text = access_log.read_text() if access_log.exists() else ""
        found = re.search(pattern, text)
        if found:
            return found
        assert time.monotonic() < deadline, f"no access log line {pattern!r}:\n{text}"
        time.sleep(0.05)


def _upstream(access_log: Path, request_id: str) -> str:
    """The replica nginx's access log names for the request ``request_id``."""
    return _logged(access_log, rf"upstream=(\S+) id={re.escape(request_id)} ").group(1)


def test_a_chain_lands_on_both_replicas_and_each_journal_shows_it(balanced: Balanced) -> None:
    served: list[tuple[str, str, str]] = []  # (what, the replica, the request id)
    with _sdk(balanced.url) as sdk:
        raw = sdk.responses.with_raw_response.create(model="gpt-5",
                                                     input="Remember the word: tangerine.")
        first = raw.parse()
        served.append(("create", raw.headers["x-ormock-upstream"], raw.headers["x-request-id"]))
        previous = first
        for turn in ("What was the word?", "Say it twice."):
            raw = sdk.responses.with_raw_response.create(input=turn,
                                                         previous_response_id=previous.id)
            answer = raw.parse()
            assert answer.previous_response_id == previous.id
            assert answer.model == "gpt-5"  # inherited from a parent, whichever replica kept it
            served.append(("continue", raw.headers["x-ormock-upstream"],
                           raw.headers["x-request-id"]))
            previous = answer
        for response in (first, previous):  # retrieved, by one replica and then the other
            raw_got = sdk.responses.with_raw_response.retrieve(response.id)
            got = raw_got.parse()
            assert (got.id, got.output_text) == (response.id, response.output_text)
            served.append(("retrieve", raw_got.headers["x-ormock-upstream"],
                           raw_got.headers["x-request-id"]))
        items = sdk.responses.input_items.list(previous.id, order="asc").data
        assert items[0].to_dict()["content"][0]["text"] == "Remember the word: tangerine."
    # nginx's round robin spread them: both replicas served, and its access log agrees
    assert {replica for _, replica, _ in served} == set(balanced.replicas), served
    for _, replica, request_id in served:
        assert _upstream(balanced.access_log, request_id) == replica
    # each replica's journal (asked directly) has every create of the chain, whichever served
    created = {request_id for what, _, request_id in served if what != "retrieve"}
    for replica in balanced.replicas:
        journal = _journal(replica)
        ids = {entry["headers"].get("x-request-id") for entry in journal}
        assert created <= ids, (replica, created, ids)
        chain = [e for e in journal if e["headers"].get("x-request-id") in created]
        assert [e["response_status"] for e in chain] == ["completed"] * 3
    # the admin API is not reachable through the balancer
    refused = httpx.get(balanced.url.removesuffix("/v1") + "/_ormock/journal", timeout=10)
    assert refused.status_code == 403


def _finished(replica: str, response_id: str) -> dict[str, Any]:
    """The journal entry of ``response_id`` once the replica that wrote it recorded its end
    (after its last write, or once it saw the client leave)."""
    deadline = time.monotonic() + 15
    while True:
        entry = next(e for e in _journal(replica) if e["response_id"] == response_id)
        if entry["finished_at"] is not None:
            return entry
        assert time.monotonic() < deadline, f"the answer never ended: {entry}"
        time.sleep(0.05)


def test_a_paced_stream_passes_event_by_event(balanced: Balanced) -> None:
    """The catalogue's ``long-text`` paces its deltas (200 tokens a second, some 20 s in all):
    the client has read 30 of them while the replica is still writing (its journal entry not
    finished), then leaves, and the replica's journal says it saw the client go."""
    seen: list[str] = []
    response_id = ""
    with _sdk(balanced.url) as sdk, sdk.responses.create(
            model="ormock:long-text", input="Tell me everything.", stream=True) as stream:
        for event in stream:
            seen.append(event.type)
            if event.type == "response.created":
                response_id = event.response.id
            if seen.count("response.output_text.delta") == 30:
                break
        entries = [e for e in _journal(balanced.replicas[0]) if e["response_id"] == response_id]
        assert len(entries) == 1 and entries[0]["finished_at"] is None, entries
    entry = _finished(balanced.replicas[1], response_id)
    assert entry["ended"] == "client gone", entry
    sent = [e["type"] for e in entry["events"]]
    assert sent[:len(seen)] == seen  # what the client read is what the replica wrote
    assert "response.completed" not in sent


def test_a_websocket_turn_passes_through(balanced: Balanced) -> None:
    with _sdk(balanced.url) as sdk:
        with sdk.responses.connect() as connection:
            connection.response.create(model="gpt-5", input="Count to three.")
            events = []
            for event in connection:
                events.append(event)
                if event.type in ("response.completed", "response.failed", "error"):
                    break
            assert events[0].type == "response.created"
            assert events[-1].type == "response.completed", events[-1]
            made = events[-1].response
            # a second turn on the same connection continues the first
            connection.response.create(input="And then?", previous_response_id=made.id)
            for event in connection:
                if event.type in ("response.completed", "response.failed", "error"):
                    break
            assert event.type == "response.completed", event
            assert event.response.previous_response_id == made.id
        # stored: retrieved over HTTP through nginx, whichever replica takes it
        assert sdk.responses.retrieve(made.id).output_text == made.output_text
    # nginx logged the upgrade (101) and the replica it passed it to, once it closed
    upgraded = _logged(balanced.access_log, r'"GET /v1/responses HTTP/1.1" 101 .*upstream=(\S+)')
    assert upgraded.group(1) in balanced.replicas


def test_a_stalled_stream_shows_what_came_before_the_stall(balanced: Balanced) -> None:
    """The catalogue's ``stall``: four events, then nothing until the client leaves. They reach
    the client through nginx while the replica is in the stall (its journal entry unfinished):
    nothing holds them back until the stream ends."""
    with openai.OpenAI(base_url=balanced.url, api_key=KEY, max_retries=0,
                       timeout=20.0) as sdk, \
            sdk.responses.create(model="ormock:stall", input="Go quiet.", stream=True) as stream:
        seen = []
        for event in stream:
            seen.append(event)
            if len(seen) == 4:
                break
        assert seen[0].type == "response.created"
        response_id = seen[0].response.id
        stalled = [e for e in _journal(balanced.replicas[1]) if e["response_id"] == response_id]
        assert len(stalled) == 1 and stalled[0]["finished_at"] is None, stalled
    assert [e.type for e in seen] == ["response.created", "response.in_progress",
                                      "response.output_item.added", "response.content_part.added"]
    entry = _finished(balanced.replicas[0], response_id)  # the client left: nginx closes
    assert entry["ended"] == "stalled", entry  # its connection, the replica ends the answer
