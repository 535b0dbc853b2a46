"""Building blocks shared by the lessons after the tutorial's.

Each block records its nodes through a :class:`~tracer.record.recorder.Recorder`
under documented names (``stable.max``, ``alpha``, ``z.t`` …), so every
lesson addresses the same quantity by the same id.  Blocks take the ``lead``
axes they work over (a batch ``b``, a head ``h``), which come before the
query axis ``i``, key axis ``j``, embedding axis ``k`` and projected axis
``c``.  Plain-text forms are written from node names and axes; LaTeX forms
name the math.
"""

from __future__ import annotations

from tracer.core.ids import rename
from tracer.record.recorder import Recorder, Var


def P(axes: tuple[str, ...]) -> tuple[str, ...]:
    """Placeholders for axes: ``("b", "i")`` -> ``("<b>", "<i>")``."""
    return tuple(f"<{a}>" for a in axes)


def r(name: str, *index: str) -> str:
    """Text of an element reference: ``r("alpha", "<i>", "j")`` -> ``alpha[<i>,j]``."""
    return f"{name}[{','.join(index)}]" if index else name


def projection(
    rec: Recorder, name: str, x: Var, w: Var, lead: tuple[str, ...], sym: str, wsym: str, xsym: str = "x^{(<i>)}"
) -> Var:
    """``name[lead…, i, c] = Σ_k x[…, i, k] · w[…, k, c]``: the products and running sums of ``x @ W``."""
    xl, wl = x.axes[:-2], w.axes[:-2]
    return rec.contract(
        name,
        x(*xl, "i", "k"),
        w(*wl, "k", "c"),
        (*lead, "i", "c", "k"),
        "k",
        symbol=sym,
        latex=rf"{sym} = \sum_{{k}} {xsym}_{{k}}\, {wsym}_{{k<c>}}",
        text=f"Σ_k {r(x.name, *P(xl), '<i>', 'k')} × {r(w.name, *P(wl), 'k', '<c>')}",
        part_latex=(
            rf"{xsym}_{{<k>}}\, {wsym}_{{<k,c>}}",
            rf"\sum_{{m=1}}^{{<k>}} {xsym}_{{m}}\, {wsym}_{{m<c>}}",
        ),
        part_text=(
            f"{r(x.name, *P((*xl, 'i', 'k')))} × {r(w.name, *P((*wl, 'k', 'c')))}",
            f"Σ_{{m≤<k>}} {r(x.name, *P(xl), '<i>', 'm')} × {r(w.name, *P(wl), 'm', '<c>')}",
        ),
    )


def scores(rec: Recorder, name: str, q: Var, k: Var, lead: tuple[str, ...], sym: str) -> Var:
    """``omega[lead…, i, j] = q(i) · k(j)``: every product and running sum recorded."""
    return rec.contract(
        name,
        q(*lead, "i", "c"),
        k(*lead, "j", "c"),
        (*lead, "i", "j", "c"),
        "c",
        symbol=sym,
        latex=rf"{sym} = q^{{(<i>)}} \cdot k^{{(<j>)}}",
        text=f"{r(q.name, *P(lead), '<i>')}·{r(k.name, *P(lead), '<j>')}",
        part_latex=(r"q^{(<i>)}_{<c>}\, k^{(<j>)}_{<c>}", r"\sum_{m=1}^{<c>} q^{(<i>)}_{m}\, k^{(<j>)}_{m}"),
        part_text=(
            f"{r(q.name, *P((*lead, 'i', 'c')))} × {r(k.name, *P((*lead, 'j', 'c')))}",
            f"Σ_{{m≤<c>}} {r(q.name, *P(lead), '<i>', 'm')} × {r(k.name, *P(lead), '<j>', 'm')}",
        ),
    )


def row_sum(
    rec: Recorder, name: str, terms: Var, sym: str, term: str, latex: str | None = None, index: str = "m"
) -> Var:
    """``name[lead…, i] = Σ_j terms[lead…, i, j]`` with every running sum recorded.

    ``sym`` names the total (``S_{<i>}``) and ``term`` one summand, an element
    symbol with its axes as placeholders (``\\omega_{<i,j>}``); the formula reads
    ``sym = Σ_j term`` unless ``latex`` gives another (a check that weights sum
    to 1 has no name of its own).  The total leaves the summed axis unbound, so
    it reads as the letter j; the running sums rename it to the summation index
    ``index``, a letter the summand does not already use.
    """
    axes = terms.axes
    head = P(axes[:-1])
    return rec.contract(
        name,
        terms(*axes),
        None,
        axes,
        axes[-1],
        symbol=sym,
        latex=latex if latex is not None else rf"{sym} = \sum_{{j}} {term}",
        text=f"Σ_j {r(terms.name, *head, 'j')}",
        part_latex=("", rf"\sum_{{{index}=1}}^{{<j>}} " + rename(term, {axes[-1]: index})),
        part_text=("", f"Σ_{{{index}≤<j>}} {r(terms.name, *head, index)}"),
    )


