"""Lesson kvcache's one-token steps: their values computed all at once, their nodes filled in from one step.

A generation of T tokens makes about T steps of 29 small nodes each, and a
node's arithmetic on a row of a few hundred entries costs far less than the
Python around it: the dozen torch calls of a primitive, the ids, operands and
formulas it writes.  So two things are done once instead of once per step.

:class:`Ahead` computes, before the steps are recorded, every value the
one-token steps will record, as whole tables over all the tokens (the
products of every query with every key, every running sum), each laid out as
the step's nodes hold it.  The values are the same bits as one step at a
time, because every entry is computed by the same operation on the same
operands:

- a product, a difference, a quotient, an ``exp`` (:func:`tracer.core.exact.exp`)
  is one correctly rounded IEEE operation per entry, whatever the table around it;
- a running sum adds, left to right, the same terms: row ``n`` of a table
  (token ``n`` reads keys ``1..n``) has those terms first, so its first ``n``
  sums are the step's (what comes after them is never read);
- the masked entries of later keys only pad the tables: the step of token
  ``n`` has no masked key (its mask row is all zeros), and its slice ends at key ``n``;
- a row's maximum is the same number whatever -inf pads it; where a zero or a NaN is the maximum
  (whose sign or payload could depend on how the reduction runs) ``torch.amax`` takes the step's row alone.

:class:`Replay` holds the nodes of one one-token step, recorded by the
ordinary primitives with its position left blank (:data:`.kvstep.BLANK`): every
later step has the same nodes, with its own step number and token position
written into their ids, operands and formulas, and its rows of the tables as
values.  Before it is used, the step it was recorded from is filled in and
compared with what the primitives computed, bit for bit; if they differed,
every step would be recorded by the primitives instead.

``tests/test_kvcache_ahead.py`` records lessons both ways and compares every
node, field by field and bit for bit, and counts the work a step costs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from tracer.core import exact
from tracer.core.trace import Node, Ref
from tracer.lessons.kvcache.kvstep import BLANK, at_token
from tracer.record.recorder import Var, running_sums


def _products(a: torch.Tensor, b: torch.Tensor, sizes: list[int], dtype: torch.dtype) -> torch.Tensor:
    """``a * b`` (already laid out to broadcast) into a new contiguous table, as the recorder multiplies."""
    terms = torch.empty(sizes, dtype=dtype)
    torch.mul(a, b, out=terms)
    return terms


def _row_max(scaled: torch.Tensor, rows: list[int]) -> torch.Tensor:
    """Each row's largest entry, the bits ``torch.amax`` gives on the row's first n entries alone.

    The masked entries are -inf and change no maximum; only which of two
    zeros (+0, -0) or of two NaNs comes out may depend on how a reduction
    runs, so a row whose maximum is zero or NaN is taken again on its own.
    """
    top, alone = torch.amax(scaled, dim=-1), set(rows)
    for i in torch.nonzero((top == 0) | torch.isnan(top)).flatten().tolist():
        if i in alone:
            top[i] = torch.amax(scaled[i : i + 1, : i + 1], dim=-1)[0]
    return top


class Ahead:
    """The values of lesson kvcache's one-token steps, worked out for every token at once.

    ``x`` is the inputs, ``w`` the three weight matrices, ``root`` the
    recorded ``sqrt(d_k)``, ``up`` the causal mask (1 where a key is
    hidden), ``rows`` the 0-based positions of the tokens that a step brings alone.
    """

    def __init__(self, dtype: torch.dtype, x: Var, w: dict[str, Var], root: Var, up: Var, rows: list[int]) -> None:
        t, d_in = (int(n) for n in x.data.shape)
        self.x, self.up = x.data.numpy(), up.data.numpy()
        tables: dict[str, torch.Tensor] = {}  # each in the axes of the step's node, as the recorder lays it out
        for n, wn in (("q", "W_query"), ("k", "W_key"), ("v", "W_value")):
            wd = w[wn].data  # (k, c): the recorder's work layout is (k, i, c), the node's (i, c, k)
            terms = _products(x.data.T[:, :, None], wd[:, None, :], [d_in, t, int(wd.shape[1])], dtype)
            tables[f"{n}.p"], tables[f"{n}.s"] = terms.permute(1, 2, 0), running_sums(terms).permute(1, 2, 0)
        q, k, v = (tables[f"{n}.s"][:, :, -1] for n in "qkv")  # (i, c) and (j, c): every token's projections
        c = int(q.shape[1])
        omega = _products(q.T[:, :, None], k.T[:, None, :], [c, t, t], dtype)  # (c, i, j)
        tables["omega.p"], tables["omega.s"] = omega.permute(1, 2, 0), running_sums(omega).permute(1, 2, 0)
        alone = torch.zeros(t, dtype=torch.bool)
        alone[rows] = True
        keep = torch.ones(t, t, dtype=torch.bool).tril() & alone[:, None]  # what a one-token step computes
        neg = tables["omega.s"][:, :, -1].masked_fill(~keep, float("-inf"))  # row n's first n entries: omega's
        scaled = torch.div(neg, root.data.expand(t, t))
        top = _row_max(scaled, rows)
        shift = torch.sub(scaled, top[:, None].expand(t, t))
        e = np.zeros((t, t), dtype=shift.numpy().dtype)
        e[keep.numpy()] = exact.exp(shift.numpy()[keep.numpy()])  # only the entries a step computes
        exp = torch.from_numpy(e)
        exp_s = running_sums(exp.T.contiguous()).T  # (i, j), summed along j
        alpha = torch.div(exp, exp_s.diagonal()[:, None].expand(t, t))
        z = _products(alpha.T[:, :, None], v[:, None, :], [t, t, c], dtype)  # (j, i, c)
        tables |= {"neg.omega": neg, "neg.scaled": scaled, "causal.max": top, "causal.shift": shift}
        tables |= {"causal.exp": exp, "causal.sum.s": exp_s, "causal.alpha": alpha}
        tables |= {"causal.alpha_sum.s": running_sums(alpha.T.contiguous()).T}
        tables |= {"z.t": z.permute(1, 0, 2), "z.s": running_sums(z).permute(1, 0, 2)}
        self.tables = {name: table.numpy() for name, table in tables.items()}
        """Every table by the name its rows take in a step (``causal.exp``), in that node's axes."""

    def values(self, n: int, cache: tuple[np.ndarray, np.ndarray]) -> dict[str, np.ndarray]:
        """The values of the step that brings token ``n`` (1-based) alone, by node name without the step's prefix.

        ``cache`` is the keys and values cached before it (tokens ``1..n-1``).
        Each value is a slice of a table or of the inputs (read it, do not
        change it): the token's row, and of the keys the first ``n``.  A total
        is the last of its running sums.  The cache after the step is new.
        """
        i = n - 1
        row, keys = slice(i, n), slice(None, n)  # the step's query row, and the keys it reads
        t = self.tables
        got = {f"{p}.{part}": t[f"{p}.{part}"][row] for p in "qkv" for part in "ps"}
        got |= {p: t[f"{p}.s"][row, :, -1] for p in "qkv"}  # (i, c, k): the sums over every component
        got |= {name: t[name][row, keys] for name in ROWS}
        got |= {"omega": t["omega.s"][row, keys, -1], "causal.max": t["causal.max"][row]}
        got |= {total: t[f"{total}.s"][row, i] for total in ("causal.sum", "causal.alpha_sum")}  # over n keys
        got["z"] = t["z.s"][row, i]
        got |= {"x": self.x[row], "mask": self.up[row, keys]}
        got |= {"cache.k": np.concatenate((cache[0], got["k"])), "cache.v": np.concatenate((cache[1], got["v"]))}
        return got


