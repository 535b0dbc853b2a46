"""A report needs only its trace: the overflow demonstration is recorded, ``report --from`` imports no torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tracer
from tracer.core import serialize
from tracer.present import overflow, report

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "trace.json"
    tracer.trace_self_attention().save(path)
    return path


def _version_1(path: Path, out: Path) -> Path:
    """The same trace as a version-1 file would hold it: no overflow stage, no meta["overflow"], no symbols."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["version"] = 1
    doc["meta"].pop("overflow")
    doc["meta"]["stages"] = [s for s in doc["meta"]["stages"] if s != "overflow"]
    doc["nodes"] = [n for n in doc["nodes"] if n["stage"] != "overflow"]
    for node in doc["nodes"]:
        del node["symbol"]
    doc.pop("digest")
    doc["digest"] = serialize._digest(doc)
    out.write_text(json.dumps(doc), encoding="utf-8")
    return out


def test_the_overflow_demonstration_is_in_the_trace() -> None:
    t = tracer.trace_self_attention()
    assert t.meta["overflow"] == {"factor": 10, "max_power": 12}
    assert t.stages[-1] == "overflow" and t.meta["stages"][-1] == "overflow"
    assert t["scaled.x[2,1]"].value == pytest.approx(5.5, rel=1e-6)
    assert round(t["scaled.omega[2,2]"].value, 1) == 149.5  # 1.4950 scaled by 10**2
    assert t["scaled.naive.exp[2,2]"].value == float("inf")
    assert t["scaled.naive.alpha[2,2]"].inputs == ("scaled.naive.exp[2,2]", "scaled.naive.sum[2]")
    ov = overflow.scaled(t)
    assert ov is not None and ov.factor == 10 and round(ov.limit, 4) == 88.7228 and ov.top == pytest.approx(149.5)


def test_nothing_is_scaled_when_no_score_is_positive() -> None:
    t = tracer.trace_self_attention([[1.0, 0.0], [-1.0, 0.0]], query=1)  # largest score of query 1 is 1: factor 10
    assert t.meta["overflow"]["factor"] == 10
    t = tracer.trace_self_attention([[0.0, 0.0], [0.0, 0.0]], query=1)
    assert t.meta["overflow"] == {"factor": None, "max_power": 12}
    assert "overflow" not in t.stages and overflow.scaled(t) is None
    page = report.build(t, "en", ("md",))["index.md"].decode()
    assert "no power of ten up to $10^{12}$" in page


def test_a_saved_trace_renders_the_same_report(saved: Path) -> None:
    fresh = report.build(tracer.trace_self_attention(), "zh")
    loaded = report.build(tracer.load(saved), "zh")
    assert fresh == loaded


def test_a_version_1_file_loads_and_its_report_asks_for_a_re_trace(saved: Path, tmp_path: Path) -> None:
    old = tracer.load(_version_1(saved, tmp_path / "v1.json"))
    assert "overflow" not in old.stages and not overflow.recorded(old)
    md = report.build(old, "en", ("md",))["index.md"].decode()
    assert "trace format version 1" in md and "Trace the example again" in md
    assert "scaled.omega" not in md
    zh = report.build(old, "zh", ("md",))["index.md"].decode()
    assert "轨迹格式版本 1" in zh


def test_report_from_a_file_imports_no_torch(saved: Path, tmp_path: Path) -> None:
    """The modules `report --from` pulls in: no torch, no plotting library, nothing of the recording layer."""
    out = tmp_path / "out"
    code = (
        "import sys\n"
        "from tracer.cli import main\n"
        f"sys.argv = ['attn-trace', 'report', '--from', {str(saved)!r}, '-o', {str(out)!r}]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('torch', 'matplotlib', 'mpl_toolkits')]\n"
        "recording = [m for m in sys.modules if m.startswith(('tracer.record.recorder', 'tracer.record.blocks'))\n"
        "             or m.startswith('tracer.lessons.') and m.endswith('.pipeline')]  # no pipeline\n"
        "print(len(heavy), sorted(recording))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0 []"
    assert (out / "index.html").is_file() and (out / "fig-omega.svg").is_file() and (out / "fig-inputs.svg").is_file()
