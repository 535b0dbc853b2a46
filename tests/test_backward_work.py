"""The backward pass sends no work to slow paths: counted, never timed (the bench times it).

The gradients use no ``exp`` (so the exact exp's slow path sees exactly
the forward's entries), and every running sum of a backward contraction is
laid out along its summed axis, so reading the file back or verifying it
reads no running sum out of memory order.
"""

from __future__ import annotations

from pathlib import Path

import torch

import tracer
from tracer.core import exact, predict


def test_backward_adds_no_exp_and_no_scattered_reads(tmp_path: Path) -> None:
    x = torch.rand(24, 8, generator=torch.Generator().manual_seed(1))
    with exact.counting() as forward_exp:
        tracer.trace_lesson("simple", inputs=x, query=1)
    with exact.counting() as both_exp, predict.counting() as recorded:
        t = tracer.trace_lesson("simple", inputs=x, query=1, backward=True)
    assert both_exp.entries == forward_exp.entries > 0
    assert both_exp.slow == forward_exp.slow
    assert recorded.scattered == 0
    path = tmp_path / "t.json"
    t.save(path)
    with exact.counting() as loaded_exp, predict.counting() as loaded:
        back = tracer.load(path)
    assert loaded.scattered == 0 and loaded_exp.entries == 0
    with predict.counting() as verified:
        assert back.verify().ok
    assert verified.scattered == 0


def test_backward_steps_grow_as_the_forward_does() -> None:
    """The backward's steps are four T·T·d contractions and a few T·T and T·d steps: counted, not timed."""
    counts = {}
    for t in (8, 16):
        x = torch.rand(t, 4, generator=torch.Generator().manual_seed(2))
        plain = tracer.trace_lesson("simple", inputs=x, query=1)
        both = tracer.trace_lesson("simple", inputs=x, query=1, backward=True)
        counts[t] = len(both) - len(plain)
    d = 4
    for t, n in counts.items():
        contractions = 4 * 2 * t * t * d + t * t + 3 * t * d  # dalpha, dx.value, dx.query, dx.key: .p, .s, totals
        softmax = 2 * t * t + t + 2 * t * t  # the row sum's .p, .s and totals; shift and product per weight
        inputs = t * d + 2 * t * d  # dz, and the two additions of the three paths
        want = contractions + softmax + inputs
        assert n == want, (t, n, want)
