"""The built wheel installs only ``tracer``, and its commands cannot pick up someone else's ``cli``.

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
import shutil
import subprocess
import sys
import sysconfig
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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    src = tmp_path_factory.mktemp("src")  # a copy: building writes build/ and *.egg-info into the source
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("tracer", "templates"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
    done = _run([*build, "--wheel-dir", str(out), str(src)], cwd=out)
    assert done.returncode == 0, done.stderr
    (found,) = out.glob("attn_trace-*.whl")
    return found


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
    venv.create(env, with_pip=False)
    py = env / "bin" / "python"
    site = Path(
        _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path).stdout.strip()
    )
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "deps.pth").write_text("".join(f"{d}\n" for d in sorted(deps)), encoding="utf-8")
    pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet", "--no-deps", "--no-index"]
    done = _run([*pip, str(wheel)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
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
