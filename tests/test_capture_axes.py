"""Axes named by what they index, decided by what the code does with them, not by their sizes.

A model with three heads has a head axis of size 3, as a fused projection
has a q/k/v axis of size 3: the q/k/v axis is the one the code takes apart
(``unbind``, ``qkv[0]``), heads are carried to the scores.  Either way the
report draws one heatmap per head, labelled with the tokens.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import tracer
from tests import capture_corpus as corpus
from tracer.core.trace import Trace
from tracer.present import report
from tracer.present.captured import attentions, role
from tracer.present.views.nodes import anchor

T, D3 = 4, 9


class Stacked(nn.Module):
    """``qkv.view(b, t, 3, c)``: the q/k/v axis split off alone, taken apart with ``unbind(2)``."""

    def __init__(self, dim: int = D3, heads: int = 3) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, c).unbind(2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        w = torch.einsum("bhxe,bhye->bhxy", q, k).softmax(-1)
        return (w @ v).transpose(1, 2).reshape(b, t, c)


def _three_heads_fused() -> torch.Tensor:
    torch.manual_seed(1)
    return corpus.FusedCausal(corpus.Config(n_embd=D3, n_head=3))(torch.rand(1, T, D3))


def _three_heads_packed() -> torch.Tensor:
    torch.manual_seed(2)
    return corpus.PackedHeads(dim=D3, heads=3, how="index")(torch.rand(1, T, D3))


def _stacked() -> torch.Tensor:
    torch.manual_seed(3)
    return Stacked()(torch.rand(1, T, D3))


def _three_heads_mha() -> torch.Tensor:
    torch.manual_seed(4)
    attn = nn.MultiheadAttention(D3, 3, batch_first=True)
    x = torch.rand(1, T, D3)
    return attn(x, x, x, need_weights=True, average_attn_weights=False)[0]


RUNS = {"fused": _three_heads_fused, "packed": _three_heads_packed, "stacked": _stacked, "mha": _three_heads_mha}


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    return {name: tracer.trace_torch(run) for name, run in RUNS.items()}


def _weights(t: Trace) -> list[object]:
    out = []
    for a in attentions(t):
        ws = [n for n in a if role(t, a, n) == "weights"]
        out.append(next((n for n in ws if n.axes[:2] == ("b", "h")), ws[0]))
    return out


@pytest.mark.parametrize("name", list(RUNS))
def test_three_heads_are_heads_and_the_qkv_axis_is_the_one_taken_apart(traces: dict[str, Trace], name: str) -> None:
    t = traces[name]
    assert np.array_equal(t.tensor(t.meta["output"]), RUNS[name]().detach().numpy())
    assert t.verify().ok and t.meta["opaque"] == []
    (w,) = _weights(t)
    assert w.axes[-2:] == ("i", "j") and "p" not in w.axes, w.axes  # type: ignore[attr-defined]
    assert w.value.shape[w.axes.index("h")] == 3, (w.name, w.axes)  # type: ignore[attr-defined]
    for n in t.nodes:  # heads are never called q/k/v: a p axis is one the code took apart
        if "p" in n.axes and n.op != "input":
            readers = [r for r in t.nodes if any(a.node == n.name for a in r.args)]
            assert any(r.op in ("unbind", "getitem") for r in readers) or any("p" in r.axes for r in readers), n.name


def test_a_two_way_split_with_three_heads_is_heads_and_features(traces: dict[str, Trace]) -> None:
    t = traces["fused"]  # ``k.view(B, T, 3, C // 3)``: three heads, not q/k/v
    assert t.node("k.view").axes == ("b", "i", "h", "d")
    assert t.node("k.view.transpose").axes == ("b", "h", "i", "d")
    s = traces["stacked"]  # ``view(b, t, 3, c).unbind(2)``: the q/k/v axis, read as such from the unbind
    axes = s.node("qkv.view").axes
    assert axes[:3] == ("b", "i", "p") and "h" not in axes, axes


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", list(RUNS))
def test_the_report_draws_one_heatmap_per_head_with_the_tokens(traces: dict[str, Trace], name: str, lang: str) -> None:
    t = traces[name]
    files = report.build(t, lang)
    (w,) = _weights(t)
    for h in range(1, 4):
        svg = files[f"fig-{anchor(w.name)}-h{h}.svg"].decode()  # type: ignore[attr-defined]
        assert all(tok in svg for tok in t.tokens), (name, h)
    assert f"fig-{anchor(w.name)}-h4.svg" not in files  # type: ignore[attr-defined]
