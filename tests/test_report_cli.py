"""The ``report`` command: folders, --force, --from, --fragment, errors that write nothing."""

from __future__ import annotations

import os
import re
from pathlib import Path

from click.testing import CliRunner

import tracer
from tracer.cli import app


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    # CliRunner never prints a traceback: a crash shows as an exception other than SystemExit
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def test_default_folder_and_no_overwrite(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    code, out = run("report", "--format", "md", "--lang", "zh")
    assert code == 0, out
    folder = tmp_path / "reports" / "tutorial" / "zh"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [
            "index.md",
            "fig-idea.svg",
            "fig-inputs.svg",
            "fig-weights.svg",
            "fig-context.svg",
            "fig-omega.svg",
            "fig-alpha.svg",
        ]
    )
    mask = os.umask(0o022)
    os.umask(mask)
    assert (folder / "index.md").stat().st_mode & 0o777 == 0o666 & ~mask  # as open() would make it
    before = (folder / "index.md").read_bytes()
    (folder / "index.md").write_text("mine")
    code, out = run("report", "--format", "md", "--lang", "zh")
    assert code == 2 and "--force" in out
    assert (folder / "index.md").read_text() == "mine"
    code, _ = run("report", "--format", "md", "--lang", "zh", "--force")
    assert code == 0 and (folder / "index.md").read_bytes() == before


def test_from_saved_trace_gives_the_same_report(tmp_path: Path, tutorial: tracer.Trace, tutorial_report) -> None:  # type: ignore[no-untyped-def]
    saved = tmp_path / "t.json"
    tutorial.save(saved)
    code, out = run("report", "--from", str(saved), "-o", str(tmp_path / "r"))
    assert code == 0, out
    for name, data in tutorial_report("en").items():
        assert (tmp_path / "r" / name).read_bytes() == data, name


def test_fragment_is_one_scoped_section(tmp_path: Path) -> None:
    code, out = run("report", "--fragment", "--format", "html", "-o", str(tmp_path))
    assert code == 0, out
    frag = (tmp_path / "fragment.html").read_text()
    assert frag.startswith('<section class="attn-trace-report"') and frag.rstrip().endswith("</section>")
    assert "<html" not in frag and "<head>" not in frag and "<script" not in frag
    assert frag.count('src="data:image/svg+xml;base64,') == 6 and "<svg" not in frag  # the idea and 5 figures
    style = re.search(r"<style>(.*?)</style>", frag, re.S)
    assert style is not None
    css = re.sub(r"/\*.*?\*/", "", style.group(1), flags=re.S)
    for selector in re.findall(r"(?:^|})\s*([^{}@]+?)\s*\{", css):
        for part in selector.split(","):
            assert part.strip().startswith(".attn-trace-report"), part


def test_bad_input_writes_nothing(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    for args in (
        ["--query", "9"],
        ["--fragment", "--format", "md"],
        ["--from", str(tmp_path / "missing.json")],
        ["--lang", "fr"],
    ):
        code, out = run("report", "-o", str(out_dir), *args)
        assert code == 2, (args, out)
        assert not out_dir.exists()


def test_other_inputs_get_their_own_folder(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    code, out = run("report", "--text", "the cat sat", "--dim", "2", "--format", "md")
    assert code == 0, out
    (folder,) = (tmp_path / "reports").iterdir()
    assert re.fullmatch(r"text-[0-9a-f]{10}", folder.name)
    md = (folder / "en" / "index.md").read_text()
    assert "components 1 and 2" not in md and "plane" in md  # d=2: the figure shows the plane itself


def test_cli_import_pulls_in_no_heavy_module() -> None:
    import subprocess
    import sys

    heavy = ("torch", "matplotlib", "jinja2", "latex2mathml")
    code = f"import sys, tracer.cli; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
