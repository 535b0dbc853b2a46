"""Lesson ``kvcache``'s stage ``cost``: the multiplications with and without the cache, and its size per token.

A step that brings ``n`` new tokens to ``b`` tokens in all projects the new
tokens (``3 n d_in d_out`` multiplications), scores them against the ``b``
cached keys (``n b d_out``) and weighs the ``b`` cached values
(``n b d_out``): exactly the products and terms the step records.  Without a
cache every step projects, scores and weighs all ``b`` rows again.  The cache
keeps, per token and layer, one key and one value: ``2 L d_out`` numbers.
"""

from __future__ import annotations

from typing import Any

import torch

from tracer.record.recorder import Recorder

LAYERS = 1
"""The lesson's model has one attention layer; a real model keeps one cache per layer."""
COUNTS = ("cost.step.cached", "cost.step.full", "cost.cached", "cost.full", "cache.values", "cache.bytes")
"""The nodes that count (multiplications, numbers, bytes): whole numbers, shown as such."""


def products_per_step(spans: list[tuple[int, int]], d_in: int, d: int) -> tuple[list[int], list[int]]:
    """Multiplications of each step with the cache (new rows only) and without (every row recomputed)."""
    with_cache, without = [], []
    for a, b in spans:
        n = b - a + 1
        with_cache.append(3 * n * d_in * d + 2 * n * b * d)
        without.append(3 * b * d_in * d + 2 * b * b * d)
    return with_cache, without


def cost(rec: Recorder, spans: list[tuple[int, int]], d_in: int, d: int) -> dict[str, Any]:
    """Record the products per step both ways, their totals, and the cache's size per token."""
    with_cache, without = products_per_step(spans, d_in, d)
    for name, counts, how in (("cached", with_cache, "with the cache"), ("full", without, "recomputing every row")):
        rec.input(
            f"cost.step.{name}",
            torch.tensor(counts, dtype=torch.float64),
            "s",
            symbol=rf"N^{{\mathrm{{{name}}}}}_{{<s>}}",
            text=f"multiplications of step <s> {how}",
        )
    cached = rec.constant("cost.cached", float(sum(with_cache)), symbol=r"N^{\mathrm{cache}}", text="Σ_s products")
    full = rec.constant("cost.full", float(sum(without)), symbol=r"N^{\mathrm{full}}", text="Σ_s products")
    rec.elementwise(
        "div",
        "cost.ratio",
        [full(), cached()],
        (),
        symbol=r"N^{\mathrm{full}} / N^{\mathrm{cache}}",
        latex=r"N^{\mathrm{full}} / N^{\mathrm{cache}}",
        text="cost.full / cost.cached",
    )
    size = 2 * LAYERS * d
    rec.constant("cache.values", float(size), symbol=r"2 L d_{\mathrm{out}}", text=f"2 × {LAYERS} × {d}")
    width = rec.dtype.itemsize
    rec.constant(
        "cache.bytes", float(size * width), symbol=r"2 L d_{\mathrm{out}} b", text=f"2 × {LAYERS} × {d} × {width}"
    )
    return {"cached": with_cache, "full": without, "bytes_per_token": size * width}
