"""One step of lesson ``kvcache``'s generation, as the primitives record it.

A step brings the tokens ``a..b`` (a :class:`Spot`)
and records, under ``step<s>.``, their rows of the inputs, their ``q``,
``k``, ``v``, the cache with their keys and values appended, their rows of
the causal mask, their scores against every cached key, the masked softmax
and their context rows; :func:`at_position` then writes the tokens'
positions into the formulas.  :mod:`~tracer.lessons.kvcache.pipeline` runs
the steps; :mod:`~tracer.lessons.kvcache.kvbatch` fills in the one-token
steps from one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tracer.core.trace import Node, Ref
from tracer.record.blocks.attention import context, projection, scores
from tracer.record.blocks.masks import masked_softmax
from tracer.record.recorder import Recorder, Var

SYMS = {"W_query": "W^{Q}", "W_key": "W^{K}", "W_value": "W^{V}"}


@dataclass(frozen=True)
class Spot:
    """Where a step of the generation is: the tokens ``a..b`` it brings (1-based) and the text naming it.

    ``pre`` begins its ids (``step4.``), ``off`` is ``a - 1`` as written in
    its operands and formulas (``x[<i>+3,<k>]``), ``first`` is ``a``.
    """

    a: int
    b: int
    pre: str
    off: str
    first: str

    @classmethod
    def of(cls, s: int, span: tuple[int, int]) -> Spot:
        """Step ``s``, which brings the tokens ``span``."""
        return cls(span[0], span[1], f"step{s}.", str(span[0] - 1), str(span[0]))

    def blank(self) -> Spot:
        """The same tokens, with every piece of text left blank (:data:`BLANK`), to be filled in per step."""
        return Spot(self.a, self.b, BLANK["pre"] + ".", BLANK["off"], BLANK["first"])


BLANK = {part: f"\x00{part}\x00" for part in ("pre", "prev", "off", "first")}
"""The blanks a :class:`Replay` step's text is recorded with: its step's name (``pre``, ``step4``), the
previous step's (``prev``, whose cache it reads), ``a - 1`` (``off``) and ``a`` (``first``)."""


def at_token(latex: str, pos: str, wide: bool) -> str:
    """``<i,j>`` -> ``4<j>`` (``4,<j>`` in a row of 10 or more keys): a one-token step's formulas read its position.

    The query axis leads every placeholder it is in (``<i>``, ``<i,j>``, ``<i,c>``):
    a step's nodes have no batch or head axis before it.
    """
    if "<i" not in latex:
        return latex
    return latex.replace("<i>", pos).replace("<i,", pos + ("," if wide else "") + "<")


def append(rec: Recorder, name: str, old: Var | None, new: Var, spot: Spot, sym: str) -> Var:
    """``name[j,c]``: the cache's rows ``1..a-1`` (``old``), then the new rows ``a..b`` (``new``)."""
    data = new.data if old is None else torch.cat((old.data, new.data))
    refs = [Ref(new.name, (f"j-{spot.off}", "c") if spot.a > 1 else ("j", "c"))]
    if old is not None:
        refs.insert(0, Ref(old.name, ("j", "c")))
    return rec.apply(
        "cat",
        name,
        data,
        refs,
        "jc",
        symbol=rf"{sym}^{{(<j>)}}_{{<c>}}",
        latex=rf"{sym}^{{(<j>)}}_{{<c>}}",
        text=f"{old.name}[<j>,<c>] for <j> < {spot.first}, else {new.name}[<j>−{spot.off},<c>]"
        if old is not None
        else f"{new.name}[<j>,<c>]",
    )


def qkv(rec: Recorder, pre: str, x: Var, w: dict[str, Var]) -> tuple[Var, Var, Var]:
    """``<pre>q``, ``<pre>k``, ``<pre>v``: the rows of ``x`` projected, every product and running sum recorded."""
    q, k, v = (
        projection(rec, f"{pre}{n}", x, w[wn], (), rf"{n}^{{(<i>)}}_{{<c>}}", SYMS[wn])
        for n, wn in (("q", "W_query"), ("k", "W_key"), ("v", "W_value"))
    )
    return q, k, v


def step(
    rec: Recorder, spot: Spot, x: Var, w: dict[str, Var], masks: tuple[Var, Var], cache: tuple[Var, Var] | None
) -> tuple[Var, Var, Var]:
    """One call of the cached attention: the new tokens ``a..b`` in, their context rows out, the cache grown.

    ``spot`` says which step it is and which tokens it brings, as numbers
    (to slice the data) and as the text its ids and formulas read.
    """
    a, b, off, pre = spot.a, spot.b, spot.off, spot.pre
    up, root = masks
    new = rec.apply(
        "getitem",
        f"{pre}x",
        x.data[a - 1 : b],
        [Ref(x.name, (f"i+{off}", "k"))],
        "ik",
        symbol=r"x^{(<i>)}_{<k>}",
        latex=r"x^{(<i>)}_{<k>}",
        text=f"x[<i>+{off},<k>]",
    )
    q, k, v = qkv(rec, pre, new, w)
    ck = append(rec, f"{pre}cache.k", cache[0] if cache else None, k, spot, "K")
    cv = append(rec, f"{pre}cache.v", cache[1] if cache else None, v, spot, "V")
    hide = rec.apply(
        "getitem",
        f"{pre}mask",
        up.data[a - 1 : b, :b],
        [Ref(up.name, (f"i+{off}", "j"))],
        "ij",
        symbol=r"U_{<i,j>}",
        latex=r"U_{<i,j>}",
        text=f"mask.triu[<i>+{off},<j>]: 1 if <j> > <i> + {off} else 0",
    )
    omega = scores(rec, f"{pre}omega", q, ck, (), r"\omega_{<i,j>}")
    rule = (rf"<j> \le <i> + {off}", rf"<j> > <i> + {off}", (f"<j> > <i> + {off}",))
    alpha = masked_softmax(rec, omega, hide, root, pre, r"\alpha^{\mathrm{cache}}", rule=rule)
    z = context(rec, f"{pre}z", alpha, cv, ())
    return z, ck, cv


def at_position(nodes: Sequence[Node], offset: int, single: bool) -> None:
    """Name the rows of a step's nodes by token position: row i of ``step<s>.q`` is token i + offset.

    Ids stay the step's own (``step2.q[1,1]``, its first and only row); the
    formulas read the token's position (``q^{(4)}_1``, or ``<i+3>`` when a
    step brings several tokens), and ``row_offset`` tells the page which
    token each row is.
    """
    if not offset and not single:
        return
    for node in nodes:
        if "i" in node.axes:
            wide = max(node.value.shape) > 9  # ids.fill separates indices with commas from 10 entries on
            node.latex = _shift(node.latex, offset, single, wide)
            node.symbol = _shift(node.symbol, offset, single, wide)
            node.attrs["row_offset"] = offset


def _shift(latex: str, offset: int, single: bool, wide: bool) -> str:
    """``<i,j>`` -> ``4<j>`` for a step's one new token (:func:`at_token`),
    ``<i+3,j>`` for several: the token's position."""
    if single:
        return at_token(latex, str(offset + 1), wide)
    return latex.replace("<i>", f"<i+{offset}>").replace("<i,", f"<i+{offset},")
