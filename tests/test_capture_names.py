"""Names from the calling frame's bytecode: the README's capture block runs as written anywhere.

The store that follows a call names its value, read off the running
bytecode, so a file, ``python -``, ``exec`` of a string and a notebook give
the same ids; the source is only a fallback.  Tuple unpacking names each
value after its own target.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

import tracer
from tests.docblocks import blocks
from tracer.record.capture import Capture

from .notebooks import execute, kernel_fixture

ROOT = Path(__file__).resolve().parent.parent
SHOW = '\nprint(cap.trace["scores[2,1].p[1]"])\nprint(" ".join(n.name for n in cap.trace.nodes))\n'
WANT = "Step(scores[2,1].p[1] = 0.2365, op='mul', stage='scores')"


def _readme_block() -> str:
    (block,) = [b for b in blocks(ROOT / "README.md") if b.lang == "python" and "tracer.capture()" in b.code]
    return block.code


def _names(out: str) -> list[str]:
    lines = out.strip().splitlines()
    assert lines[-2] == WANT, out
    return lines[-1].split()


def test_the_readme_block_runs_from_a_file(tmp_path: Path) -> None:
    f = tmp_path / "mine.py"
    f.write_text(_readme_block() + SHOW)
    res = subprocess.run([sys.executable, str(f)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert res.returncode == 0, res.stderr
    assert {"scores", "weights", "scores.p"} <= set(_names(res.stdout))


def test_the_readme_block_runs_from_stdin_with_the_same_names(tmp_path: Path) -> None:
    f = tmp_path / "mine.py"
    f.write_text(_readme_block() + SHOW)
    from_file = subprocess.run([sys.executable, str(f)], capture_output=True, text=True, cwd=ROOT, check=True)
    res = subprocess.run(
        [sys.executable, "-"], input=_readme_block() + SHOW, capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert res.returncode == 0, res.stderr
    assert _names(res.stdout) == _names(from_file.stdout)


def test_the_readme_block_runs_through_exec_of_a_string() -> None:
    space: dict[str, object] = {}
    exec(compile(_readme_block(), "<string>", "exec"), space)
    cap = space["cap"]
    assert isinstance(cap, Capture)
    assert repr(cap.trace["scores[2,1].p[1]"]) == WANT


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield from kernel_fixture(tmp_path_factory)


def test_the_readme_block_runs_in_a_notebook(tmp_path: Path, kernel: None) -> None:
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"import sys; sys.path.insert(0, {str(ROOT)!r})"),
                nbformat.v4.new_code_cell(_readme_block() + SHOW)]  # fmt: skip
    path = tmp_path / "readme.ipynb"
    nbformat.write(nb, path)
    ran = execute(path)
    text = "".join(o.get("text", "") for c in ran.cells for o in c.get("outputs", []))
    assert WANT in text and " scores " in text


def test_tuple_unpacking_names_each_value_after_its_target() -> None:
    torch.manual_seed(0)
    a, b, c = nn.Linear(3, 2, bias=False), nn.Linear(3, 2, bias=False), nn.Linear(3, 2, bias=False)
    x = torch.rand(4, 3)

    def run() -> torch.Tensor:
        q, k, v = a(x), b(x), c(x)
        first, second = (q @ k.T).split(2, dim=-1)
        return torch.cat([first, second], dim=-1) @ v

    names = [n.name for n in tracer.trace_torch(run).nodes]
    assert {"q", "k", "v", "first", "second"} <= set(names), names
    assert not any(n.startswith("q_k_v") for n in names)


def test_code_compiled_without_a_source_is_named_from_its_bytecode() -> None:
    src = "scores = x @ x.T\nweights = torch.softmax(scores / 2.0, dim=-1)\nout = weights @ x\n"
    code = compile(src, "<no source>", "exec")
    with tracer.capture() as cap:
        exec(code, {"x": torch.rand(3, 2), "torch": torch})
    names = [n.name for n in cap.trace.nodes]
    assert {"scores", "weights", "weights.div", "out"} <= set(names), names


def test_prototype_weights_copied_with_deepcopy_are_not_inputs_and_the_header_names_the_input() -> None:
    import copy

    class Head(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(4, 4, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.softmax(self.q(x) @ x.T, dim=-1)

    class Multi(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            proto = Head()
            self.heads = nn.ModuleList([copy.deepcopy(proto) for _ in range(2)])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat([h(x) for h in self.heads], dim=-1)

    def run() -> torch.Tensor:
        torch.manual_seed(0)
        return Multi()(torch.rand(3, 4))

    t = tracer.trace_torch(run)
    leaves = [n.name for n in t.nodes if n.op == "input"]
    assert leaves == ["x", "heads_0.q.weight", "heads_1.q.weight"], leaves
    from tracer.present.captured import stage_story
    from tracer.present.strings import Strings

    text = str(stage_story(t, "inputs", Strings("en"))["text"])
    assert "its inputs (`x`)" in text and "`heads_0.q.weight`" in text  # names of the code, as code
