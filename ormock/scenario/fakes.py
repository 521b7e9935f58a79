"""The one Faker instance ormock draws text from.

Making a ``Faker()`` costs milliseconds, and every engine (one per test under pytest) and every
scenario load would otherwise make its own. Callers seed it right before each use and hold
``FAKER_LOCK`` from the seeding to the last draw, so that draws from different threads (the
server's, a test's loading a scenario) cannot interleave.
"""

from __future__ import annotations

import threading
from functools import lru_cache

from faker import Faker

__all__ = ["FAKER_LOCK", "shared_faker"]

# held while seeding and drawing: scenarios load in test threads while the server draws
FAKER_LOCK = threading.RLock()


@lru_cache(maxsize=1)
def shared_faker() -> Faker:
    return Faker()
