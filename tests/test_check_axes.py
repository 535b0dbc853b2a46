"""The check reads a student's tensor by what its axes hold, not by where they sit.

An axis of size one kept for broadcasting (one head's scores as ``(b, 1, T, T)``,
as BERT's and Hugging Face's layers hold them) is an axis with one entry: it is
dropped, and the axes around it are read as the axes they are.  A sequence-first
layout (``(T, b, h, d)``, scores ``(T, T, b, h)`` from ``einsum('ibhd,jbhd->ijbh')``)
is a permutation like any other, as long as the queries' axis comes before the keys'.
"""

from __future__ import annotations

import numpy as np

from tracer.compare.check import align
from tracer.compare.check.model import Seen

ONE_HEAD = ("b", "i", "j")
HEADS = ("b", "h", "i", "j")


def _scores(*shape: int) -> np.ndarray:
    return np.random.default_rng(7).normal(size=shape)


def test_a_broadcast_heads_axis_of_one_is_read_as_no_axis() -> None:
    ref = _scores(2, 6, 6)
    student = Seen("scores", "matmul", ref[:, None, :, :].copy())
    m = align.find(ref, ONE_HEAD, [student])
    assert m is not None and not m.merged
    assert np.array_equal(m.view(), ref)


def test_a_dropped_axis_of_one_does_not_let_the_keys_come_first() -> None:
    ref = _scores(2, 6, 6)
    transposed = Seen("scores", "matmul", ref.transpose(0, 2, 1)[:, None].copy())
    assert align.find(ref, ONE_HEAD, [transposed]) is None


def test_axes_of_one_the_reference_has_too_are_kept() -> None:
    ref = _scores(2, 1, 6, 6)  # two samples, one head, in the lesson's own axes
    m = align.find(ref, HEADS, [Seen("s", "op", ref.copy())])
    assert m is not None and m.perm == (0, 1, 2, 3) and not m.split


def test_a_leading_batch_is_still_read_at_its_first_entry_around_an_axis_of_one() -> None:
    ref = _scores(6, 6)  # a lesson without a batch
    student = np.stack([ref, ref + 1.0])[:, None]  # (b, 1, T, T)
    m = align.find(ref, ("i", "j"), [Seen("s", "op", student)])
    assert m is not None and np.array_equal(m.view(), ref)


def test_sequence_first_scores_are_a_layout() -> None:
    ref = _scores(2, 3, 5, 5)  # b, h, i, j
    seq_first = Seen("s", "einsum", ref.transpose(2, 3, 0, 1).copy())  # i, j, b, h
    m = align.find(ref, HEADS, [seq_first])
    assert m is not None and np.array_equal(m.view(), ref)
    keys_first = Seen("s", "einsum", ref.transpose(3, 2, 0, 1).copy())  # j, i, b, h: the scores transposed
    assert align.find(ref, HEADS, [keys_first]) is None


def test_a_module_that_takes_its_tokens_sequence_first_is_called_so() -> None:
    import importlib.util
    from pathlib import Path

    import tracer

    path = Path(__file__).parent / "check_published" / "labml_mha.py"
    spec = importlib.util.spec_from_file_location("labml_mha_axes", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    r = tracer.check(mod.MultiHeadAttention, lesson="multihead")
    assert r.ok, r.explain("en")
    assert r.given == {"x": "sequence_first"} and "given_sequence_first" in r.notes
    assert "sequence first" in r.explain("en")


def test_a_sequence_first_call_gets_its_tokens_and_a_wide_mask_sequence_first() -> None:
    import torch
    from torch import nn

    from tracer.compare.check import forwardargs, student
    from tracer.compare.check.run import spec_for

    class Takes(nn.Module):
        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return x

    spec = spec_for("multihead")
    arguments, given = forwardargs.bind(Takes(), spec, mask=forwardargs.Mask(rank=4, seq_first=True))
    assert arguments is not None and given == {"x": "sequence_first", "mask": "mask"}
    x = torch.rand(2, 5, 8)
    (tokens, mask), _ = arguments(x)
    assert tokens.shape == (5, 2, 8) and tokens.is_contiguous() and torch.equal(tokens[:, 1], x[1])
    assert mask.shape == (5, 5, 1, 1) and mask[0, 1, 0, 0] == float("-inf") and mask[1, 0, 0, 0] == 0
    back = student.call(Takes(), x, None, arguments).output
    assert torch.equal(back, x)  # the result read back batch first


def test_heads_one_number_wide_are_not_merged_by_dropping_their_width() -> None:
    ref = _scores(2, 6, 4)  # (b, T, heads · 1): the heads joined after the transpose
    before_the_transpose = Seen("z", "matmul", ref.transpose(0, 2, 1)[..., None].copy())  # (b, h, T, 1)
    assert align.find(ref, ("b", "i", "c"), [before_the_transpose]) is None