def weights_sum(rec: Recorder, alpha: Var, sym: str) -> Var:
    """``<alpha>_sum[lead…, i] = Σ_j alpha[lead…, i, j]``: a normalization must give 1."""
    term = rf"{sym}_{{<i,j>}}"
    total = rf"\sum_{{j}} {term}"  # the check has no name of its own: the sum is its symbol and its formula
    return row_sum(rec, f"{alpha.name}_sum", alpha, total, term, latex=total)


def stable_softmax(
    rec: Recorder,
    s: Var,
    sym: str,
    out: str = "alpha",
    prefix: str = "stable",
    total: str = "E",
    weights: str = r"\alpha",
    top: str = "m",
) -> Var:
    """Softmax over the last axis of ``s`` in the stable form: max, shift, exp, running sums, quotients.

    The row maximum is ``m_i``, so the running sums count with ``j'`` (the
    denominator's index), not with the ``m`` other running sums use;
    ``weights`` is the letter of the result (``\\alpha^{\\mathrm{causal}}`` where
    a lesson has other weights too), ``top`` that of the row maximum
    (``\\tilde{m}`` for the overflow stage's scaled scores, so that a page
    showing both never gives one symbol two values).
    """
    axes = s.axes
    head = axes[:-1]
    mi = top + "_{<i>}"
    m = rec.max(
        f"{prefix}.max",
        s(*axes),
        axes[-1],
        symbol=mi,
        latex=rf"{mi} = \max_{{j}} {sym}",  # j is not an axis of the max: it reads as the letter
        text=f"max_j {r(s.name, *P(head), 'j')}",
    )
    shift = rec.elementwise(
        "sub",
        f"{prefix}.shift",
        [s(*axes), m(*head)],
        axes,
        symbol=rf"{sym} - {mi}",
        latex=rf"{sym} - {mi}",
        text=f"{r(s.name, *P(axes))} − {r(m.name, *P(head))}",
    )
    e = rec.elementwise(
        "exp",
        f"{prefix}.exp",
        [shift(*axes)],
        axes,
        symbol=rf"e^{{{sym} - {mi}}}",
        latex=rf"e^{{{sym} - {mi}}}",
        text=f"exp({r(shift.name, *P(axes))})",
    )
    other = rename(sym, {"j": "j'"})  # the summation index of the denominator
    sums = row_sum(rec, f"{prefix}.sum", e, rf"{total}_{{<i>}}", rf"e^{{{sym} - {mi}}}", index="j'")
    alpha = rec.elementwise(
        "div",
        out,
        [e(*axes), sums(*head)],
        axes,
        symbol=rf"{weights}_{{<i,j>}}",
        latex=rf"{weights}_{{<i,j>}} = \frac{{e^{{{sym} - {mi}}}}}{{\sum_{{j'}} e^{{{other} - {mi}}}}}",
        text=f"{r(e.name, *P(axes))} / {r(sums.name, *P(head))}",
    )
    weights_sum(rec, alpha, weights)
    return alpha


def context(rec: Recorder, name: str, alpha: Var, v: Var, lead: tuple[str, ...]) -> Var:
    """``z[lead…, i, c] = Σ_j alpha[lead…, i, j] · v[lead…, j, c]``, term by term."""
    return rec.contract(
        name,
        alpha(*lead, "i", "j"),
        v(*lead, "j", "c"),
        (*lead, "i", "j", "c"),
        "j",
        symbol=r"z^{(<i>)}_{<c>}",
        latex=r"z^{(<i>)}_{<c>} = \sum_{j} \alpha_{<i>j}\, v^{(j)}_{<c>}",
        text=f"Σ_j {r(alpha.name, *P(lead), '<i>', 'j')} × {r(v.name, *P(lead), 'j', '<c>')}",
        parts=("t", "s"),
        part_latex=(r"\alpha_{<i,j>}\, v^{(<j>)}_{<c>}", r"\sum_{m=1}^{<j>} \alpha_{<i>m}\, v^{(m)}_{<c>}"),
        part_text=(
            f"{r(alpha.name, *P((*lead, 'i', 'j')))} × {r(v.name, *P((*lead, 'j', 'c')))}",
            f"Σ_{{m≤<j>}} {r(alpha.name, *P(lead), '<i>', 'm')} × {r(v.name, *P(lead), 'm', '<c>')}",
        ),
    )
