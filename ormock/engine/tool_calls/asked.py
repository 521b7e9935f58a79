"""What a tool's planned call reads (``Asked``), and what it gives (``Planned``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from faker import Faker

from ormock.protocol.plan import ItemPlan
from ormock.protocol.request import ResponseRequest
from ormock.protocol.types import Json
from ormock.scenario.generated_text import Prose

__all__ = ["Asked", "Planned"]


@dataclass
class Asked:
    """One request's view for its tools' calls: the user's last words, the items after them,
    the whole context, the request's ``include`` and the seeded draws (``prose`` for text and
    numbers, ``faker`` for JSON Schema values)."""

    request: ResponseRequest
    text: str
    after: list[Json]
    context: list[Json]
    prose: Prose
    faker: Faker
    mcp_tool: str | None = None

    @property
    def include(self) -> frozenset[str]:
        listed = self.request.body.get("include") or ()
        return frozenset(str(v) for v in listed)

    def pick(self, options: Sequence[str]) -> str:
        """One of ``options``, drawn."""
        return options[self.prose.draw() % len(options)]

    def below(self, count: int) -> int:
        """A whole number from 0 to ``count - 1``, drawn."""
        return self.prose.draw() % count

    def number(self, low: int, high: int) -> int:
        """A whole number from ``low`` to ``high``, drawn."""
        return low + self.prose.draw() % (high - low + 1)

    def word(self) -> str:
        return self.pick(self.prose.words()).lower()

    def hex(self, length: int) -> str:
        return "".join(f"{self.prose.draw():04x}" for _ in range((length + 3) // 4))[:length]


@dataclass
class Planned:
    """A tool's part of the answer: its items, and (a tool the provider runs) what the answer's
    message says of its result, with url citations inside that text."""

    items: list[ItemPlan]
    said: str | None = None
    citations: list[Json] = field(default_factory=list)
