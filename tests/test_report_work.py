"""What a report process does, counted rather than timed: verifications run, modules imported.

A page says which values do not follow from their inputs, so building it
recomputes the whole trace (:meth:`Trace.verify`): at T=512, d=64 that is
the largest share of a report after the trace itself.  It runs once per
trace however many languages and formats are written, because the trace
and its shown form (:func:`tracer.core.portable.shown`) are kept.  And the
command line's start-up imports nothing a plain report never uses: the
student checker, its sandbox, the capture of a teacher's own code, the
plotting library.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tracer
from tracer.core import portable
from tracer.core import verify as verify_module
from tracer.present import report

ROOT = Path(__file__).resolve().parent.parent

NEVER_FOR_A_REPORT = (
    "tracer.sandbox",
    "tracer.checking",
    "tracer.classout",
    "tracer.compare.check",
    "tracer.compare.differ",
    "tracer.record.capture",
    "tracer.cli.classcheck",
    "tracer.plot",
    "matplotlib",
)


@pytest.fixture
def verifications(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the verification ran (one entry per run, the number of nodes it read)."""
    runs: list[int] = []
    real = verify_module.verify

    def counted(trace: tracer.Trace) -> object:
        runs.append(len(trace.nodes))
        return real(trace)

    monkeypatch.setattr(verify_module, "verify", counted)
    return runs


def test_two_languages_and_two_formats_verify_the_trace_once(verifications: list[int]) -> None:
    trace = tracer.trace_self_attention(np.random.default_rng(5).uniform(-1, 1, (7, 4)), query=2)
    first = {lang: report.build(trace, lang, ("html", "md")) for lang in ("en", "zh")}
    again = {lang: report.build(trace, lang, ("html",)) | report.build(trace, lang, ("md",)) for lang in ("en", "zh")}
    assert len(verifications) == 1
    assert first == again  # the kept shown trace gives the same bytes


def test_a_new_trace_is_verified_anew(verifications: list[int]) -> None:
    x = np.random.default_rng(6).uniform(-1, 1, (5, 3))
    for _ in range(2):
        report.build(tracer.trace_self_attention(x), "en", ("md",))
    assert len(verifications) == 2


def test_a_shown_trace_follows_its_meta() -> None:
    """The kept shown form is dropped when the trace's meta (a plain dict) was changed since."""
    trace = tracer.trace_self_attention(np.random.default_rng(7).uniform(-1, 1, (4, 3)))
    before = portable.shown(trace)
    assert before is not trace and portable.shown(trace) is before
    trace.meta["narrative"] = "edited"
    after = portable.shown(trace)
    assert after is not before and after.meta["narrative"] == "edited"


def _imported(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(sorted(m for m in sys.modules if m.startswith({NEVER_FOR_A_REPORT!r})))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return list(ast.literal_eval(out.stdout.strip().splitlines()[-1]))  # a printed list of module names


def test_the_command_line_starts_without_the_checker_sandbox_or_capture() -> None:
    assert _imported("import tracer.cli") == []


def test_a_report_run_imports_none_of_them(tmp_path: Path) -> None:
    run = (
        "import sys\nfrom tracer.cli import main\n"
        f"sys.argv = ['attn-trace', 'report', '--text', 'a b c', '--dim', '2', '-o', {str(tmp_path / 'r')!r}]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code"
    )
    assert _imported(run) == []
    assert (tmp_path / "r" / "index.html").is_file()
