"""A class folder's names and links are the students' data: escaped everywhere, never followed out of the folder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app

CLASS = Path(__file__).parent / "check_class"
FAKE = "a\nalice.py: match\nz.py"
UNDECODABLE = os.fsdecode(b"\xff\xfe.py")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A class: a wrong submission whose name fakes a verdict line, one not UTF-8, one linked to the teacher's."""
    root = tmp_path_factory.mktemp("names")
    teacher, d = root / "teacher", root / "class"
    teacher.mkdir()
    d.mkdir()
    shutil.copy(CLASS / "correct.py", teacher / "solution.py")
    shutil.copy(CLASS / "buggy_mask_zero.py", d / FAKE)
    shutil.copy(CLASS / "correct.py", d / UNDECODABLE)
    (d / "mallory.py").symlink_to(Path("..") / "teacher" / "solution.py")
    return d


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, ["check", *args, "--lesson", "causal", "--timeout", "60"])
    return res.exit_code, res.stdout, res.stderr


@pytest.mark.parametrize("fmt", ["text", "json", "csv", "gradescope"])
def test_names_cannot_fake_or_break_a_verdict(folder: Path, fmt: str) -> None:
    code, out, err = run(f"{folder}:CausalAttention", "--format", fmt)
    assert code == 1, err
    assert not any(line.startswith("alice.py") for line in (out + err).splitlines())  # no line of its own
    shown = json.dumps(json.loads(out), ensure_ascii=False) if fmt in ("json", "gradescope") else out
    assert "\\udcff\\udcfe.py" in shown.replace("\\\\", "\\")  # written as its escape, in every format
    if fmt == "text":
        lines = out.splitlines()
        assert "a\\nalice.py: match\\nz.py: differs mask_zero at a\\nalice.py: match\\nz.py:21" in lines
        assert "\\udcff\\udcfe.py: match" in lines
        assert "mallory.py: trouble: mallory.py is a symbolic link that leaves the class folder" in out


def test_a_link_out_of_the_folder_is_not_followed_even_to_a_correct_file(folder: Path) -> None:
    code, out, _ = run(f"{folder}:CausalAttention", "--format", "json")
    assert code == 1
    doc = {s["file"]: s for s in json.loads(out)["submissions"]}
    assert doc["mallory.py"]["status"] == "trouble" and doc["mallory.py"]["check"] is None
    assert doc["\\udcff\\udcfe.py"]["status"] == "match"


def test_a_link_inside_the_folder_is_checked(tmp_path: Path) -> None:
    shutil.copy(CLASS / "correct.py", tmp_path / "alice.py")
    (tmp_path / "bob.py").symlink_to("alice.py")
    code, out, err = run(f"{tmp_path}/*.py:CausalAttention")
    assert code == 0 and "bob.py: match" in out, err


def test_the_summary_is_two_lines_on_stderr(folder: Path, tmp_path: Path) -> None:
    for lang, first in (("en", "3 submissions"), ("zh", "共 3 份提交")):
        code, _, err = run(f"{folder}:CausalAttention", "-o", str(tmp_path / f"{lang}.txt"), "--lang", lang)
        assert code == 1 and "\\n" not in err.replace("a\\nalice.py: match\\nz.py", "")
        assert any(line.startswith(first) for line in err.splitlines())


def test_the_class_index_is_rendered_from_its_template_escaped(folder: Path, tmp_path: Path) -> None:
    from tracer.present import classpage

    page = classpage.index("t", ["a", "b"], [classpage.Row("001-x.html", '<b>"q"</b>', "trouble", "x & y")], "en")
    assert '<a href="001-x.html">&lt;b&gt;&#34;q&#34;&lt;/b&gt;</a>' in page and "x &amp; y" in page
    assert "<p>a<br>\nb</p>" in page and "Content-Security-Policy" in page
    code, _, err = run(f"{folder}:CausalAttention", "--format", "html", "-o", str(tmp_path / "site"))
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert code == 1 and index.count("<tr ") == 3, err
    assert ">a\\nalice.py: match\\nz.py</a>" in index and ">\\udcff\\udcfe.py</a>" in index
