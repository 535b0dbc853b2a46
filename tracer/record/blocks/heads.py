"""Heads as layout steps: full-width columns viewed as heads (``split``), and heads joined back (``join``).

Lesson gqa's forward splits its projections into heads; the backward of a
lesson with heads joins the heads' gradients back to full width (the gradient of a split is the join, and of a
join the split).  Both are layout steps: each entry a copy of the one entry
its reference names, which ``verify`` checks.
"""

from __future__ import annotations

from tracer.core.trace import Ref
from tracer.record.blocks import backward as bw
from tracer.record.recorder import Recorder, Var


def split(rec: Recorder, name: str, full: Var, n: int, sym: str, axis: str = "h") -> Var:
    """``name[h,b,i,c]`` = ``full[b,i,(h-1)·d_h + c]``: the columns of ``full`` viewed as ``n`` heads.

    ``axis`` names the head axis: ``g`` for the key/value groups.
    """
    b, t, width = full.data.shape
    dh = width // n
    view = full.data.reshape(b, t, n, dh).permute(2, 0, 1, 3).contiguous()
    return rec.apply(
        "split_heads",
        name,
        view,
        [Ref(full.name, ("b", "i", f"{dh}*{axis}+c-{dh}"))],
        (axis, "b", "i", "c"),
        symbol=rf"{sym}^{{(<i>)}}_{{<{axis}>,<c>}}",
        latex=rf"{sym}^{{(<i>)}}_{{<{axis}>,<c>}} = {sym}^{{(<i>)}}_{{(<{axis}>-1) d_h + <c>}}",
        text=f"{full.name}[<b>,<i>,(<{axis}>−1)·{dh}+<c>]",
    )


def join(rec: Recorder, name: str, heads: Var, axis: str, sym: str) -> Var:
    """``name[b,i,c] = heads[⌈c/d_h⌉,b,i,(c−1) mod d_h + 1]``: per-head gradients back side by side."""
    n, b, t, dh = heads.data.shape
    return rec.apply(
        "join_heads",
        name,
        heads.data.permute(1, 2, 0, 3).reshape(b, t, n * dh),
        [Ref(heads.name, (f"(c-1)//{dh}+1", "b", "i", f"(c-1)%{dh}+1"))],
        "bic",
        symbol=bw.bar(rf"{sym}^{{(<i>)}}_{{<c>}}"),
        latex=bw.bar(rf"{sym}^{{(<i>)}}_{{<c>}}")
        + rf" = \bar{{{sym}}}^{{(<i>)}}_{{\lceil <c>/{dh} \rceil,\,(<c>-1) \bmod {dh} + 1}}",
        text=f"{heads.name}[⌈<c>/{dh}⌉,<b>,<i>,(<c>−1) mod {dh} + 1]",
    )
