"""What attn-trace prints for people fits 80 columns, and the command list is never cut with "...".

Each text is rendered by the real command (click's help at ``COLUMNS=80``
and at a wide terminal, where click would otherwise use up to its maximum)
and measured line by line in characters.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import tracer
from tracer.cli import app
from tracer.core.fmt import COLUMNS


def _commands() -> list[list[str]]:
    """Every command path of the app, the group itself first."""
    out: list[list[str]] = [[]]
    for name, cmd in sorted(app.commands.items()):
        out.append([name])
        if isinstance(cmd, click.Group):
            out += [[name, sub] for sub in sorted(cmd.commands)]
    return out


def _too_wide(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > COLUMNS]


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p) or "attn-trace")
def test_every_help_fits_80_columns(path: list[str], columns: str) -> None:
    result = CliRunner(env={"COLUMNS": columns}).invoke(app, [*path, "--help"], prog_name="attn-trace")
    assert result.exit_code == 0, result.output
    assert "Usage: attn-trace" in result.output
    assert _too_wide(result.output) == []


def test_the_command_list_gives_every_description_whole() -> None:
    result = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["--help"])
    listed = " ".join(result.output.split("Commands:")[1].split())  # the wrapped lines joined again
    assert "..." not in listed
    for name, cmd in app.commands.items():
        first = " ".join(cmd.get_short_help_str(limit=1 << 16).split())
        assert f"{name} {first}" in listed, name
    assert "does it compute the lesson at every stage?" in listed  # the sentence click used to cut


def test_lessons_fit_and_keep_every_word() -> None:
    from tracer.record import registry

    lessons = registry.all_lessons()
    out = CliRunner().invoke(app, ["lessons"]).output
    assert _too_wide(out) == []
    rows = [line for line in out.splitlines() if not line.startswith(" ")]
    assert [r.split()[0] for r in rows] == [x.name for x in lessons]  # one entry each, continuation lines indented
    assert " ".join(out.split()) == " ".join(w for x in lessons for w in (x.name, *x.summary.split()))


def test_the_diff_report_fits_and_keeps_ids_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the report names the files as given: short names, as a reader types them
    a, b = Path("a.json"), Path("b.json")
    tracer.trace_self_attention().save(a)
    tracer.trace_self_attention(dtype="float64").save(b)
    result = CliRunner().invoke(app, ["diff", str(a), str(b)])
    assert result.exit_code == 1, result.output
    assert _too_wide(result.output) == []
    assert "    scaled.omega[1,1].p[1]  " in result.output  # ids are never the column that is cut
    assert "\\tilde{x}^{(1…" in result.output  # the formula is, marked with an ellipsis
    doc = json.loads(CliRunner().invoke(app, ["diff", str(a), str(b), "--format", "json"]).output)
    assert doc["steps"][1]["formula"].startswith("\\tilde{x}^{(1)}_{1} = ")  # the JSON keeps every formula whole
