# The two commands of the README: `make demo` and `make test`. Both install everything first.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(CURDIR)/$(VENV)/bin

export PATH := $(BIN):$(PATH)
export AIRFLOW_HOME ?= $(CURDIR)/.airflow
export AIRFLOW__CORE__DAGS_FOLDER := $(CURDIR)/dags
export AIRFLOW__CORE__PLUGINS_FOLDER := $(CURDIR)/plugins
export AIRFLOW__CORE__LOAD_EXAMPLES := False
export AIRFLOW__CORE__PARALLELISM := 4
export SPARK_LOCAL_IP := 127.0.0.1

.PHONY: setup bytecode demo demo-ui test lint unit clean

# The packages' bytecode is compiled at install: uv leaves it to the first import otherwise, and where Python may
# not write it (PYTHONDONTWRITEBYTECODE, read-only images) every command compiled its imports again at each start.
$(VENV)/.installed: requirements.txt pyproject.toml
	./scripts/ensure-system-deps.sh
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip --version >/dev/null 2>&1 || $(PY) -m ensurepip >/dev/null
	$(PY) -m pip install -q --disable-pip-version-check uv
	$(BIN)/uv pip install -q --python $(PY) --compile-bytecode -r requirements.txt
	$(BIN)/uv pip install -q --python $(PY) --no-deps -e .
	touch $@

.cache/.jars: $(VENV)/.installed
	$(PY) scripts/prefetch_jars.py
	touch $@

$(AIRFLOW_HOME)/airflow.db: $(VENV)/.installed
	mkdir -p $(AIRFLOW_HOME)
	$(BIN)/airflow db migrate > $(AIRFLOW_HOME)/migrate.log 2>&1 || (tail -40 $(AIRFLOW_HOME)/migrate.log; exit 1)

# The project's own packages are installed editable (`-e .`): uv compiles none of them, so where Python may not write
# bytecode (PYTHONDONTWRITEBYTECODE) every `mirror-engine` command compiled about a hundred modules from source at
# each start (0.15-0.2 s of CPU, on the way to the first record). Compiled at each setup: a module edited since is
# compiled again then (compileall skips those whose bytecode is current).
bytecode: $(VENV)/.installed
	$(PY) -m compileall -q mirror_engine kafka_local plugins spark_jobs

setup: $(VENV)/.installed .cache/.jars $(AIRFLOW_HOME)/airflow.db bytecode

# `make demo MM2=1`: the same migration from demo/mm2.properties, through `mirror-engine run --mm2-config`.
demo: setup
	$(PY) demo/$(if $(MM2),run_demo_mm2.py,run_demo.py)

# The demo's clusters and data with Airflow's UI and the cockpit; prints the URL and the login; Ctrl-C stops it all.
demo-ui: setup
	$(PY) demo/airflow_ui.py

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	PYTHONPATH=plugins $(BIN)/lint-imports

unit: $(VENV)/.installed
	$(BIN)/pytest -q tests/unit

test: setup lint
	./scripts/ensure-system-deps.sh --browser
	$(BIN)/pytest -q -p no:cacheprovider --durations=30 tests

clean:
	rm -rf $(VENV) .cache .airflow .local-kafka reports
