"""A captured attention whose first row hides every key (NaN weights in both forms) is written, read and verified.

A mask built with ``triu(diagonal=0)`` hides each token from itself, so the
first query sees no key: its softmax is NaN, in torch's result and in the
left-to-right form alike.  The check between them must call two NaNs equal
and carry a finite bound, or the trace file (strict JSON) cannot be written:
``attn-trace trace --torch ... -o`` used to end with an internal error, exit 3.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from click.testing import CliRunner

import tracer
from tracer.cli import app

CODE = """
import torch


def run():
    torch.manual_seed(0)
    x = torch.rand(1, 6, 3)
    w_q, w_k, w_v = (torch.rand(3, 2) for _ in range(3))
    queries, keys, values = x @ w_q, x @ w_k, x @ w_v
    scores = queries @ keys.transpose(1, 2)
    hide = torch.triu(torch.ones(6, 6), diagonal=0).bool()  # the diagonal too: row 1 sees nothing
    weights = torch.softmax(scores.masked_fill(hide, -torch.inf) / 2**0.5, dim=-1)
    return weights @ values
"""


def test_a_row_with_no_key_is_written_and_verifies(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(CODE)
    out = tmp_path / "t.json"
    r = CliRunner().invoke(app, ["trace", "--torch", f"{tmp_path / 'm.py'}:run", "-o", str(out)])
    assert r.exit_code == 0, r.output
    t = tracer.load(out)
    assert torch.isnan(torch.from_numpy(t.tensor(t.meta["output"]).copy())[0, 0]).all()
    checks = [n for n in t.nodes if n.op == "maxabsdiff"]
    assert checks and all(math.isfinite(float(n.value)) for n in checks)
    assert all(math.isfinite(n.attrs.get("bound", 0.0)) for n in checks)
    assert t.verify().ok
    assert CliRunner().invoke(app, ["verify", str(out)]).exit_code == 0
