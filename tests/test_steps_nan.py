"""``steps`` says why a NaN is shown: inputs at uint64's or float32's largest overflow a step before it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app


@pytest.mark.parametrize("big", ["18446744073709551615", "3.4e38"])
def test_a_nan_from_huge_inputs_gets_a_note(tmp_path: Path, big: str) -> None:
    inputs = tmp_path / "in.csv"
    inputs.write_text(f"a,b,c\n{big},1,2\n3,4,5\n6,7,8\n")
    res = CliRunner().invoke(app, ["steps", "--inputs", str(inputs), "z*"])
    assert res.exit_code == 0 and "nan" in res.stdout
    notes = [line for line in res.stderr.splitlines() if line.startswith("note:") and "header" not in line]
    assert len(notes) == 1 and "are NaN" in notes[0] and "overflowed" in notes[0]


def test_no_note_when_every_value_is_a_number() -> None:
    res = CliRunner().invoke(app, ["steps", "z*"])
    assert res.exit_code == 0 and "NaN" not in res.stderr
