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
        "messages.en.toml",
        "messages.zh.toml",
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


def mistaken(tmp_path: Path) -> Path:
    """A copy of the plug-in's ``solution.py`` with one mistake: the scores multiplied by τ, not divided."""
    right = (PLUGIN / "solution.py").read_text(encoding="utf-8")
    wrong = right.replace("torch.softmax(scores / TAU", "torch.softmax(scores * TAU")
    assert wrong != right
    (tmp_path / "wrong.py").write_text(wrong, encoding="utf-8")
    return tmp_path / "wrong.py"


def test_check_passes_its_solution_with_exit_0(site: Path) -> None:
    out = run(site, "-m", "tracer", "check", str(PLUGIN / "solution.py") + ":attention", "--lesson", "temperature")
    assert out.returncode == 0, out.stderr
    assert "MATCHES the lesson at every stage (4 quantities compared)" in out.stdout
    assert "scores / τ" in out.stdout  # the lesson's own stage, named by its own table


@pytest.mark.parametrize(
    ("lang", "sentence"),
    [
        ("en", "The scores are multiplied by the temperature τ = 2 instead of divided by it"),
        ("zh", "注意力分数乘以了温度 τ = 2，而不是除以它"),
    ],
)
def test_check_names_the_mistake_of_a_one_mistake_copy_with_exit_1(
    site: Path, tmp_path: Path, lang: str, sentence: str
) -> None:
    wrong = mistaken(tmp_path)
    asked = ("check", f"{wrong}:attention", "--lesson", "temperature", "--lang", lang)
    out = run(site, "-m", "tracer", *asked, "--format", "json")
    assert out.returncode == 1, out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["diagnosis"]["code"] == "tau_multiplied" and verdict["first_divergence"]["stage"] == "cooling"
    assert verdict["diagnosis"]["sentence"].startswith(sentence)
    said = run(site, "-m", "tracer", *asked)
    assert said.returncode == 1 and "[tau_multiplied]" in said.stdout


@pytest.mark.parametrize(
    ("lang", "said"),
    [
        ("en", "Error: lesson 'temperature' has no check yet: check knows simple, trainable,"),
        ("zh", "Error: 课程 temperature 还没有检查：能检查的课程有 simple, trainable,"),
    ],
)
def test_a_lesson_without_a_check_description_says_so_in_one_line(site: Path, lang: str, said: str) -> None:
    """The plug-in without its ``checker``: ``check`` refuses in one line (exit 2) in the reader's language."""
    code = (
        "import dataclasses, sys\n"
        "from tracer.record import registry\n"
        "found = registry.get\n"
        "bare = dataclasses.replace(found('temperature'), checker=None)\n"
        "registry.get = lambda name: bare if name == 'temperature' else found(name)\n"
        f"sys.argv = ['attn-trace', 'check', 'x.py:f', '--lesson', 'temperature', '--lang', {lang!r}]\n"
        "from tracer.cli import main\n"
        "main()\n"
    )
    out = run(site, "-c", code)
    assert out.returncode == 2 and out.stderr.startswith(said), out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_its_own_tests_pass_installed(site: Path) -> None:
    out = run(site, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "tests", cwd=PLUGIN)
    assert out.returncode == 0, out.stdout[-2000:]
    assert " passed" in out.stdout and "failed" not in out.stdout


@pytest.mark.slow
def test_pip_install_editable_into_a_new_environment(tmp_path: Path) -> None:
    """``pip install -e`` of the plug-in into an environment of its own, beside attn-trace: listed, reported, checked.

    The new environment is made with ``python -m venv`` and sees attn-trace
    and its dependencies (torch among them) as installed in this one, through
    a ``.pth`` line that adds this environment's site folder (so nothing is
    downloaded); the plug-in itself is installed into it by pip, editable,
    from a copy of ``examples/lesson_plugin``, exactly as a teacher would.
    """
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    (site_dir,) = (env / "lib").glob("python*/site-packages")
    ours = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site_dir / "beside_attn_trace.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in ours))
    source = tmp_path / "lesson_plugin"
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    python = str(env / "bin" / "python")
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-build-isolation"]
    done = subprocess.run([*pip, "--no-index", "-e", str(source)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr

    def attn_trace(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([python, "-m", "tracer", *args], cwd=tmp_path, capture_output=True, text=True)

    listed = attn_trace("lessons")
    assert listed.returncode == 0 and "temperature" in listed.stdout.split(), listed.stderr
    for lang in ("en", "zh"):
        out = attn_trace("report", "--lesson", "temperature", "--format", "all", "--lang", lang, "-o", f"r-{lang}")
        assert out.returncode == 0 and (tmp_path / f"r-{lang}" / "index.html").is_file(), out.stderr
    assert attn_trace("notebook", "--lesson", "temperature", "-o", "t.ipynb").returncode == 0
    assert attn_trace("check", f"{source / 'solution.py'}:attention", "--lesson", "temperature").returncode == 0
    out = attn_trace("check", f"{mistaken(tmp_path)}:attention", "--lesson", "temperature")
    assert out.returncode == 1 and "[tau_multiplied]" in out.stdout, out.stderr
