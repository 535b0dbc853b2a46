"""The example plug-in (examples/lesson_plugin), built and installed from its own pyproject.toml, is a lesson.

The cheapest honest install: ``pip wheel`` builds the plug-in's wheel from its
``pyproject.toml`` (so its entry point declaration is what is tested), the
wheel is unpacked into a private folder, and that folder goes on
``PYTHONPATH`` of subprocesses: its ``.dist-info`` is what
``importlib.metadata`` reads, exactly as after ``pip install``.  The
project's own environment never sees the plug-in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "lesson_plugin"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the installed plug-in (its package and its dist-info)."""
    work = tmp_path_factory.mktemp("plugin")
    source = work / "source"  # setuptools builds in the source folder (build/, *.egg-info): a copy keeps ours clean
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q"]
    done = subprocess.run([*build, "-w", str(work), str(source)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    (wheel,) = work.glob("attn_lesson_temperature-*.whl")
    folder = work / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(folder)
    return folder


def run(site: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_its_entry_point_comes_from_its_pyproject(site: Path) -> None:
    (info,) = site.glob("*.dist-info")
    assert (
        "[attn_trace.lessons]\ntemperature = attn_lesson_temperature:LESSON" in (info / "entry_points.txt").read_text()
    )
    assert {p.name for p in (site / "attn_lesson_temperature").glob("*.toml")} == {
        "narrative.en.toml",
        "narrative.zh.toml",
    }


def test_lessons_lists_it_beside_the_built_ins(site: Path) -> None:
    out = run(site, "-m", "tracer", "lessons")
    assert out.returncode == 0, out.stderr
    names = [line.split()[0] for line in out.stdout.splitlines() if not line.startswith(" ")]  # a 2nd line is indented
    assert names[:2] == ["simple", "trainable"] and names[-1] == "temperature"  # a plug-in with no place comes last


@pytest.mark.parametrize(("lang", "title"), [("en", "Attention with a temperature"), ("zh", "带温度的注意力")])
def test_report_in_every_format(site: Path, tmp_path: Path, lang: str, title: str) -> None:
    out = run(
        site,
        "-m",
        "tracer",
        "report",
        "--lesson",
        "temperature",
        "--format",
        "all",
        "--lang",
        lang,
        "-o",
        str(tmp_path / "r"),
    )
    assert out.returncode == 0, out.stderr
    page, md = (tmp_path / "r" / "index.html").read_text(), (tmp_path / "r" / "index.md").read_text()
    assert title in page and title in md and 'data-id="cooled[2,1]"' in page
    assert "attn_weights = torch.softmax(attn_scores / tau, dim=-1)" in md  # its notebook cells, as the code


def test_notebook(site: Path, tmp_path: Path) -> None:
    out = run(site, "-m", "tracer", "notebook", "--lesson", "temperature", "-o", str(tmp_path / "t.ipynb"))
    assert out.returncode == 0, out.stderr
    nb = json.loads((tmp_path / "t.ipynb").read_text())
    assert nb["metadata"]["attn_trace"]["lesson"] == "temperature"
    assert any('show("alpha", attn_weights)' in "".join(c["source"]) for c in nb["cells"])


def test_options_reach_it_and_bad_ones_are_one_line(site: Path) -> None:
    code = "import tracer; print(tracer.trace_lesson('temperature', tau=0.5).meta['tau'])"
    assert run(site, "-c", code).stdout.strip() == "0.5"
    out = run(site, "-m", "tracer", "trace", "--lesson", "temperature", "--window", "2")
    assert out.returncode == 2 and out.stderr.strip() == "Error: lesson 'temperature' takes no option window"


def test_check_says_plainly_that_it_has_no_check_yet(site: Path) -> None:
    """Its check description awaits the check loop (docs/lessons.md): until then one honest line, exit 2."""
    out = run(site, "-m", "tracer", "check", "x.py:f", "--lesson", "temperature")
    assert out.returncode == 2 and "lesson 'temperature' has no check yet" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_its_own_tests_pass_installed(site: Path) -> None:
    out = run(site, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "tests", cwd=PLUGIN)
    assert out.returncode == 0, out.stdout[-2000:]
    assert " passed" in out.stdout and "failed" not in out.stdout