ROWS: tuple[str, ...] = ("omega.p", "omega.s", "neg.omega", "neg.scaled", "causal.shift", "causal.exp")
ROWS += ("causal.sum.s", "causal.alpha", "causal.alpha_sum.s", "z.t", "z.s")
"""The tables a step reads its row of, and of the keys its first n: its nodes with an ``i`` and a ``j`` axis."""


class _BlankRef:
    """An operand reference with blanks in its node's name or its index, as templates."""

    __slots__ = ("index", "node", "plain")

    def __init__(self, ref: Ref) -> None:
        self.node = _template(ref.node)
        self.plain = not _has_blank(*(ref.index or ()))  # an index read as it is, in every step
        self.index = ref.index if self.plain or ref.index is None else tuple(_template(i) for i in ref.index)

    def fill(self, texts: dict[str, str]) -> Ref:
        """The reference of the step whose texts are ``texts``."""
        if self.plain or self.index is None:
            return Ref(self.node.format_map(texts), self.index)
        return Ref(self.node.format_map(texts), tuple(i.format_map(texts) for i in self.index))


@dataclass(frozen=True)
class _Blank:
    """One node of a one-token step, its text as :meth:`str.format_map` templates (:func:`_template`).

    ``latex`` and ``symbol`` are each two: for rows of fewer than 10 keys, and of 10 or more.
    """

    part: str  # the node's name after the step's prefix: "causal.exp"
    node: Node  # as recorded blank: its op, axes, split and granularity are every step's
    name: str
    args: tuple[Ref | _BlankRef, ...]
    latex: tuple[str, str]
    text: str
    symbol: tuple[str, str]
    named: tuple[tuple[str, str | tuple[str, ...]], ...]  # attributes holding a blank (``partials``, a mask's
    # ``kept`` and ``unless`` cases): a text, or a list of texts, as templates
    shifted: bool  # a node with a query axis: its formulas read the token's position

    @classmethod
    def of(cls, part: str, n: Node) -> _Blank:
        """The templates of node ``n``, named ``part`` in every step."""
        args = tuple(_BlankRef(r) if _has_blank(r.node, *(r.index or ())) else r for r in n.args)
        named = tuple((k, _templates(v)) for k, v in n.attrs.items() if _texts(v) and _has_blank(*_texts(v)))
        latex, symbol = (_at_blank(n.latex), _at_blank(n.symbol))
        return cls(part, n, _template(n.name), args, latex, _template(n.text), symbol, named, "i" in n.axes)


