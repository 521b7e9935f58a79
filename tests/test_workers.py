"""``ormock serve --workers N``: N uvicorn worker processes on one port share the store (an
SQLite file, Redis), so a chain made through one connection continues through any other; with
the memory store it refuses to start, saying why."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import openai
import pytest
from stores import serve, store_spec

from ormock.cli import main
from ormock.engine.limits import Limits
from ormock.engine.store import open_backend

KEY = "sk-" + "test-workers"


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started (read from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _workers(pid: int) -> list[int]:
    """The uvicorn workers among them (multiprocessing's spawned children)."""
    workers = []
    for child in _children(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"multiprocessing.spawn" in command and b"spawn_main" in command:
            workers.append(child)
    return workers


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_two_workers_serve_one_store(kind: str, tmp_path: Path,
                                     request: pytest.FixtureRequest) -> None:
    spec = store_spec(kind, request, tmp_path)
    with serve("--workers", "2", "--store", spec) as served:
        deadline = time.monotonic() + 60  # the socket is bound first; the workers then start
        while len(_workers(served.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_workers(served.pid)) == 2
        with openai.OpenAI(base_url=served.base_url, api_key=KEY, max_retries=0) as sdk:
            first = sdk.responses.create(model="gpt-5", input="The word is tangerine.")
        starts = open_backend(spec, Limits())
        previous, made = first.id, {first.id}
        # a fresh connection per turn: the workers take them as the kernel hands them out,
        # until both have served (each engine counts its start in the store)
        for turn in range(200):
            with httpx.Client(base_url=served.base_url, timeout=30,
                              headers={"Authorization": f"Bearer {KEY}"}) as http:
                got = http.get(f"/responses/{previous}")
                assert got.status_code == 200, got.text
                answer = http.post("/responses", json={
                    "input": f"Turn {turn}.", "previous_response_id": previous})
                assert answer.status_code == 200, answer.text
                previous = answer.json()["id"]
                assert previous not in made  # two workers never hand out one id
                made.add(previous)
            if turn >= 3 and starts.get("meta", "starts") == b"2":
                break
        assert starts.get("meta", "starts") == b"2"  # both workers served
        with openai.OpenAI(base_url=served.base_url, api_key=KEY, max_retries=0) as sdk:
            last = sdk.responses.retrieve(previous)
            assert last.model == "gpt-5"  # inherited down the chain from the first turn
            items = list(sdk.responses.input_items.list(previous, order="asc"))
            assert items[0].content[0].text == "The word is tangerine."  # type: ignore[union-attr]
        starts.close()


@pytest.mark.parametrize(("argv", "says"), [
    (["--workers", "2"], "ormock: --workers 2 needs a store every worker shares: with --store "
                         "memory each process would keep its own stored responses"),
    (["--workers", "0"], "ormock: --workers is a number of processes of at least 1, not 0"),
])
def test_workers_refuse_what_cannot_work(argv: list[str], says: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "0", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and ("--store redis://" in err or "0" in argv)
