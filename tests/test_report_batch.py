"""Many reports in one process (`report --lesson LIST --lang LIST`): the same bytes as one run each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app

ROOT = Path(__file__).resolve().parent.parent


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(ROOT / "cli.py"), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_one_process_writes_what_one_run_each_writes(tmp_path: Path) -> None:
    many = _cli("report", "--lesson", "simple,causal", "--lang", "en,zh", "-o", "all", cwd=tmp_path)
    assert many.returncode == 0, many.stderr
    lines = many.stderr.strip().splitlines()
    assert len(lines) == 4 and all(line.startswith("wrote all/") for line in lines)
    written = _files(tmp_path / "all")
    assert {k.split("/")[0] + "/" + k.split("/")[1] for k in written} == {
        "tutorial/en", "tutorial/zh", "causal/en", "causal/zh",
    }  # fmt: skip
    for lesson, slug, lang in (("simple", "tutorial", "zh"), ("causal", "causal", "en")):
        one = _cli("report", "--lesson", lesson, "--lang", lang, "-o", f"one-{lesson}", cwd=tmp_path)
        assert one.returncode == 0, one.stderr
        alone = _files(tmp_path / f"one-{lesson}")
        together = {k.split("/", 2)[2]: v for k, v in written.items() if k.startswith(f"{slug}/{lang}/")}
        assert alone == together, f"{lesson} {lang}: files differ between one process and one run"


def test_lists_are_checked(tmp_path: Path) -> None:
    runner = CliRunner()
    with runner.isolated_filesystem(temp_dir=tmp_path):
        for args, message in (
            (["--lesson", "simple,nope"], "unknown lesson 'nope': choose from all, simple, trainable"),
            (["--lang", "en,fr"], "unknown language 'fr': choose from all, en, zh"),
            (["--lesson", "all", "--from", "t.json"], "--lesson cannot be combined"),
        ):
            result = runner.invoke(app, ["report", *args])
            assert result.exit_code == 2, (args, result.output)
            assert message in result.output and "Traceback" not in result.output
        assert not Path("reports").exists()


def test_an_existing_report_stops_the_batch_before_anything_is_written(tmp_path: Path) -> None:
    runner = CliRunner()
    with runner.isolated_filesystem(temp_dir=tmp_path):
        zh = Path("out/tutorial/zh")
        zh.mkdir(parents=True)
        (zh / "index.md").write_text("mine", encoding="utf-8")
        result = runner.invoke(app, ["report", "--lang", "all", "-o", "out"])
        assert result.exit_code == 2 and "already exists; use --force" in result.output
        assert not Path("out/tutorial/en").exists()  # the first report was not written either
        assert (zh / "index.md").read_text(encoding="utf-8") == "mine"


def test_the_library_names_the_file_not_a_flag(tmp_path: Path) -> None:
    """Called from Python, the refusal names the report file; only the CLI speaks of `--force`."""
    from tracer import batch
    from tracer.api import trace_lesson
    from tracer.errors import InputError

    (tmp_path / "index.html").write_text("mine", encoding="utf-8")
    jobs = batch.jobs([trace_lesson("simple")], ["en"], tmp_path)
    with pytest.raises(InputError) as refused:
        batch.write_all(jobs, ("html",), 4, False, False, print)
    assert str(refused.value) == f"'{tmp_path / 'index.html'}' already exists"
    assert (tmp_path / "index.html").read_text(encoding="utf-8") == "mine"
