"""The q/k/v axis, found by what the code does with it rather than by its size.

A fused projection viewed as ``(b, t, 3, heads, d)`` or ``(b, t, 3, c)``
carries an axis that picks queries, keys or values; ``(b, t, heads, d)``
with three heads carries a head axis of the same size.  The size cannot
tell them apart, the code can: the selector is the axis it takes apart into
separate tensors (``q, k, v = qkv.unbind(0)``, ``k, v = kv``, ``qkv[0]``,
``split(1, dim=…)``), while heads are carried along to the scores.  So a
feature axis split in two is first named heads and features (``h``, ``d``:
:mod:`.regroup`); when an axis made by such a split is taken apart, this
module follows it back through the layout ops between (transpose, permute,
unsqueeze, squeeze, expand) to the reshape that made it, and names it the
selector ``p`` in each of those nodes when the capture ends.  An axis taken
apart that no reshape made (a batch, a list of tokens) keeps its name.
"""

from __future__ import annotations

import re
from dataclasses import replace

from tracer.core.trace import Node, Ref
from tracer.record.capture import axes as ax

CARRY = {"transpose", "permute", "unsqueeze", "squeeze", "expand", "T", "mT", "t"}
"""Layout ops whose result's axes are their operand's, moved: an axis is followed back through them."""
RESHAPE = {"view", "reshape", "unflatten", "flatten"}


def selector_axes(nodes: list[Node], taken: list[tuple[str, str]]) -> dict[str, dict[str, str]]:
    """Node name -> {axis: new name} for every axis taken apart that a reshape made (see the module doc)."""
    by = {n.name: n for n in nodes}
    out: dict[str, dict[str, str]] = {}
    for name, axis in taken:
        path: list[tuple[str, str]] = []
        node, a = by.get(name), axis
        made = False
        while node is not None and a in node.axes and len(path) < 32:
            path.append((node.name, a))
            if node.op in RESHAPE and len(node.args) == 1:
                made = a not in (node.args[0].index or ())  # not a kept axis: this reshape split it off
                if made:
                    break
            if node.op not in CARRY | RESHAPE or len(node.args) != 1:
                break
            ref = node.args[0]
            src = by.get(ref.node)
            if src is None or ref.index is None or a not in ref.index:
                break
            a = src.axes[list(ref.index).index(a)]
            node = src
        if made:
            for n, old in path:
                out.setdefault(n, {})[old] = "p"
    return out


_WORD = r"(?<![A-Za-z0-9_]){}(?![A-Za-z0-9_])"


def rename_axes(node: Node, names: dict[str, str]) -> Node:
    """``node`` with axes renamed (to a fresh letter where the wanted one is taken), templates and refs too."""
    new = dict(names)
    for old, want in names.items():
        others = [a for a in node.axes if a != old]
        new[old] = want if want not in others else ax.fresh([*node.axes, *new.values()], (want,))

    def sub(text: str) -> str:
        for old, want in new.items():
            text = re.sub(_WORD.format(re.escape(old)), want, text)
        return text

    def placeholders(text: str) -> str:
        return re.sub(r"<([^<>]*)>", lambda m: f"<{sub(m.group(1))}>", text)

    args = tuple(Ref(r.node, None if r.index is None else tuple(sub(e) for e in r.index)) for r in node.args)
    axes = tuple(new.get(a, a) for a in node.axes)
    return replace(node, axes=axes, args=args, text=placeholders(node.text), latex=placeholders(node.latex))
