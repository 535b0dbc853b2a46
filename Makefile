# attn-trace: `make help` lists the targets.
PYTHON ?= python3
PIP_INSTALL = $(PYTHON) -m pip install --quiet --disable-pip-version-check -c constraints.txt

.PHONY: help install report test lint pytest bench gold mutate clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

install:  ## install attn-trace (editable) with its tested pins and test tools
	$(PIP_INSTALL) -e ".[test]"

LESSONS = simple trainable causal multihead

report: install  ## render every lesson's worked-example reports into reports/ (the main job)
	$(PYTHON) -m tracer report --lesson all --lang all --force

test: install lint pytest  ## install, lint, type-check and run the whole test suite

lint:  ## ruff and mypy
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy

pytest:  ## the test suite (fails if no test ran)
	@$(PYTHON) -m pytest; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$rc

bench: install  ## benchmarks: ratios measured side by side in one run
	$(PYTHON) bench/bench_trace.py
	$(PYTHON) bench/bench_diff.py
	$(PYTHON) bench/bench_report.py

gold:  ## rewrite the golden reports (reports/) from today's code
	UPDATE_GOLD=1 $(PYTHON) -m pytest -q tests/test_report_gold.py tests/test_report_lessons.py

mutate:  ## mutation testing of the core with mutmut (slow: not part of `make test`; docs/testing.md)
	$(PIP_INSTALL) -e ".[test,mutate]"
	# mutants/ must exist before Python starts: a PYTHONPATH entry that is missing then stays unusable
	rm -rf mutants && mkdir mutants
	# one thread each: mutmut forks after torch has started its thread pool, and forked children hang
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=$(CURDIR)/mutants \
	  nice -n 19 $(PYTHON) -m mutmut run; rc=$$?; \
	$(PYTHON) -m mutmut results; exit $$rc

clean:  ## remove caches and test artifacts
	rm -rf .pytest_cache .mypy_cache .ruff_cache artifacts build *.egg-info mutants
