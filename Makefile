# Two commands set up a fresh machine: `make demo` and `make test`. Both create .venv with
# python3 -m venv and (re)install the project whenever the venv is missing or pyproject.toml changed.

VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck unit unit-parallel unit-serial bench reliability docs clean

# The editable install puts the repository itself on sys.path through a .pth file (pyproject.toml
# declares the repository as the import root, which makes that setuptools' default; no transitional
# `editable_mode=compat` is needed), so type checkers and tools outside the repository see plain
# files, and a directory that happens to be named like a package (a clone called "streamfns") cannot
# shadow the real one.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,dev]'
	touch $(STAMP)

# The package's own demo (recorded streams through each adapter, the faux provider), then the agent
# loop, which is an example of the repository and not part of the installed package.
demo: $(STAMP)
	$(PY) -m streamfns.demo
	$(PY) -m examples.agent_loop --demo

# The type check and the clock-blind tests share the cores; the tests that time something run after
# them, alone (see `unit`).
test: lint
	$(MAKE) --no-print-directory -j2 --output-sync=line typecheck unit-parallel
	$(MAKE) --no-print-directory unit-serial

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/pyright

# Tests marked `parallel` (blind to the clock) run on every core at once; then the rest (loopback
# servers and timeouts, the conformance harness, soaks) run alone, so that no parallel load can move
# a timing. Plain `pytest` runs everything in one process.
unit: $(STAMP)
	$(MAKE) --no-print-directory unit-parallel
	$(MAKE) --no-print-directory unit-serial

unit-parallel: $(STAMP)
	$(VENV)/bin/pytest -q -m parallel -n auto

unit-serial: $(STAMP)
	$(VENV)/bin/pytest -q -m "not parallel"

bench: $(STAMP)
	$(PY) -m bench

# A soak (not part of `make test`): 1,000 concurrent streams per phase over every built-in adapter
# against a loopback server with random faults; exits 1 if anything leaked or ended wrongly. Once per
# HTTP transport the kit ships: httpx (its default), then aiohttp, then its native client.
reliability: $(STAMP)
	$(PY) -m bench.reliability --transport httpx
	$(PY) -m bench.reliability --transport aiohttp
	$(PY) -m bench.reliability --transport native

# The documentation site, built offline into build/site; any warning fails the build. The docs extra
# is installed on top of the test environment (its own stamp, so `make test` never installs it).
DOCS_STAMP := $(VENV)/.docs-stamp

$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,dev,docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) build *.egg-info
