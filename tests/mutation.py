"""Fixture scopes that let mutation testing see which tests reach which code.

mutmut (``make mutate``) learns which tests reach a function by watching one
test at a time, then runs only those tests against that function's mutants.
A trace cached in a session or module fixture is recorded once, inside the
first test that asks for it, so every later test that reads it would look as
if it never reached the recorder, and a mutant those tests kill would be
counted as a survivor.  While mutmut collects its statistics (it sets
``MUTANT_UNDER_TEST=stats``) these fixtures are rebuilt for every test; the
rest of the time they are shared as usual.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

Scope = Callable[[str, pytest.Config], str]


def shared(scope: str) -> Scope:
    """``scope`` normally, ``"function"`` while mutmut maps tests to the code they reach."""

    def choose(fixture_name: str, config: pytest.Config) -> str:
        return "function" if os.environ.get("MUTANT_UNDER_TEST") == "stats" else scope

    return choose
