# MailFathom: `make run` starts the product, `make test` checks it. Both create .venv if needed.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint format migrate shell stop clean-var install lock fuzz services

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 is required ($(PYTHON) not found)."; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# requirements.txt and requirements-dev.txt name what we depend on; requirements.lock pins
# every package they pull in, with hashes, and is what gets installed (`make lock` renews it).
$(STAMP): $(BIN)/python requirements.lock
	$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements.lock
	@touch $(STAMP)

lock: $(BIN)/python
	$(BIN)/pip install --quiet pip-tools==7.6.2
	$(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
		--output-file requirements.lock requirements-dev.txt

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python manage.py serve

# What the tests run for real and pip cannot bring (Dovecot, Debian's Chromium): installed when
# missing, by the script CI uses; a one-line check when everything is there.
services:
	@bash .ci/install-services

# The suite runs on every core (pytest-xdist, one worker per core, each on servers of its own:
# tests/conftest.py); a test file stays on one worker, with its module's servers. `pytest`
# alone still runs it in one process.
# mypy from a cold cache here (about 25 s): django-stubs' incremental cache can keep a renamed
# module's old name and report it missing; `make lint` keeps the cache for a quick loop.
test: $(STAMP) services
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy --cache-dir=/dev/null
	$(BIN)/python -m pytest -n auto --dist loadfile

# The long MIME fuzzing run over the shared corpus (the bounded one is part of `make test`).
fuzz: $(STAMP)
	$(BIN)/python bench/fuzz.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

migrate: $(STAMP)
	$(BIN)/python manage.py migrate

shell: $(STAMP)
	$(BIN)/python manage.py shell

stop: $(STAMP)
	$(BIN)/python manage.py embedded stop
