"""``--torch FILE.py:FN`` on the commands that compute, and every way it can be given badly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import tracer
from tracer.cli import app

BOOK = str(Path(__file__).parent / "book_attention.py")

BAD = """
import torch

NOT_CALLABLE = 3


def wants(x):
    return x


def raises():
    raise ValueError("boom")


def nothing():
    return 3


def not_a_tensor():
    x = torch.ones(2, 2)
    return (x @ x).tolist()


def tuple_out():
    x = torch.ones(2, 2)
    return x @ x, x
"""


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_trace_steps_explain(tmp_path: Path) -> None:
    code, out, _ = run("steps", "--torch", f"{BOOK}:v1", "attn_weights[2,*]")
    assert code == 0
    assert out.splitlines()[0].startswith("attn_weights[2,1]\t0.1500")
    code, out, _ = run("explain", "--torch", f"{BOOK}:v1", "attn_scores[2,1]")
    assert code == 0 and "0.4306×0.3669 + 1.4551×0.7646" in out
    f = tmp_path / "t.json"
    code, _, err = run("trace", "--torch", f"{BOOK}:mha", "--tokens", "Your journey starts with one step", "-o", str(f))
    assert code == 0 and "steps" in err
    t = tracer.load(f)
    assert t.tokens[1] == "journey" and t.meta["captured"] and t.meta["torch"].endswith("book_attention.py:mha")
    assert t["out_proj[1,2,1]"].value == pytest.approx(0.2943, abs=1e-4)
    code, out, _ = run("diff", str(f), str(f))
    assert code == 0


def test_report_both_languages_and_a_notebook(tmp_path: Path) -> None:
    for lang in ("en", "zh"):
        code, _, err = run("report", "--torch", f"{BOOK}:wrapper", "--lang", lang, "-o", str(tmp_path / lang))
        assert code == 0, err
        html = (tmp_path / lang / "index.html").read_text()
        assert "heads_1.attn_weights" in html
    assert "逐项写出" in (tmp_path / "zh" / "index.md").read_text()
    nb = tmp_path / "c.ipynb"
    code, _, err = run("notebook", "--torch", f"{BOOK}:causal", "-o", str(nb))
    assert code == 0, err
    cells = json.loads(nb.read_text())["cells"]
    assert any("script.run(TORCH" in "".join(c["source"]) for c in cells)


def test_query_picks_the_focus(tmp_path: Path) -> None:
    code, _, _ = run("trace", "--torch", f"{BOOK}:v1", "--query", "5", "-o", str(tmp_path / "q.json"))
    assert code == 0 and tracer.load(tmp_path / "q.json").query == 5


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nowhere.py:fn", "does not exist"),
        ("{bad}:missing", "has no function 'missing'"),
        ("{bad}:NOT_CALLABLE", "is not callable"),
        ("{bad}:wants", "must take no arguments"),
        ("{bad}:raises", "failed: ValueError: boom"),
        ("{bad}:nothing", "computed nothing in torch"),
        ("{bad}:not_a_tensor", "returned list, not a tensor"),
        ("{bad}:tuple_out", "returned tuple, not a tensor"),
        ("no_colon", "wants module:function"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, spec: str, message: str) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(BAD)
    code, out, err = run("trace", "--torch", spec.format(bad=bad))
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert out == ""


@pytest.mark.parametrize(
    "extra",
    [["--lesson", "causal"], ["--weights", "linear"], ["--text", "a b"], ["--pipeline", "x:y"], ["--dtype", "float64"]],
)
def test_torch_replaces_the_lesson_options(extra: list[str]) -> None:
    code, _, err = run("trace", "--torch", f"{BOOK}:v1", *extra)
    assert code == 2 and "--torch runs your code as it is" in err


def test_wrong_number_of_tokens_and_query() -> None:
    code, _, err = run("trace", "--torch", f"{BOOK}:v1", "--tokens", "a b c")
    assert code == 2 and "3 token labels for inputs of 6 rows" in err
    code, _, err = run("trace", "--torch", f"{BOOK}:v1", "--query", "9")
    assert code == 2 and err.strip().endswith("--query must be from 1 to 6, got 9"), err


def test_the_default_query_is_the_inputs_rule() -> None:
    """As for a lesson: the second row (the tutorial's "journey"), or the first when there is one row."""
    from tests import book_attention

    assert tracer.trace_torch(book_attention.v1).query == 2
    assert tracer.trace_torch(lambda: torch.ones(1, 3) @ torch.ones(3, 2)).query == 1


def test_the_library_names_its_argument_not_the_flag() -> None:
    """A Python user never typed ``--query``: the library speaks of the argument ``query``."""
    from tests import book_attention

    with pytest.raises(tracer.InputError, match=r"^query must be from 1 to 6, got 9$"):
        tracer.trace_torch(book_attention.v1, query=9)


def test_a_function_that_exits_is_one_line_exit_2(tmp_path: Path) -> None:
    """SystemExit(0) inside the captured call is reported, not taken for success."""
    path = tmp_path / "bye.py"
    path.write_text("import sys\nimport torch\n\ndef run():\n    torch.ones(2) * 2\n    sys.exit(0)\n")
    code, out, err = run("trace", "--torch", f"{path}:run")
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and "SystemExit" in err, err
