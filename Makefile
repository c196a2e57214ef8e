# rackwise: `make run` shows the system at work, `make test` runs every check.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found" >&2; exit 1; }
	@echo "== Setting up $(VENV) (Python packages, compiled placement and record-walk kernels)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet -e '.[dev]'
	@$(BIN)/python -m rackwise.placement.warmup
	@$(BIN)/python -m rackwise.storage.warmup
	@touch $(STAMP)

run: install
	@bash scripts/run.sh

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest -q --durations=20

bench: install
	$(BIN)/python bench/placement.py
	$(BIN)/python bench/assignors.py
	$(BIN)/python bench/controller.py
	$(BIN)/python bench/pipeline.py
	$(BIN)/python bench/pipeline_plan.py
	$(BIN)/python bench/fairness.py
	$(BIN)/python bench/data_path.py
	$(BIN)/python bench/page_writes.py

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
