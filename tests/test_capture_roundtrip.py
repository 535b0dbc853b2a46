"""Whatever ``trace`` writes, ``load`` accepts: every capture the suite makes, saved, loaded and verified.

The runners are found, not listed: every public function that takes no
arguments in every ``tests/capture_corpus*.py`` module, so a corpus added
later is covered without touching this file.  A module whose forward reads
only its own buffers (a preallocated cache, called with a position) once
wrote ``dim`` 0 and no tokens, which the file format refuses.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

import tracer
from tracer.core import serialize

HERE = Path(__file__).parent


def _runners() -> list[tuple[str, str]]:
    out = []
    for path in sorted(HERE.glob("capture_corpus*.py")):
        mod = importlib.import_module(f"tests.{path.stem}")
        for name, fn in vars(mod).items():
            if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != mod.__name__:
                continue
            if all(p.default is not inspect.Parameter.empty for p in inspect.signature(fn).parameters.values()):
                out.append((path.stem, name))
    return out


RUNNERS = _runners()


def test_every_corpus_is_found() -> None:
    found = {module for module, _ in RUNNERS}
    assert {"capture_corpus", "capture_corpus_loops", "capture_corpus_real", "capture_corpus_real_more"} <= found
    assert len(RUNNERS) >= 55, len(RUNNERS)


@pytest.mark.parametrize(("module", "name"), RUNNERS, ids=[f"{m}:{n}" for m, n in RUNNERS])
def test_a_capture_saved_is_loaded_and_verifies_clean(module: str, name: str, tmp_path: Path) -> None:
    t = tracer.trace_torch(getattr(importlib.import_module(f"tests.{module}"), name))
    assert t.meta["dim"] >= 1 and t.meta["n_tokens"] == len(t.tokens) >= 1
    path = tmp_path / f"{name}.json"
    t.save(path)
    back = serialize.load(path)
    assert [n.name for n in back.nodes] == [n.name for n in t.nodes]
    result = back.verify()
    assert result.ok, result.summary()


def test_a_module_reading_only_its_own_cache_writes_a_loadable_file(tmp_path: Path) -> None:
    from tests.capture_corpus_real_more import OwnState

    t = tracer.trace_torch(lambda: OwnState()(3))
    assert t.meta["dim"] == 8 and t.meta["n_tokens"] == 8  # the cache's rows and width: what the code read
    t.save(tmp_path / "own.json")
    assert serialize.load(tmp_path / "own.json").verify().ok
