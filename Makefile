# Every target sets itself up from a fresh clone: a venv in .venv/ with wattsched installed in editable mode.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-fast lint layers typecheck docs bench clean browser testbed-deps

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found (set PYTHON=/path/to/python3.11)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/python -m wattsched.warmup
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/wattsched demo --output demo-output

# The dashboard test renders the HTML in headless Chromium: Debian's package, installed when missing (as root).
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's chromium (for the dashboard rendering test)"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || echo "warning: chromium could not be installed; the dashboard test fails under CI=true"; \
	  else echo "note: no chromium found; the dashboard rendering test needs it (set WATTSCHED_CHROMIUM)"; fi; }

# The local Slurm testbed (`wattsched testbed`, docs/testbed.md) and the tests marked slurm: Debian's Slurm 22.05,
# munge and MariaDB, installed when missing (as root). Never slurm-wlm-emulator: it replaces slurmd and slurmctld.
TESTBED_PACKAGES := slurmctld slurmd slurm-client munge slurmdbd slurmrestd slurm-wlm-basic-plugins \
	slurm-wlm-mysql-plugin slurm-wlm-jwt-plugin mariadb-server mariadb-client
testbed-deps:
	@command -v slurmctld >/dev/null 2>&1 && command -v mariadbd >/dev/null 2>&1 && command -v munged >/dev/null 2>&1 \
	  && command -v slurmrestd >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's Slurm, munge and MariaDB (for the local testbed and its tests)"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      $(TESTBED_PACKAGES) >/dev/null) \
	      || echo "warning: the Slurm packages could not be installed; the slurm tests fail under CI=true"; \
	  else echo "note: no Slurm found; the testbed and the slurm tests need (as root): apt-get install --no-install-recommends $(TESTBED_PACKAGES)"; fi; }

# Python sources the linters check (docs/hooks holds the MkDocs hook that writes the API pages).
LINTED := src tests bench docs/hooks

# make test: every check CI runs, then the whole suite; make test-fast skips the tests marked slow (> 10 s).
# The suite runs on TEST_WORKERS pytest-xdist workers; a file, a docs page, or the session's Slurm testbed stays on
# one worker (tests/conftest.py). TEST_WORKERS=0 runs it in this process (one worker: -p no:xdist for pdb).
TEST_WORKERS ?= 2
test: lint typecheck browser testbed-deps
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

test-fast: lint typecheck
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not slow"

lint: $(STAMP) layers
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

# Zero errors on the packages listed in pyproject.toml ([tool.mypy] files); see docs/contributing.md.
typecheck: $(STAMP)
	$(BIN)/mypy

# The documentation site in site/: the pages of docs/ and the API reference generated from the docstrings.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The import contracts of pyproject.toml ([tool.importlinter]): layers import downward only, no study imports
# another, the compute layers import no plotting library.
layers: $(STAMP)
	PYTHONPATH=src $(BIN)/lint-imports --no-logo

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) demo-output site .pytest_cache .ruff_cache .mypy_cache .import_linter_cache
