"""The catalogue's first mistakes: layout, bias, scores, scaling, softmax, masks, dropout, heads, windows, groups.

Each :class:`~.entry.Entry` predicts what the student's run would hold if
they had made that mistake; :mod:`.catalogue` puts these first, then the
mistakes found in published code, and tries them in that order.
"""

from __future__ import annotations

from tracer.compare.check import groups as G
from tracer.compare.check import hypotheses as H
from tracer.compare.check import published as P
from tracer.compare.check import windows as W
from tracer.compare.check.entry import Entry

MISTAKES: tuple[Entry, ...] = (
    Entry(
        "output_layout",
        ("context", "output", "merge"),
        P.layout,
    ),
    Entry(
        "bias_used",
        ("projections", "heads"),
        H.bias,
    ),
    Entry(
        "scores_transposed",
        ("scores", "scaling", "mask", "weights"),
        H.transposed,
    ),
    Entry(
        "scale_wrong",
        ("scaling", "mask", "weights"),
        H.scale_wrong,
    ),
    Entry(
        "scale_inverted",
        ("scaling", "mask", "weights"),
        H.scale_inverted,
    ),
    Entry(
        "scale_missing",
        ("scaling", "mask", "weights"),
        H.scale_missing,
    ),
    Entry(
        "softmax_dim",
        ("weights",),
        H.softmax_dim,
    ),
    Entry(
        "sum_normalised",
        ("weights",),
        H.sum_normalised,
    ),
    Entry(
        "mask_after_softmax",
        ("mask", "weights"),
        H.mask_after,
    ),
    Entry(
        "mask_zero",
        ("mask", "scaling", "weights"),
        H.mask_zero,
    ),
    Entry(
        "mask_diagonal",
        ("mask", "scaling", "weights"),
        H.mask_diagonal,
    ),
    Entry(
        "mask_shifted",
        ("mask", "scaling", "weights"),
        H.mask_shifted,
    ),
    Entry(
        "mask_missing",
        ("mask", "scaling", "weights"),
        H.mask_missing,
    ),
    Entry(
        "mask_not_cut",
        ("mask",),
        H.mask_not_cut,
    ),
    Entry(
        "dropout_on_scores",
        ("dropout",),
        H.dropout_scores,
    ),
    Entry(
        "dropout_before_softmax",
        ("dropout",),
        H.dropout_masked,
    ),
    Entry(
        "dropout_unscaled",
        ("dropout",),
        H.dropout_unscaled,
    ),
    Entry(
        "dropout_in_eval",
        ("context",),
        H.dropout_in_eval,
    ),
    Entry(
        "heads_shared",
        ("projections",),
        H.heads_shared,
    ),
    Entry(
        "heads_concat_dim",
        ("merge",),
        H.heads_concat_dim,
    ),
    Entry(
        "heads_not_transposed",
        ("merge",),
        H.heads_merge,
    ),
    Entry(
        "out_proj_missing",
        ("output",),
        H.out_missing,
    ),
    Entry(
        "out_proj_per_head",
        ("output",),
        H.out_per_head,
    ),
    Entry(
        "values_times_scores",
        ("context", "weights"),
        H.values_scores,
    ),
    Entry(
        "window_width_off",
        ("mask", "scaling", "weights"),
        W.width_off,
    ),
    Entry(
        "window_not_causal",
        ("mask", "scaling", "weights"),
        W.not_causal,
    ),
    Entry(
        "window_missing",
        ("mask", "scaling", "weights"),
        W.window_missing,
    ),
    Entry(
        "gqa_orders_mixed",
        ("heads", "context"),
        G.orders_mixed,
    ),
    Entry(
        "gqa_repeat",
        ("heads", "scores", "mask", "scaling", "weights", "context"),
        G.repeat_not_interleave,
    ),
)
"""In the order they are tried."""
