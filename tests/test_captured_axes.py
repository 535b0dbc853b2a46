"""Axes of captured tensors named by what they index, across the whole computation (issue 22, items 1 and 2).

An op names its result's axes from what it sees when it runs; the capture
then looks again across the trace (``tracer.record.capture.relabel``):
weights times values per head keep the head's features ``d`` (they were
called ``c``, the embedding), the in-projection unflattened into q/k/v is
``(…, p, c)`` (each part a whole feature vector, not a head's), a causal
mask made from ``torch.ones(T, T)`` indexes queries and keys ``(i, j)``,
and ``nn.MultiheadAttention``'s key-padding mask indexes batch and keys
``(b, j)``, broadcast over heads and queries ``(b, h, i, j)`` before it is
folded into batch-times-heads ``(n, i, j)``.
"""

from __future__ import annotations

import pytest

import tracer
from tests import capture_corpus as corpus
from tests import capture_corpus_more as more
from tests import capture_corpus_unseen as unseen
from tracer.core.trace import Trace


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    runs = {"fused": corpus.fused, "packed": corpus.packed, "window": corpus.window, "mha_masks": corpus.mha_masks}
    runs |= {"padding": more.mha_batch_padding, "annotated": more.annotated, "mingpt": more.mingpt}
    runs |= {"t5": unseen.t5}
    return {name: tracer.trace_torch(run) for name, run in runs.items()}


def _axes(t: Trace, name: str) -> tuple[str, ...]:
    return t.node(name).axes


@pytest.mark.parametrize("name", ["fused", "packed", "window", "mha_masks", "padding", "annotated", "mingpt", "t5"])
def test_relabelled_traces_still_verify(traces: dict[str, Trace], name: str) -> None:
    assert traces[name].verify().ok


def test_weights_times_values_per_head_are_a_heads_features(traces: dict[str, Trace]) -> None:
    assert _axes(traces["fused"], "y") == ("b", "h", "i", "d")
    assert _axes(traces["fused"], "y.transpose") == ("b", "i", "h", "d")
    assert _axes(traces["fused"], "y.transpose.view") == ("b", "i", "c")  # the heads joined: the embedding
    assert _axes(traces["packed"], "x_2.matmul") == ("b", "h", "i", "d")
    assert _axes(traces["annotated"], "x") == ("b", "h", "i", "d")
    assert _axes(traces["mingpt"], "y") == ("b", "h", "i", "d")


def test_a_causal_mask_made_from_ones_indexes_queries_and_keys(traces: dict[str, Trace]) -> None:
    t = traces["fused"]
    assert _axes(t, "causal") == ("i", "j")  # torch.tril(torch.ones(16, 16)) in __init__
    assert _axes(t, "bias") == ("b", "h", "i", "j")  # .view(1, 1, 16, 16): broadcast over batch and heads
    assert _axes(t, "bias.getitem") == ("b", "h", "i", "j")
    assert _axes(traces["annotated"], "mask") == ("b", "h", "i", "j")  # mask.unsqueeze(1)
    w = traces["window"]  # pos[:, None] - pos[None, :]: rows are queries, columns keys
    assert _axes(w, "dist") == ("i", "j") and _axes(w, "blocked") == ("i", "j")


def test_t5s_relative_position_table_indexes_queries_and_keys(traces: dict[str, Trace]) -> None:
    t = traces["t5"]  # memory_position - context_position, clamped into buckets, looked up per head
    for name in ("relative_position", "buckets.clamp", "buckets", "context_position", "memory_position"):
        assert _axes(t, name) == ("i", "j"), name  # (5, 1) and (1, 5) broadcast against keys and queries
    assert _axes(t, "arange") == ("i",) and _axes(t, "arange_2") == ("j",)
    assert _axes(t, "values") == ("i", "j", "h") and _axes(t, "position_bias") == ("b", "h", "i", "j")
    assert t.node("values").attrs["indices"] == "buckets"


def test_the_key_padding_mask_indexes_batch_and_keys(traces: dict[str, Trace]) -> None:
    for t in (traces["padding"], traces["mha_masks"]):
        assert _axes(t, "attn.key_padding_mask") == ("b", "j")
        assert _axes(t, "attn.key_padding_mask.view") == ("b", "h", "i", "j")
        assert _axes(t, "attn.key_padding_mask.view.expand") == ("b", "h", "i", "j")
        assert _axes(t, "attn.key_padding_mask.view.expand.reshape") == ("n", "i", "j")


def test_multihead_attentions_projections_are_named_by_what_they_hold(traces: dict[str, Trace]) -> None:
    t = traces["padding"]  # batch_first: (b, i, c) in, (i, b, c) inside
    assert _axes(t, "attn.in_proj.unflatten") == ("i", "b", "p", "c")  # (3, E): q/k/v, each a whole embedding
    assert _axes(t, "attn.in_proj_q") == ("i", "b", "c")
    assert _axes(t, "attn.q") == ("n", "i", "d")
    assert _axes(t, "attn.context") == ("n", "i", "d")
    assert _axes(t, "attn.context.transpose.reshape") == ("r", "c")  # (T·N, E): tokens times batch, features
    assert _axes(t, "attn.out_proj") == ("r", "c")
    assert _axes(t, "attn.out_proj.view") == ("i", "b", "c")
    assert _axes(t, "attn.out_proj.view.transpose") == ("b", "i", "c")
    assert _axes(traces["mha_masks"], "attn.in_proj_bias") == ("c",)


def test_heads_of_one_feature_each_are_heads() -> None:
    """The book's ``MultiHeadAttention(d_out=2, num_heads=2)``: ``view(b, t, 2, 1)`` is two heads of one feature."""
    from tests import book_attention as book
    from tracer.present.captured import narrative

    t = tracer.trace_torch(book.mha)
    assert t.verify().ok
    assert _axes(t, "keys.view") == ("b", "i", "h", "d")
    assert _axes(t, "attn_weights") == ("b", "h", "i", "j")
    assert _axes(t, "context_vec.view") == ("b", "i", "c")  # the heads joined again: features
    for lang, want in (("en", "per head, for 2 heads"), ("zh", "共 2 个头")):
        assert want in str(narrative(t, lang).stages["attn_weights"].title)
