"""``bench/modules.py``: the ormock modules whose code runs while one new create is answered."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> Any:
    spec = importlib.util.spec_from_file_location("bench_modules", ROOT / "bench" / "modules.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_new_create_runs_the_front_and_the_engine_and_only_files_of_ormock() -> None:
    paths = _modules().modules_for_create(warmup=3)
    assert paths, "no ormock module was seen running for a create"
    assert paths == sorted(set(paths))
    for path in paths:
        assert path.startswith("ormock/") and path.endswith(".py"), path
        assert (ROOT / path).is_file(), path
    assert {"ormock/server/front.py", "ormock/server/http_protocol.py", "ormock/engine/core.py",
            "ormock/engine/building.py", "ormock/engine/writer.py"} <= set(paths)
