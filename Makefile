# tireless: `make test` and `make run` set everything up on a machine with Python 3.11+ and
# PostgreSQL's server binaries (initdb, pg_ctl). Missing binaries? On Debian or Ubuntu:
#     apt-get install postgresql        (or set TIRELESS_PG_BIN to the directory holding them)

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: agents install lint typecheck test soak chaos-forge failover bench run stop schema pg-binaries clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,web]'
	touch $@

install: $(VENV)/.installed

# The coding-agent CLIs at the versions agents.json pins (npm, PyPI): `make agents` pins each to
# its registry's newest version and installs them under .tireless/agents/ (docs/agents.md).
agents: install
	$(PY) -m dev.agents update

pg-binaries: install
	@$(PY) -c 'from dev.embedded import find_server_binaries as f; print("PostgreSQL server binaries:", f())' \
	  || { echo "make: install PostgreSQL's server binaries: apt-get install postgresql"; exit 1; }

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy

test: lint typecheck pg-binaries
	$(PY) -m pytest $(PYTEST_ARGS)

soak: install pg-binaries
	TIRELESS_SOAK=long $(PY) -m pytest -m soak $(PYTEST_ARGS)

# The forge fault run: a scripted person on a faulty stand-in forge, pollers and workers killed,
# PostgreSQL restarted; then the checker (dev/chaos_forge.py). ISSUES, SECONDS, SEED.
chaos-forge: install pg-binaries
	$(PY) -m dev.chaos_forge $(if $(ISSUES),--issues $(ISSUES)) $(if $(SECONDS),--seconds $(SECONDS)) $(if $(SEED),--seed $(SEED))

# The failover run: a primary and its streaming standby, real workers and a sweeper on the
# multi-host DSN; the primary killed or hung, the standby promoted; recovery times (medians of
# RUNS, default 3) and the invariants (dev/failover.py). SCENARIOS: a subset.
failover: install pg-binaries
	$(PY) -m dev.failover $(if $(RUNS),--runs $(RUNS)) $(foreach s,$(SCENARIOS),--scenario $(s))

bench: export PYTHONPATH := $(CURDIR)
bench: install pg-binaries
	$(PY) bench/run.py $(if $(QUICK),--quick)
	$(PY) bench/fairness.py $(if $(QUICK),--quick)
	$(PY) bench/dependencies.py $(if $(QUICK),--quick)
	$(PY) bench/dependency_reads.py $(if $(QUICK),--quick)
	$(PY) bench/web.py $(if $(QUICK),--quick)
	cd bench && ../$(PY) poll.py $(if $(QUICK),--issues 100 --repos 100 --batch 1000 --repeats 1)
	cd bench && ../$(PY) mirror.py $(if $(QUICK),--issues 20 --repeats 1)
	$(PY) bench/workspace.py $(if $(QUICK),--commits 2000 --repeats 3)
	$(PY) bench/delivery.py $(if $(QUICK),--jobs 5 --chain 5)
	$(PY) bench/conversation.py $(if $(QUICK),--samples 3 --repos 20 --pulls 4)
	$(PY) bench/egress.py $(if $(QUICK),--quick)
	$(PY) bench/limits.py $(if $(QUICK),--quick)
	$(PY) bench/agents.py $(if $(QUICK),--runs 1)
	$(PY) bench/ledger.py $(if $(QUICK),--quick)
	$(PY) bench/rollup.py $(if $(QUICK),--quick)
	$(PY) bench/pull_follows_push.py $(if $(QUICK),--jobs 3)
	$(PY) bench/app_tokens.py $(if $(QUICK),--hours 2 --repeats 1)

run: install pg-binaries
	$(PY) -m dev.demo

stop: install
	$(PY) -m dev.demo --stop

# db/schema.sql, the schema as the migrations leave it (tests/sql/test_schema_file.py checks it)
schema: install pg-binaries
	$(PY) -m tests.schema_dump

clean:
	rm -rf $(VENV) .tireless .mypy_cache .ruff_cache build dist *.egg-info
