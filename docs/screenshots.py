"""The inspector's screenshots in docs/ (``make screenshots``): a tool loop and a failed stream,
served by a fresh server and taken in headless Chromium as the browser tests drive it
(``tests/browser.py``). Run from the repository's root."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402

from ormock import OrmockServer  # noqa: E402
from tests.browser import browser_missing, chromium  # noqa: E402

SHOTS = ROOT / "docs"


def _wait(browser: object, script: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not browser.execute_script(script):  # type: ignore[attr-defined]
        if time.monotonic() > deadline:
            raise RuntimeError(f"the page never got there: {script}")
        time.sleep(0.05)


def tool_loop(server: OrmockServer) -> str:
    server.namespaces.open("tool-loop")
    server.engine("tool-loop").use("tool-roundtrip")
    # a model that takes its time, so that the offsets and lanes show how the stream went
    server.engine("tool-loop").inject({"slow": {"first_event": 0.25, "tokens_per_second": 40}})
    client = openai.OpenAI(base_url=f"{server.url}/tool-loop/v1", api_key="sk-" + "demo")
    with client.responses.stream(model="gpt-4.1", input="Weather and time in Paris?") as stream:
        for _ in stream:
            pass
        first = stream.get_final_response()
    outputs = [{"type": "function_call_output", "call_id": item.call_id, "output": '{"ok": true}'}
               for item in first.output if item.type == "function_call"]
    with client.responses.stream(model="gpt-4.1", input=outputs,  # type: ignore[arg-type]
                                 previous_response_id=first.id) as stream:
        for _ in stream:
            pass
    return "tool-loop"


def failed_stream(server: OrmockServer) -> str:
    server.namespaces.open("failed")
    server.engine("failed").use("failed-midstream")
    client = openai.OpenAI(base_url=f"{server.url}/failed/v1", api_key="sk-" + "demo",
                           max_retries=0)
    try:
        with client.responses.stream(model="gpt-4.1", input="Tell me a story.") as stream:
            for _ in stream:
                pass
    except openai.APIError:
        pass
    return "failed"


def main() -> int:
    missing = browser_missing()
    if missing is not None:
        print(f"docs/screenshots.py: {missing}", file=sys.stderr)
        return 2
    browser = chromium(1400, 900)
    try:
        with OrmockServer(seed=0) as server:
            for make, name in ((tool_loop, "inspector-tool-loop.png"),
                               (failed_stream, "inspector-failed-stream.png")):
                namespace = make(server)
                browser.get(f"{server.url}/_ormock/")
                _wait(browser, "return document.querySelectorAll('#entries li').length > 0")
                browser.execute_script(
                    "const s = document.getElementById('f-namespace');"
                    f"s.value = {namespace!r}; s.dispatchEvent(new Event('change'));")
                time.sleep(0.3)  # the page has followed the newest entry: now pick one
                browser.execute_script(  # the oldest: the first turn of the loop
                    "const all = document.querySelectorAll('#entries li');"
                    "all[all.length - 1].click();")
                _wait(browser, "return document.querySelectorAll('#timeline tr.ev').length > 0")
                time.sleep(0.3)
                browser.save_screenshot(str(SHOTS / name))
                print(f"wrote docs/{name}")
    finally:
        browser.quit()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
