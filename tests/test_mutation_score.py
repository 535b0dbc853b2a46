"""The per-module score that `make mutate` prints from mutmut's ``.meta`` files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import mutation_score


def _meta(root: Path, source: str, verdicts: dict[str, int | None]) -> None:
    path = root / f"{source}.meta"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"exit_code_by_key": verdicts}), encoding="utf-8")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A mutants/ folder: fmt 9 killed + 1 survivor (90%); ids 9 of 11 with a timeout and a crash, one not run."""
    fmt = {f"tracer.core.fmt.x_num__mutmut_{i}": 1 for i in range(1, 10)}
    fmt["tracer.core.fmt.x_num__mutmut_10"] = 0
    ids: dict[str, int | None] = {f"tracer.core.ids.x_parse__mutmut_{i}": 1 for i in range(1, 8)}
    ids.update({"tracer.core.ids.x_parse__mutmut_8": 36, "tracer.core.ids.x_parse__mutmut_9": 0})
    ids.update({"tracer.core.ids.x_parse__mutmut_10": 0, "tracer.core.ids.x_parse__mutmut_11": None})
    ids["tracer.core.ids.x_parse__mutmut_12"] = -9  # killed by the system: out of memory
    _meta(tmp_path, "tracer/core/fmt.py", fmt)
    _meta(tmp_path, "tracer/core/ids.py", ids)
    _meta(tmp_path, "tracer/record/blocks/__init__.py", {})
    return tmp_path


def test_counts_per_module(results: Path) -> None:
    fmt, ids = mutation_score.read(results)
    assert (fmt.path, fmt.total, fmt.ran, fmt.score) == ("tracer/core/fmt.py", 10, 10, 0.9)
    assert (ids.total, ids.ran, ids.counts["timeout"], ids.counts["crashed"], ids.counts["not run"]) == (
        12,
        11,
        1,
        1,
        1,
    )
    assert ids.score == 9 / 11
    assert ids.survivors == ["tracer.core.ids.x_parse__mutmut_10", "tracer.core.ids.x_parse__mutmut_9"]


def test_table_and_exit_status(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert mutation_score.main([str(results), "--survivors"]) == 1
    out = capsys.readouterr().out
    assert "| `tracer/core/fmt.py` | 10 | 9 | 0 | 0 | 1 | 0 | 0 | 0 | 90.0% |" in out
    assert "| `tracer/core/ids.py` | 12 | 7 | 1 | 1 | 2 | 0 | 0 | 1 | 81.8% |" in out
    assert "| all | 22 | 16 | 1 | 1 | 3 | 0 | 0 | 1 | 85.7% |" in out
    assert "  tracer.core.fmt.x_num__mutmut_10" in out
    assert out.rstrip().endswith("under 90%: tracer/core/ids.py")
    assert mutation_score.main([str(results), "--target", "80"]) == 0


def test_kinds() -> None:
    assert [mutation_score.kind(c) for c in (None, 1, 3, 0, 36, -24, -9, 33, 37)] == [
        "not run", "killed", "killed", "survived", "timeout", "timeout", "crashed", "no tests", "other",
    ]  # fmt: skip


def test_no_results_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        mutation_score.main([str(tmp_path)])
    assert exit_info.value.code == 2
    assert "no mutmut results under" in capsys.readouterr().err
