"""``attn-trace check`` runs the student's code in a child: its printing, folder, time, memory and exit are its own.

The submissions are ``tests/check_class/``: each is the book's causal
attention class with one hostile habit (or none).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer import sandbox
from tracer.cli import app

from .sandbox_jobs import task

CLASS = Path(__file__).parent / "check_class"


def run(name: str, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, ["check", f"{CLASS / name}:CausalAttention", "--lesson", "causal", *args])
    return res.exit_code, res.stdout, res.stderr


def test_printing_stays_out_of_the_json() -> None:
    code, out, err = run("printer.py", "--format", "json")
    assert code == 0 and json.loads(out)["ok"] is True
    assert "debug" not in out and "debug" not in err  # shown only under --verbose
    code, out, err = run("printer.py", "--verbose")
    assert code == 0 and "MATCHES" in out
    assert "what your code printed" in err and "debug: torch.Size([2, 6, 3])" in err and "to stderr" in err
    assert "\x1b" not in err and "\x07" not in err  # the escape sequences are stripped


def test_chdir_does_not_move_the_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run("chdir.py", "--format", "json", "-o", "out.json")
    assert code == 0 and "wrote out.json" in err
    assert json.loads((tmp_path / "out.json").read_text())["ok"] is True
    assert Path.cwd() == tmp_path


def test_a_bare_except_cannot_swallow_the_time_limit() -> None:
    code, out, err = run("hanging.py", "--timeout", "1")
    assert code == 2 and out == ""
    assert "no verdict: the check of" in err and "did not finish within 1 s and was killed" in err
    assert "Traceback" not in err


def test_os_exit_is_no_verdict_not_a_match() -> None:
    code, out, err = run("exits_early.py")
    assert code == 2 and out == ""
    assert "exited with status 0 before sending its verdict" in err


def test_a_crash_of_the_interpreter_is_named() -> None:
    code, _, err = run("crashing.py")
    assert code == 2 and "was killed by SIGSEGV" in err


def test_memory_is_limited() -> None:
    code, _, err = run("memory_hungry.py", "--memory", "512")
    assert code == 2 and "ran out of memory (the limit is 512 MB)" in err and "memory_hungry.py:" in err


def test_threads_forks_and_bad_reprs_do_not_change_the_verdict() -> None:
    for name in ("thread.py", "forker.py", "bad_repr.py"):
        code, out, err = run(name)
        assert code == 0 and "MATCHES" in out, (name, err)


def test_a_hostile_message_is_one_clean_line() -> None:
    code, out, err = run("hostile_message.py")
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and "\x1b" not in line
    assert "raised ValueError: =HYPERLINK" in line and "at hostile_message.py:19" in line


def test_failures_inside_the_child_are_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "ret.py"
    bad.write_text("import torch\nclass C(torch.nn.Module):\n    def __init__(self, *a):\n        super().__init__()\n")
    res = CliRunner().invoke(app, ["check", f"{bad}:C", "--lesson", "causal"])
    assert res.exit_code == 2 and "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_pool_receives_only_whole_verdicts() -> None:
    got = dict(sandbox.pool([task("ok"), task("leaves"), task("prints")], 2, 30, 0))
    assert got[0].verdict == {"kind": "verdict", "n": 1} and got[0].failure is None
    assert got[1].verdict is None and "exited with status 0" in str(got[1].failure)
    assert got[2].verdict == {"kind": "verdict", "n": 2} and got[2].output == "hello from the child\n"


def test_output_is_capped() -> None:
    out = sandbox.run(task("floods"), 30, 0)
    assert out.verdict == {"kind": "verdict"}
    assert out.output.count("x") == sandbox.OUTPUT_CAP and "[... 5000 more bytes of output dropped]" in out.output


def test_torch_threads_work_in_the_child() -> None:
    import torch

    a = torch.rand(512, 512)
    assert float((a @ a).sum()) > 0  # this process's thread pool has run: a fork of it would deadlock the child
    res = CliRunner().invoke(
        app, ["check", f"{CLASS.parent / 'check_attack' / 'threads.py'}:CausalAttention", "--lesson", "causal"]
    )
    code, out, err = res.exit_code, res.stdout, res.stderr
    assert code == 0 and "MATCHES" in out, err
