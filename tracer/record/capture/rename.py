"""Rewriting a capture's provisional names (``§12``) to their final ids in every place a name appears.

:func:`tracer.record.capture.naming.final_names` decides the ids; this
module applies them to the nodes: names, references, text and LaTeX
templates and attributes, in one pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from tracer.core import formula
from tracer.core.trace import ELEMENT, Node, Ref
from tracer.record.capture.symbols import Symbols

_PROV = re.compile(r"§[0-9]+")
_NAMED = re.compile(r"\\mathrm\{([^{}]*§[0-9]+[^{}]*)\}")
"""An operand a formula names by its (provisional) id: ``\\mathrm{§12.xw}``."""


def rename(nodes: list[Node], names: dict[str, str], modules: Iterable[str] = ()) -> list[Node]:
    """The nodes with every provisional name replaced (splits widened for the added segments).

    In a formula an operand named by its id gets its symbol instead
    (:mod:`tracer.record.capture.symbols`; ``modules`` are the module paths as
    ids write them).  Each node's symbol is the one its formula states
    (:func:`tracer.core.formula.stated_symbol`): captured ops write free-form
    formulas, and the names they read operands by are not entry symbols.
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
        out.append(
            replace(
                n,
                name=new,
                split=(0,) * grow + tuple(n.split),
                args=tuple(Ref(sub(r.node), r.index) for r in n.args),
                text=sub(n.text),
                attrs=attrs(n.attrs),
            )
        )
    final = {n.name: n for n in out}
    symbols = Symbols(final, modules)

    def maths(text: str) -> str:
        def one(m: re.Match[str]) -> str:
            got = sub(m.group(1))
            return symbols.of(got) if got in final else r"\mathrm{" + got.replace("_", r"\_") + "}"

        return sub(_NAMED.sub(one, text), latex=True)

    done = []
    for n in out:
        latex = maths(n.latex)
        done.append(replace(n, latex=latex, symbol=formula.stated_symbol(latex, n.granularity == ELEMENT)))
    return done
