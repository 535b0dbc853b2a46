"""The committed reports/ are what the report command writes today (golden files)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.gold import compare

REPORTS = Path(__file__).resolve().parent.parent / "reports" / "tutorial"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_committed_reports_are_current(lang: str, tutorial_report: Callable[..., dict[str, bytes]]) -> None:
    compare(REPORTS / lang, tutorial_report(lang))


def test_rebuilding_gives_identical_bytes(tutorial_report: Callable[..., dict[str, bytes]]) -> None:
    import tracer
    from tracer.present import report

    again = report.build(tracer.trace_self_attention(), "en")
    assert again == tutorial_report("en")


def test_compare_prints_a_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UPDATE_GOLD", raising=False)
    (tmp_path / "a.md").write_text("one\ntwo\n")
    with pytest.raises(AssertionError) as err:
        compare(tmp_path, {"a.md": b"one\nthree\n"})
    assert "-two" in str(err.value) and "+three" in str(err.value)
