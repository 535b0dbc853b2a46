"""An ``einsum`` equation written out: what its ``...`` stands for, as letters of their own."""

from __future__ import annotations

from tracer.record.capture.ops.common import Unsupported


def no_ellipsis(eq: str, dims: list[int]) -> str:
    """``'...id,...jd->...ij'`` with ``...`` written out as capital letters the equation does not use.

    Each operand's ``...`` covers the dimensions its letters leave, aligned
    from the right as torch broadcasts them; the output's (and an implicit
    output's) ``...`` is the longest of them, in front.
    """
    if "..." not in eq:
        return eq
    lhs, arrow, rhs = eq.partition("->")
    specs = lhs.split(",")
    if len(specs) != len(dims):
        raise Unsupported("einsum operands")
    spare = [ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if ch not in eq]
    widths = [n - len(sp.replace("...", "")) if "..." in sp else 0 for sp, n in zip(specs, dims, strict=True)]
    most = max(widths)
    if min(widths) < 0 or most > len(spare):
        raise Unsupported("einsum '...' of these operands")
    lead = "".join(spare[:most])
    specs = [sp.replace("...", lead[most - w :]) for sp, w in zip(specs, widths, strict=True)]
    if not arrow:  # the implicit output: the ``...`` letters, then the letters used once, alphabetically
        once = sorted(ch for ch in set("".join(specs)) - set(lead) if "".join(specs).count(ch) == 1)
        return ",".join(specs) + "->" + lead + "".join(once)
    return ",".join(specs) + "->" + rhs.replace("...", lead)
