"""The MkDocs example of docs/course-sites.md builds offline, with the report's math and figures in the page."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tracer
from tracer.present import report

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "mkdocs"


def display_math(markdown: str) -> list[str]:
    """The LaTeX of every ``$$...$$`` block of the report's Markdown."""
    return [m.strip() for m in re.findall(r"^\$\$\n?(.*?)\n?\$\$$", markdown, re.S | re.M)]


def test_mkdocs_example_builds_with_math_and_figures(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("pymdownx")
    site = tmp_path / "course"
    shutil.copytree(EXAMPLE, site, ignore=shutil.ignore_patterns("site", "tutorial"))
    files = report.build(tracer.trace_self_attention(), "en", ("md",))
    (site / "docs" / "tutorial").mkdir()
    for name, data in files.items():
        (site / "docs" / "tutorial" / name).write_bytes(data)
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(site / "mkdocs.yml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    built = site / "site" / "tutorial"
    page = (built / "index.html").read_text(encoding="utf-8")

    formulas = display_math(files["index.md"].decode("utf-8"))
    blocks = [html.unescape(b).strip() for b in re.findall(r'<div class="arithmatex">\\\[(.*?)\\\]</div>', page, re.S)]
    assert formulas and len(blocks) == len(formulas)
    assert all(f in blocks for f in formulas)
    assert r"\omega_{21}" in page  # the first dot product of the focus query
    assert re.search(r'<span class="arithmatex">\\\(', page)

    figures = re.findall(r'<img[^>]*src="([^"]+\.svg)"', page)
    assert sorted(figures) == sorted(n for n in files if n.endswith(".svg"))
    for name in figures:
        assert (built / name).read_bytes() == files[name]
