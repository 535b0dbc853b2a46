"""Fixture scopes that let mutation testing see which tests reach which code.

mutmut (``make mutate``) learns which tests reach a function by watching one
test at a time, then runs only those tests against that function's mutants.
A trace cached in a session or module fixture is recorded once, inside the
first test that asks for it, so every later test that reads it would look as
if it never reached the recorder, and a mutant those tests kill would be
counted as a survivor.  While mutmut collects its statistics (it sets
``MUTANT_UNDER_TEST=stats``) these fixtures are rebuilt for every test; the
rest of the time they are shared as usual.

``ids.index_expr`` keeps what it compiled in a cache.  mutmut forks every
mutant's run from a process that has already run the tests, so a mutant of
``ids._compile`` would never be called (the cached, unmutated functions would
answer), and while statistics are collected only the first test to read an
expression would look as if it reached ``_compile``.  :func:`fresh_caches`
empties that cache before every test while mutmut is at work.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from tracer.core import ids

Scope = Callable[[str, pytest.Config], str]


def shared(scope: str) -> Scope:
    """``scope`` normally, ``"function"`` while mutmut maps tests to the code they reach."""

    def choose(fixture_name: str, config: pytest.Config) -> str:
        return "function" if os.environ.get("MUTANT_UNDER_TEST") == "stats" else scope

    return choose


def fresh_caches() -> None:
    """Empty the index-expression cache before a test, but only under mutmut (``MUTANT_UNDER_TEST`` set)."""
    if os.environ.get("MUTANT_UNDER_TEST"):
        ids.index_expr.cache_clear()
