"""What the inspector's tests share: a reader of the live journal stream (in a thread, as a
page would read it), the secrets they send, and a paced scenario that takes about a second."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import httpx

from ormock.protocol.sse import SSEParser

# never key-shaped literals in the code: built here, and looked for in everything shown
HEADER_SECRET = "sk-" + "test-header-0123456789abcdefghij"
BODY_SECRET = "sk-" + "test-body-9876543210zyxwvutsrqp"
SECRETS = (HEADER_SECRET, BODY_SECRET, HEADER_SECRET[3:], BODY_SECRET[3:])

PACED = {
    "name": "paced",
    "steps": [{"times": "forever", "reply": {
        "items": [{"message": "one two three four five six seven eight"}],
        "chunking": "words",
        "pacing": {"per_event": 0.12},
    }}],
}


class StreamReader:
    """Reads ``GET <url>`` (the live journal) in a thread; ``messages`` are (event, data)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.messages: list[tuple[str, Any]] = []
        self.changed = threading.Condition()
        self.opened = threading.Event()
        self.error: BaseException | None = None
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.opened.wait(10), "the live journal did not open"

    def _run(self) -> None:
        parser = SSEParser()
        try:
            with httpx.stream("GET", self.url, timeout=30) as answer:
                assert answer.status_code == 200, answer.text
                self.status, self.headers = answer.status_code, answer.headers
                self.opened.set()
                for chunk in answer.iter_raw():
                    for message in parser.feed(chunk):
                        if not message.data:  # the retry: line
                            continue
                        with self.changed:
                            self.messages.append((message.event or "message",
                                                  json.loads(message.data)))
                            self.changed.notify_all()
                    if self._stop:
                        return
        except BaseException as error:  # kept for the test thread
            self.error = error
            self.opened.set()
        finally:
            with self.changed:
                self._stop = True
                self.changed.notify_all()

    def wait_for(self, found: Callable[[list[tuple[str, Any]]], Any], timeout: float = 15.0
                 ) -> Any:
        """The first truthy ``found(messages)``, waiting for more messages up to ``timeout``."""
        with self.changed:
            result = found(self.messages)
            if not result:
                self.changed.wait_for(lambda: bool(found(self.messages)) or self._stop, timeout)
                result = found(self.messages)
        assert result, f"not seen within {timeout} s; got {[e for e, _ in self.messages]}"
        return result

    def raw(self) -> str:
        with self.changed:
            return json.dumps(self.messages)

    def close(self) -> None:
        self._stop = True
