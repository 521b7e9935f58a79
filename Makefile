# Two commands from a fresh clone: `make serve` and `make test`. Both bootstrap .venv from the
# lock, requirements-dev.txt: exactly the versions (and hashes) the suite was last green with.
# `make lock` refreshes it; `make test-latest` runs the suite on the newest releases (docs/dependencies.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
LOCK := requirements-dev.txt
LATEST := .venv-latest
UV_VERSION := 0.13.9
PORT ?= 8787
PYTEST_ARGS ?=

.PHONY: serve test test-latest lock lint typecheck bench schema openai-vocabulary cassettes screenshots clean

# a new venv whenever the lock changes, so nothing of an older lock stays in it; every package
# (the build backend included) comes from the lock, checked against its hashes
$(STAMP): pyproject.toml $(LOCK)
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip check
	touch $(STAMP)

# the lock: every dependency of the package, its test and redis extras and its build backend,
# resolved for every platform and Python it supports, with hashes (uv, pinned, in its own venv)
lock:
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install --quiet uv==$(UV_VERSION)
	printf "hatchling>=1.25\neditables\n" | .venv-lock/bin/uv pip compile pyproject.toml - --extra test \
	    --extra redis --universal --generate-hashes --no-emit-index-url --upgrade \
	    --custom-compile-command "make lock" --output-file $(LOCK)

# the canary: the newest release of every dependency (no lock) in a venv of its own, then the
# whole suite on it, as `make test` runs it; the versions it ran on are printed first
test-latest:
	rm -rf $(LATEST)
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --upgrade pip
	$(LATEST)/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e ".[test,redis]"
	$(LATEST)/bin/python -m pip check
	$(LATEST)/bin/python .ci/versions.py $(LOCK)
	touch $(LATEST)/.installed-stamp
	$(MAKE) --no-print-directory test VENV=$(LATEST)

serve: $(STAMP)
	$(BIN)/ormock serve --host 127.0.0.1 --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check ormock tests bench plugins cassettes .ci
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# the suite, then its tests of what the server writes (marked `wire`) once more without the cork
# of ormock/server/http_protocol.py: uvicorn's plain writes must give the same answers. Exit 5
# (no test collected: PYTEST_ARGS chose no `wire` test) is no failure of that second pass.
test: lint typecheck
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)
	ORMOCK_HTTP_CORK=0 $(BIN)/python -m pytest -n 2 -m wire $(PYTEST_ARGS) || [ $$? -eq 5 ]

# the example cassettes of cassettes/, recorded through `ormock record` from ormock's catalogue
cassettes: $(STAMP)
	$(BIN)/python cassettes/record.py

schema: $(STAMP)
	$(BIN)/ormock scenarios --schema > ormock/scenario/scenario.schema.json
	$(BIN)/ormock cassette schema > ormock/cassette/cassette.schema.json

# the openai profile's vocabulary (input items, tools, tool_choice forms, output items, events),
# from the installed openai SDK (a test checks it is current)
openai-vocabulary: $(STAMP)
	$(BIN)/python bench/openai_vocabulary.py

# the inspector's screenshots in docs/ (headless Chromium, as the browser tests drive it)
screenshots: $(STAMP)
	$(BIN)/python docs/screenshots.py

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) $(LATEST) .venv-lock build dist .pytest_cache .mypy_cache .ruff_cache
