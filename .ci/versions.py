"""What the canary (`make test-latest`) runs on: the version of each dependency that matters,
and every installed package whose version is not the one requirements-dev.txt locks.

Run with the canary venv's Python: .venv-latest/bin/python .ci/versions.py requirements-dev.txt"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

WATCHED = ("openai", "openai-agents", "uvicorn", "starlette", "httpx", "httpx2", "redis",
           "vcrpy", "faker", "websockets", "pytest", "hypothesis")
PIN = re.compile(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)", re.MULTILINE)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main(lock_path: str) -> None:
    pins = PIN.findall(Path(lock_path).read_text())
    locked = {canonical(name): version for name, version in pins}
    installed = {canonical(dist.metadata["Name"]): dist.version
                 for dist in metadata.distributions()}
    print("canary versions: " + ", ".join(
        f"{name} {installed[name]}" for name in WATCHED if name in installed))
    newer = [f"{name} {locked[name]} -> {version}" for name, version in sorted(installed.items())
             if name in locked and locked[name] != version]
    added = [f"{name} {version}" for name, version in sorted(installed.items())
             if name not in locked and name not in ("ormock", "pip", "setuptools")]
    print("differs from the lock: " + ("; ".join(newer) if newer else "nothing"))
    if added:
        print("not in the lock: " + "; ".join(added))


if __name__ == "__main__":
    main(sys.argv[1])
