"""A Redis store's failures: a URL's password is never printed, wherever in the URL it is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ormock.engine.store.base import shown

ROOT = Path(__file__).resolve().parent.parent
SECRET = "hunter2"


@pytest.mark.parametrize(("spec", "printed"), [
    ("redis://:hunter2@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
    ("unix:///run/redis.sock?db=0&password=hunter2", "unix:///run/redis.sock?db=0&password=***"),
    ("redis://127.0.0.1:6379/0?password=hunter2", "redis://127.0.0.1:6379/0?password=***"),
    ("rediss://me:hunter2@cache.example:6380/2?password=hunter2&ssl_cert_reqs=none",
     "rediss://me:***@cache.example:6380/2?password=***&ssl_cert_reqs=none"),
    ("unix:///run/redis.sock?db=0", "unix:///run/redis.sock?db=0"),
])
def test_a_password_is_never_printed_wherever_the_url_has_it(spec: str, printed: str) -> None:
    assert shown(spec) == printed


def test_a_unix_socket_password_is_not_in_the_message_of_a_failed_start(tmp_path: Path) -> None:
    spec = f"unix://{tmp_path / 'none.sock'}?db=0&password={SECRET}"
    status = subprocess.run(
        [sys.executable, "-m", "ormock", "serve", "--port", "0", "--store", spec],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60)
    assert status.returncode == 2
    assert status.stderr.startswith(f"ormock: --store: cannot reach Redis at unix://"
                                    f"{tmp_path / 'none.sock'}?db=0&password=*** (")
    assert SECRET not in status.stderr
