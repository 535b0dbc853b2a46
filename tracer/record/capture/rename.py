"""Rewriting a capture's provisional names (``§12``) to their final ids in every place a name appears.

:func:`tracer.record.capture.naming.final_names` decides the ids; this
module applies them to the nodes: names, references, text and LaTeX
templates and attributes, in one pass.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from tracer.core import formula
from tracer.core.trace import ELEMENT, Node, Ref

_PROV = re.compile(r"§[0-9]+")


def rename(nodes: list[Node], names: dict[str, str]) -> list[Node]:
    """The nodes with every provisional name replaced (splits widened for the added segments).

    Each node's symbol is the one its formula states (:func:`tracer.core.formula.stated_symbol`):
    captured ops write free-form formulas, and the names they read operands by are not entry symbols.
    """

    def sub(text: str, latex: bool = False) -> str:
        def one(m: re.Match[str]) -> str:
            got = names.get(m.group(0), m.group(0).replace("§", "n"))
            return got.replace("_", r"\_") if latex else got

        return _PROV.sub(one, text)

    def attrs(value: Any) -> Any:
        if isinstance(value, str):
            return sub(value)
        if isinstance(value, dict):
            return {k: attrs(v) for k, v in value.items()}
        if isinstance(value, list):
            return [attrs(v) for v in value]
        return value

    out = []
    for n in nodes:
        new = sub(n.name)
        grow = new.count(".") - n.name.count(".")
        latex = sub(n.latex, latex=True)
        out.append(
            replace(
                n,
                name=new,
                split=(0,) * grow + tuple(n.split),
                args=tuple(Ref(sub(r.node), r.index) for r in n.args),
                text=sub(n.text),
                latex=latex,
                symbol=formula.stated_symbol(latex, n.granularity == ELEMENT),
                attrs=attrs(n.attrs),
            )
        )
    return out
