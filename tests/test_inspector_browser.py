"""The inspector page in a real headless Chromium (Selenium): it loads without console errors,
new requests appear without a reload, a paced stream grows while it runs, faults and checker
findings are shown, and no secret reaches the page. Skipped, saying why, without a browser."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest

from ormock import OrmockServer
from tests.browser import browser_missing, chromium
from tests.inspector_helpers import BODY_SECRET, HEADER_SECRET, PACED, SECRETS

_missing = browser_missing()
pytestmark = pytest.mark.skipif(_missing is not None, reason=f"no browser: {_missing}")
_names = itertools.count()
WAIT = 20.0  # seconds: generous, the machine is shared


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium.common.exceptions import WebDriverException

    try:
        driver = chromium()
    except WebDriverException:  # a browser slow to start on a loaded machine: once more
        driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def ns(server: OrmockServer) -> str:
    name = f"web{next(_names)}"
    server.namespaces.open(name)
    return name


def until(browser: Any, found: Callable[[Any], Any], timeout: float = WAIT) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout, poll_frequency=0.05).until(found)


def open_page(browser: Any, server: OrmockServer, ns: str) -> None:
    browser.get(f"{server.url}/{ns}/_ormock/")
    until(browser, lambda b: b.find_element("id", "live").text == "live")
    browser.get_log("browser")  # start each test with an empty console


def text(browser: Any, css: str) -> str:
    """The text of the first element matching ``css`` ("" if none), read in one step (the page
    re-renders as the journal grows: no element handle is kept across renders)."""
    found = browser.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';", css)
    return str(found)


def rows(browser: Any) -> int:
    return len(browser.find_elements("css selector", "#timeline tr.ev"))


def errors(browser: Any) -> list[dict[str, Any]]:
    return [m for m in browser.get_log("browser") if m["level"] in ("SEVERE", "WARNING")]


def post(server: OrmockServer, ns: str, scenario: str, stream: bool = True) -> None:
    httpx.post(f"{server.url}/{ns}/v1/responses", timeout=10, json={
        "model": "m", "input": "hi", "stream": stream},
        headers={"x-ormock-scenario": scenario})


def test_the_page_loads_with_no_console_errors(browser: Any, server: OrmockServer,
                                               ns: str) -> None:
    post(server, ns, "tool-call")
    browser.get(f"{server.url}/{ns}/_ormock/")
    until(browser, lambda b: rows(b) > 0)
    browser.find_element("css selector", "#timeline tr.ev").click()  # a payload opens
    until(browser, lambda b: b.find_elements("css selector", "#timeline tr.payload"))
    assert "response.created" in text(browser, "tr.payload")
    assert errors(browser) == []


def test_a_request_sent_after_the_page_opened_appears_without_a_reload(
        browser: Any, server: OrmockServer, ns: str) -> None:
    open_page(browser, server, ns)
    browser.execute_script("window.ormockNotReloaded = true;")
    assert browser.find_elements("css selector", "#entries li") == []
    post(server, ns, "text")
    until(browser, lambda b: len(b.find_elements("css selector", "#entries li")) == 1)
    post(server, ns, "tool-call")
    until(browser, lambda b: len(b.find_elements("css selector", "#entries li")) == 2)
    assert browser.execute_script("return window.ormockNotReloaded === true;")
    assert errors(browser) == []


def test_a_paced_stream_grows_while_it_runs(browser: Any, server: OrmockServer,
                                            ns: str) -> None:
    server.namespaces.get(ns).use({**PACED, "steps": [{"times": "forever", "reply": {
        **PACED["steps"][0]["reply"], "pacing": {"per_event": 0.3}}}]})
    open_page(browser, server, ns)
    done = threading.Event()
    seen_while_running: list[int] = []

    def run() -> None:
        client = openai.OpenAI(base_url=f"{server.url}/{ns}/v1", api_key="sk-" + "test",
                               max_retries=0)
        with client.responses.stream(model="m", input="hi") as stream:
            for _ in stream:
                pass
        done.set()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    until(browser, lambda b: rows(b) >= 2)
    first = rows(browser)
    if not done.is_set():
        seen_while_running.append(first)
    until(browser, lambda b: rows(b) > first or done.is_set())
    if not done.is_set():
        seen_while_running.append(rows(browser))
    worker.join(WAIT)
    assert done.is_set()
    # the timeline grew at least once before the stream ended
    assert len(seen_while_running) == 2 and seen_while_running[1] > seen_while_running[0]
    # once finished, the whole exchange is shown
    until(browser, lambda b: "[DONE]" in text(b, "#timeline"))
    assert errors(browser) == []


def test_a_fault_shows_its_marker_and_the_checker_finding(browser: Any, server: OrmockServer,
                                                          ns: str) -> None:
    open_page(browser, server, ns)
    post(server, ns, "broken-sequence")
    until(browser, lambda b: "sequence-number" in text(b, "#findings"))
    assert "event 5" in text(browser, "#findings")
    assert "sequence-number" in text(browser, '#timeline tr.flagged[data-index="5"]')
    assert "sequence" in text(browser, "#lanes .marker")
    post(server, ns, "failed-midstream")
    until(browser, lambda b: "fail_midstream" in text(b, "#timeline tr.struck"))
    assert "error" in text(browser, "#timeline tr.struck")
    assert "fail_midstream" in text(browser, "#lanes .marker")
    assert errors(browser) == []


def test_a_secret_never_reaches_the_page(browser: Any, server: OrmockServer, ns: str) -> None:
    open_page(browser, server, ns)
    client = openai.OpenAI(base_url=f"{server.url}/{ns}/v1", api_key=HEADER_SECRET,
                           max_retries=0)
    client.responses.create(model="m", input=f"the key is {BODY_SECRET}",
                            metadata={"api_key": BODY_SECRET},
                            extra_headers={"x-api-key": HEADER_SECRET})
    until(browser, lambda b: "***" in text(b, "#req-headers"))
    assert '"api_key": "***"' in text(browser, "#req-body")
    shown = [browser.page_source, text(browser, "#curl")]
    entry = browser.execute_script("return document.querySelector('#entries li').dataset.id;")
    for path in (f"/{ns}/_ormock/journal/{entry}", f"/{ns}/_ormock/journal"):
        browser.get(server.url + path)
        shown.append(browser.page_source)
    for seen in shown:
        for secret in SECRETS:
            assert secret not in seen