class Replay:
    """The nodes of one one-token step, recorded with its text blank, filled in for each step after it.

    ``nodes`` are that step's nodes as the primitives recorded them with
    :meth:`.kvstep.Spot.blank` (and the cache it read named with the ``prev`` blank).
    """

    def __init__(self, nodes: Sequence[Node]) -> None:
        pre = BLANK["pre"] + "."
        if not all(n.name.startswith(pre) for n in nodes):
            raise ValueError("a replayed step records only nodes of its own")
        self.parts = [n.name[len(pre) :] for n in nodes]
        self._blanks = [_Blank.of(part, n) for part, n in zip(self.parts, nodes, strict=True)]

    def nodes(self, s: int, n: int, stage: str, values: dict[str, np.ndarray]) -> list[Node]:
        """Step ``s``, which brings token ``n`` alone: the nodes with its text, and ``values`` by part name."""
        texts = {"pre": f"step{s}", "prev": f"step{s - 1}", "off": str(n - 1), "first": str(n)}
        made = []
        for b in self._blanks:
            t = b.node
            value = values[b.part]
            wide = max(value.shape) > 9  # ids.fill separates indices with commas from 10 entries on
            args = tuple(a if isinstance(a, Ref) else a.fill(texts) for a in b.args)
            attrs = {**t.attrs, **{k: _filled(v, texts) for k, v in b.named}}
            if b.shifted:
                attrs["row_offset"] = n - 1
            made.append(
                Node(
                    b.name.format_map(texts),
                    t.op,
                    stage,
                    t.axes,
                    t.split,
                    value,
                    args,
                    b.latex[wide].format_map(texts),
                    b.text.format_map(texts),
                    b.symbol[wide].format_map(texts),
                    t.granularity,
                    attrs,
                )
            )
        return made


def _at_blank(latex: str) -> tuple[str, str]:
    """``latex`` at the blank token position, as templates: in a row of fewer than 10 keys, and of 10 or more."""
    return _template(at_token(latex, BLANK["first"], False)), _template(at_token(latex, BLANK["first"], True))


def _texts(value: object) -> tuple[str, ...]:
    """An attribute's texts: itself if it is one, its items if it is a list of texts, else none."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    return ()


def _templates(value: str | list[str] | tuple[str, ...]) -> str | tuple[str, ...]:
    """A text attribute as a template, or a list of texts as a tuple of templates."""
    return _template(value) if isinstance(value, str) else tuple(_template(v) for v in value)


def _filled(template: str | tuple[str, ...], texts: dict[str, str]) -> str | list[str]:
    """:func:`_templates` filled in for one step (a list of texts stays a list, as the recorder keeps it)."""
    return template.format_map(texts) if isinstance(template, str) else [t.format_map(texts) for t in template]


def _has_blank(*texts: str) -> bool:
    return any("\x00" in t for t in texts)


def _template(text: str) -> str:
    """``text`` as a :meth:`str.format_map` template: its braces doubled, its blanks fields (``{pre}``)."""
    text = text.replace("{", "{{").replace("}", "}}")
    for part, blank in BLANK.items():
        text = text.replace(blank, "{" + part + "}")
    return text


def same_nodes(a: Sequence[Node], b: Sequence[Node]) -> bool:
    """Whether two lists of nodes are the same, field by field, and their values bit for bit."""
    fields = ("name", "op", "stage", "axes", "split", "args", "latex", "text", "symbol", "granularity", "attrs")
    return len(a) == len(b) and all(
        all(getattr(m, f) == getattr(n, f) for f in fields)
        and (m.value.dtype, m.value.shape) == (n.value.dtype, n.value.shape)
        and m.value.tobytes() == n.value.tobytes()
        for m, n in zip(a, b, strict=True)
    )
