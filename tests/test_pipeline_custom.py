"""A teacher's own pipeline (the example plug-in's module, by path): traced, reported in both languages, diffed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app

EXAMPLE = str(
    Path(__file__).resolve().parent.parent / "examples" / "lesson_plugin" / "attn_lesson_temperature" / "pipeline.py"
)


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    # CliRunner never prints a traceback: a crash shows as an exception other than SystemExit
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res.exit_code, res.output


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_report_of_a_custom_pipeline(tmp_path: Path, lang: str) -> None:
    code, out = run("report", "--pipeline", f"{EXAMPLE}:build", "--lang", lang, "-o", str(tmp_path))
    assert code == 0, out
    page = (tmp_path / "index.html").read_text()
    assert "<math" in page and 'data-id="cooled[2,1]"' in page and (tmp_path / "fig-alpha.svg").is_file()
    assert ("temperature" in page) if lang == "en" else ("温度" in page)


def test_diff_of_two_temperatures_finds_the_root_cause(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert run("trace", "--pipeline", f"{EXAMPLE}:build", "-o", str(a))[0] == 0
    assert run("trace", "--pipeline", f"{EXAMPLE}:sharp", "-o", str(b))[0] == 0
    code, out = run("diff", str(a), str(b))
    assert code == 1 and "1 root cause" in out and "tau" in out


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_module_xyz:build", "cannot import pipeline"),
        (f"{EXAMPLE}:nothing", "has no function"),
        (f"{EXAMPLE}:prepare", "failed"),
        ("tracer.core.fmt:num", "no NARRATIVE"),
        ("justamodule", "module:function"),
    ],
)
def test_bad_pipelines_exit_2_in_one_line(spec: str, message: str) -> None:
    code, out = run("trace", "--pipeline", spec)
    assert code == 2 and message in out


def test_renderers_have_no_pipeline_specific_code() -> None:
    root = Path(__file__).resolve().parent.parent / "tracer" / "present"
    for name in ("views/lesson.py", "views/nodes.py", "views/worked.py", "render/html.py", "render/markdown.py"):
        text = (root / name).read_text()
        assert "temperature" not in text and "cooled" not in text and "tau" not in text
