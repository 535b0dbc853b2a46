"""The wheel and the source archive build without a warning, install, and render the committed report.

Both are built offline from a copy of the checkout by setuptools' own build
hooks, as ``python -m build --no-isolation`` calls them, and each is
installed into a fresh virtual environment (the sdist is built into a wheel
there, so a file missing from it fails), where ``attn-trace report`` must
write the committed tutorial report byte for byte.

The built wheel installs only ``tracer``, and its commands cannot pick up someone else's ``cli``.

A top-level ``cli.py`` in site-packages would be overwritten by any other
package that ships one (and deleted when that one is uninstalled), and
``python -m tracer`` run next to a student's own ``cli.py`` must not import
it.  So the wheel is built from this checkout, installed into a fresh virtual
environment that also holds a foreign top-level ``cli.py``, and both commands
run from a folder with a ``cli.py`` of its own.  The environment sees the
running interpreter's packages (torch, numpy, ...) through a ``.pth`` path
entry, which adds them without running their ``.pth`` files, so an editable
attn-trace installed there cannot stand in for the wheel.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

import tracer

ROOT = Path(__file__).resolve().parents[1]
FOREIGN = 'raise SystemExit("a foreign cli.py was imported")\n'

pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}  # no PYTHONPATH: the wheel only
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


BUILD = """import sys
from setuptools import build_meta as backend
out = sys.argv[1]  # read first: the backend rewrites sys.argv
backend.build_sdist(out)
backend.build_wheel(out)
"""
WARNED = re.compile(r"Warning\b|deprecat|would be ignored", re.I)
BYTECODE = "byte-compiling is disabled"  # PYTHONDONTWRITEBYTECODE in the environment: not the project's doing


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The wheel, the source archive, and everything the build printed."""
    out = tmp_path_factory.mktemp("dist")
    src = tmp_path_factory.mktemp("src")  # a copy: building writes build/ and *.egg-info into the source
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    for name in ("tracer", "templates"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    done = _run([sys.executable, "-c", BUILD, str(out)], cwd=src)
    assert done.returncode == 0, done.stderr
    (wheel,) = out.glob("attn_trace-*.whl")
    (sdist,) = out.glob("attn_trace-*.tar.gz")
    return wheel, sdist, done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(built: tuple[Path, Path, str]) -> Path:
    return built[0]


def _environment(where: Path) -> Path:
    """A fresh virtual environment that sees this interpreter's packages (torch, numpy ...) but no attn-trace."""
    venv.create(where, with_pip=False)
    py = where / "bin" / "python"
    site = Path(
        _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], where).stdout.strip()
    )
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "deps.pth").write_text("".join(f"{d}\n" for d in sorted(deps)), encoding="utf-8")
    return py


def _install(py: Path, what: Path, cwd: Path) -> None:
    pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet", "--no-deps", "--no-index"]
    done = _run([*pip, "--no-build-isolation", str(what)], cwd=cwd)
    assert done.returncode == 0, done.stderr


def test_the_build_says_nothing_to_fix(built: tuple[Path, Path, str]) -> None:
    said = [line for line in built[2].splitlines() if WARNED.search(line) and BYTECODE not in line]
    assert said == []


def test_the_license_ships_in_both(built: tuple[Path, Path, str]) -> None:
    wheel, sdist, _ = built
    info = f"attn_trace-{tracer.__version__}.dist-info"
    names = zipfile.ZipFile(wheel).namelist()
    assert f"{info}/licenses/LICENSE" in names
    meta = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    assert {"LICENSE", "README.md", "pyproject.toml", "tracer/lessons/simple/narrative.en.toml"} <= members
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n\nCopyright (c) 2026 the attn-trace")


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_each_installs_and_writes_the_committed_report(
    built: tuple[Path, Path, str], kind: str, tmp_path: Path
) -> None:
    py = _environment(tmp_path / "env")
    _install(py, built[0] if kind == "wheel" else built[1], tmp_path)
    where = _run([str(py), "-c", "import tracer; print(tracer.__file__)"], tmp_path)
    assert "site-packages" in where.stdout, where  # the installed package, not the checkout
    ran = _run([str(tmp_path / "env" / "bin" / "attn-trace"), "report", "-o", "out"], tmp_path)
    assert ran.returncode == 0, ran.stderr
    for name in ("index.html", "index.md"):
        made = (tmp_path / "out" / name).read_bytes()  # one report: -o names its folder
        assert made == (ROOT / "reports" / "tutorial" / "en" / name).read_bytes(), name


def test_the_wheel_holds_only_the_tracer_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"tracer", f"attn_trace-{tracer.__version__}.dist-info"}
    source = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tracer").rglob("*.py")}
    assert sorted(source - set(names)) == []  # every module of the package, not only those listed by hand
    assert "tracer/__main__.py" in names and "tracer/core/trace-format.schema.json" in names
    templates = [p for p in (ROOT / "templates").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    shipped = {f"tracer/templates/{p.relative_to(ROOT / 'templates').as_posix()}" for p in templates}
    assert sorted(shipped - set(names)) == []  # templates/ ships whole, as tracer.templates
    entry = zipfile.ZipFile(wheel).read(f"attn_trace-{tracer.__version__}.dist-info/entry_points.txt").decode()
    assert "attn-trace = tracer.cli:main" in entry


def test_commands_ignore_a_foreign_cli_module(wheel: Path, tmp_path: Path) -> None:
    env = tmp_path / "env"
    py = _environment(env)
    site = Path(
        _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path).stdout.strip()
    )
    _install(py, wheel, tmp_path)
    (site / "cli.py").write_text(FOREIGN, encoding="utf-8")  # another package's top-level cli
    student = tmp_path / "student"
    student.mkdir()
    (student / "cli.py").write_text(FOREIGN, encoding="utf-8")  # a student's own script
    where = _run([str(py), "-c", "import tracer; print(tracer.__file__)"], cwd=student)
    assert Path(where.stdout.strip()).is_relative_to(site), where  # the wheel's tracer, not a checkout's
    expected = f"attn-trace, version {tracer.__version__}\n"
    for command in ([str(env / "bin" / "attn-trace"), "--version"], [str(py), "-m", "tracer", "--version"]):
        ran = _run(command, cwd=student)
        assert (ran.returncode, ran.stdout, ran.stderr) == (0, expected, ""), command
    for args in (["lessons"], ["explain", "omega[2,1]"], ["check", "--help"]):  # commands from several modules
        ran = _run([str(env / "bin" / "attn-trace"), *args], cwd=student)
        assert ran.returncode == 0 and ran.stdout and not ran.stderr, (args, ran.stderr)
