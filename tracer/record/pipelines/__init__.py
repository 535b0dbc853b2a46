"""One module per lesson, each built only from traced primitives.

``LESSONS`` maps a lesson name to ``(module, one-line summary)``; modules are
imported on demand so that listing lessons costs no torch import.
"""

from __future__ import annotations

LESSONS: dict[str, tuple[str, str]] = {
    "simple": (
        "tracer.record.pipelines.simple",
        "Self-attention without trainable weights: dot-product scores, four normalizations, context vectors.",
    ),
    "trainable": (
        "tracer.record.pipelines.trainable",
        "Self-attention with trainable weights: query, key and value projections, scores scaled by sqrt(d_k).",
    ),
    "causal": (
        "tracer.record.pipelines.causal",
        "Causal masks both ways (renormalized and -inf), dropout, and the compact module on a batch.",
    ),
    "multihead": (
        "tracer.record.pipelines.multihead",
        "Multi-head attention two ways: a wrapper of causal heads, and projections split into heads.",
    ),
    "window": (
        "tracer.record.pipelines.window",
        "Sliding-window causal attention: each query sees its last w keys; with w >= T it is the causal lesson.",
    ),
    "gqa": (
        "tracer.record.pipelines.gqa",
        "Grouped-query attention: H query heads share G key/value groups; G = H is multi-head, G = 1 multi-query.",
    ),
    "flash": (
        "tracer.record.pipelines.flash",
        "FlashAttention's online softmax: blocks of B keys, running max and sum, rescaled output; B = T is one block.",
    ),
    "rope": (
        "tracer.record.pipelines.rope",
        "Rotary position embeddings: queries and keys turned pair by pair by m·θ; scores depend only on m − n.",
    ),
    "kvcache": (
        "tracer.record.pipelines.kvcache",
        "KV cache: generation token by token, each step's context row equal to full causal attention bit for bit.",
    ),
}
