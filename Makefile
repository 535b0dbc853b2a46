# attn-trace: `make help` lists the targets.
#
# `make report` and `make test` do all the set-up: the first run creates a
# virtual environment in .venv/ with $(PY3) and installs attn-trace into it
# (editable, with the tested pins in constraints.txt); later runs reuse it and
# reinstall only when pyproject.toml or constraints.txt changed.  Nothing is
# installed outside the checkout.  `make distclean` removes .venv/.
#
# PYTHON=/path/to/python uses that interpreter and its environment as they are
# (no venv, no automatic install; `make install PYTHON=...` installs into it).
PY3 ?= python3
VENV := .venv
# torch's CPU build: PyPI's Linux torch wheels pull in CUDA (several GB)
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH := $(shell sed -n 's/^torch==//p' constraints.txt)

ifeq ($(strip $(PYTHON)),)
PY := $(VENV)/bin/python
READY := $(VENV)/.installed
else
PY := $(PYTHON)
READY :=
endif
PIP = $(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt
SAY = @echo "attn-trace:"

.PHONY: help install report test lint pytest kernels bench gold mutate clean distclean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-9s %s\n", $$1, $$2}'

$(VENV)/bin/python:
	$(SAY) "creating $(VENV) with $$($(PY3) -V 2>&1) (once; 'make distclean' removes it)"
	@$(PY3) -m venv $(VENV) || { rm -rf $(VENV); \
	  echo "attn-trace: '$(PY3) -m venv' failed: on Debian or Ubuntu, apt-get install python3-venv" >&2; exit 1; }

$(VENV)/.installed: $(VENV)/bin/python pyproject.toml constraints.txt
	$(SAY) "installing torch $(TORCH) (CPU build) into $(VENV) ..."
	@t=$$(date +%s); $(PIP) --retries 2 --no-deps --extra-index-url $(TORCH_INDEX) "torch==$(TORCH)" \
	  && echo "attn-trace:   torch $$($(PY) -c 'from importlib.metadata import version; print(version("torch"))') in $$(( $$(date +%s) - t )) s"
	$(SAY) "installing attn-trace and its test tools into $(VENV) ..."
	@t=$$(date +%s); $(PIP) -e ".[test]" && echo "attn-trace:   done in $$(( $$(date +%s) - t )) s" || { \
	  echo "attn-trace: the install failed; pip says why without --quiet: $(PY) -m pip install -c constraints.txt -e '.[test]'" >&2; \
	  exit 1; }
	@touch $@

install: $(READY)  ## install attn-trace (editable) with its tested pins and test tools
ifneq ($(strip $(PYTHON)),)
	$(SAY) "installing attn-trace and its test tools into $(PYTHON)'s environment ..."
	@$(PIP) -e ".[test]"
endif

report: $(READY)  ## render every lesson's worked-example reports into reports/ (the main job)
	$(SAY) "rendering every lesson's reports (en, zh) into reports/ ..."
	@$(PY) -m tracer report --lesson all --lang all --force

test: lint pytest  ## lint, type-check and run the whole test suite

lint: $(READY)  ## ruff and mypy
	$(SAY) "linting (ruff) and type-checking (mypy) ..."
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

# pytest-xdist runs the suite in JOBS processes (JOBS=1: one process, as plain pytest); --dist loadfile keeps each
# test module in one process, so a module's fixtures (its Chromium, its traces) are built once, not per worker;
# modules with a slow test go first (tests/conftest.py), so no long one is left for the end
JOBS ?= auto
XDIST = $(if $(filter 1,$(JOBS)),,-n $(JOBS) --dist loadfile --no-loadscope-reorder)
pytest: $(READY)  ## the test suite on every core (JOBS=1: in one process); fails if no test ran
	$(SAY) "running the test suite with $(PY) (JOBS=$(JOBS)) ..."
	@$(PY) -m pytest $(XDIST); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$rc

kernels: $(READY)  ## the same bytes under other MKL instruction sets and one thread (.ci/kernels)
	@bash .ci/kernels $(PY)

bench: $(READY)  ## benchmarks: ratios measured side by side in one run; a missed target prints MISSED
	$(PY) bench/bench_trace.py
	$(PY) bench/bench_backward.py
	$(PY) bench/bench_diff.py
	$(PY) bench/bench_load.py
	$(PY) bench/bench_report.py
	$(PY) bench/bench_page.py --repeat 3
	$(PY) bench/bench_capture.py
	$(PY) bench/bench_check.py
	$(PY) bench/bench_model.py

gold: $(READY)  ## rewrite the golden reports (reports/) from today's code
	UPDATE_GOLD=1 $(PY) -m pytest -q tests/test_report_gold.py tests/test_report_lessons.py

# `make mutate MUTANTS='tracer.core.fmt*'` runs part of the core; MUTATE_JOBS sets how many mutants run at once
MUTANTS ?=
MUTATE_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
mutate: $(READY)  ## mutation testing of the core with mutmut (slow: not part of `make test`; docs/testing.md)
	$(PIP) -e ".[test,mutate]"
	# mutants/ must exist before Python starts: a PYTHONPATH entry that is missing then stays unusable
	rm -rf mutants && mkdir mutants
	# one thread each: mutmut forks after torch has started its thread pool, and forked children hang
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=$(CURDIR)/mutants \
	  nice -n 19 $(PY) -m mutmut run --max-children $(MUTATE_JOBS) $(MUTANTS); rc=$$?; \
	$(PY) -m tests.mutation_score --survivors && exit $$rc

clean:  ## remove caches and test artifacts
	rm -rf .pytest_cache .mypy_cache .ruff_cache artifacts build dist *.egg-info mutants

distclean: clean  ## clean, and remove the virtual environment .venv/
	rm -rf $(VENV)
