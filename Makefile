# Two commands from a fresh clone: `make serve` and `make test`. Both bootstrap .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PORT ?= 8787
PYTEST_ARGS ?=

.PHONY: serve test lint typecheck bench schema openai-events cassettes screenshots clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/ormock serve --host 127.0.0.1 --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check ormock tests bench plugins cassettes

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

# the example cassettes of cassettes/, recorded through `ormock record` from ormock's catalogue
cassettes: $(STAMP)
	$(BIN)/python cassettes/record.py

schema: $(STAMP)
	$(BIN)/ormock scenarios --schema > ormock/scenario/scenario.schema.json
	$(BIN)/ormock cassette schema > ormock/cassette/cassette.schema.json

# the openai profile's event vocabulary, from the installed openai SDK (a test checks it is current)
openai-events: $(STAMP)
	$(BIN)/python bench/openai_events.py

# the inspector's screenshots in docs/ (headless Chromium, as the browser tests drive it)
screenshots: $(STAMP)
	$(BIN)/python docs/screenshots.py

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
