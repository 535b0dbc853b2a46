"""Lesson ``kvcache``'s one-token steps, computed all at once and recorded step by step.

A generation of T tokens makes about T steps of 29 small nodes each, and a
node's arithmetic on a row of a few hundred entries costs far less than the
dozen torch calls around it.  So :class:`Ahead` computes, before the steps are
recorded, every value the one-token steps will record, as whole tables over
all the tokens (the products of every query with every key, every running
sum), and hands each step its rows through :attr:`Recorder.ahead
<tracer.record.recorder.Recorder.ahead>`: the step's primitives then record
those values, with the ids, operands and formulas they always record.

The values are the same bits as one step at a time, because every entry is
computed by the same operation on the same operands:

- a product, a difference, a quotient, an ``exp`` (:func:`tracer.core.exact.exp`)
  is one correctly rounded IEEE operation per entry, whatever the table around it;
- a running sum adds, left to right, the same terms: row ``n`` of a table
  (token ``n`` reads keys ``1..n``) has those terms first, so its first ``n``
  sums are the step's (what comes after them is never read);
- the masked entries of later keys only pad the tables: the step of token
  ``n`` has no masked key (its mask row is all zeros), and its slice ends at key ``n``;
- a row's maximum is the same number whatever -inf pads it; where a zero or a NaN is the maximum
  (whose sign or payload could depend on how the reduction runs) ``torch.amax`` takes the step's row alone.

``tests/test_kvcache_ahead.py`` records lessons both ways and compares every
node bit for bit, and counts the tensor calls a step makes.
"""

from __future__ import annotations

import numpy as np
import torch

from tracer.core import exact
from tracer.record.recorder import Recorder, Var, running_sums


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
    recorded ``sqrt(d_k)``, ``rows`` the 0-based positions of the tokens
    that a step brings alone.
    """

    def __init__(self, rec: Recorder, x: Var, w: dict[str, Var], root: Var, rows: list[int]) -> None:
        dt = rec.dtype
        t, d_in = (int(n) for n in x.data.shape)
        self.proj: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        for n, wn in (("q", "W_query"), ("k", "W_key"), ("v", "W_value")):
            wd = w[wn].data  # (k, c): the work layout is (k, i, c)
            c = int(wd.shape[1])
            terms = _products(x.data.T[:, :, None], wd[:, None, :], [d_in, t, c], dt)
            self.proj[n] = (terms, running_sums(terms))
        q, k, v = (self.proj[n][1][-1] for n in "qkv")  # (i, c) and (j, c): every token's projections
        c = int(q.shape[1])
        self.omega = _products(q.T[:, :, None], k.T[:, None, :], [c, t, t], dt)  # (c, i, j)
        self.omega_s = running_sums(self.omega)
        alone = torch.zeros(t, dtype=torch.bool)
        alone[rows] = True
        keep = torch.ones(t, t, dtype=torch.bool).tril() & alone[:, None]  # what a one-token step computes
        self.neg = self.omega_s[-1].masked_fill(~keep, float("-inf"))  # row n's first n entries: omega's
        self.scaled = torch.div(self.neg, root.data.expand(t, t))
        self.top = _row_max(self.scaled, rows)
        self.shift = torch.sub(self.scaled, self.top[:, None].expand(t, t))
        e = np.zeros((t, t), dtype=self.shift.numpy().dtype)
        e[keep.numpy()] = exact.exp(self.shift.numpy()[keep.numpy()])  # only the entries a step computes
        self.exp = torch.from_numpy(e)
        self.exp_s = running_sums(self.exp.T.contiguous())  # (j, i)
        self.alpha = torch.div(self.exp, self.exp_s.diagonal()[:, None].expand(t, t))
        self.alpha_s = running_sums(self.alpha.T.contiguous())  # (j, i)
        self.z = _products(self.alpha.T[:, :, None], v[:, None, :], [t, t, c], dt)  # (j, i, c)
        self.z_s = running_sums(self.z)
        tables = {f"{n}.{part}": self.proj[n][m] for n in "qkv" for m, part in enumerate("ps")}
        tables |= {"omega.p": self.omega, "omega.s": self.omega_s, "neg.omega": self.neg, "neg.scaled": self.scaled}
        tables |= {"causal.max": self.top, "causal.shift": self.shift, "causal.exp": self.exp}
        tables |= {"causal.sum.s": self.exp_s, "causal.alpha": self.alpha, "causal.alpha_sum.s": self.alpha_s}
        tables |= {"z.t": self.z, "z.s": self.z_s}
        self.tables = {name: table.numpy() for name, table in tables.items()}
        """Every table by the name its rows take in a step (``causal.exp``), as numpy arrays."""

    def step(self, pre: str, n: int) -> dict[str, torch.Tensor]:
        """The values of step ``pre`` (``step<s>.``) that brings token ``n`` (1-based), by node name.

        Products and running sums are laid out as the recorder lays them out
        (the summed axis first), with their totals; elementwise results as
        their axes ``(i, j)``.
        """
        i = n - 1
        row, keys = slice(i, n), slice(None, n)  # the step's query row, and the keys it reads
        at = {
            "neg.omega": (row, keys),
            "neg.scaled": (row, keys),
            "causal.max": (row,),
            "causal.shift": (row, keys),
            "causal.exp": (row, keys),
            "causal.sum.s": (keys, row),
            "causal.alpha": (row, keys),
            "causal.alpha_sum.s": (keys, row),
            "z.t": (keys, row),
            "z.s": (keys, row),
            "omega.p": (slice(None), row, keys),
            "omega.s": (slice(None), row, keys),
        }
        at.update({f"{name}.{part}": (slice(None), row) for name in "qkv" for part in "ps"})
        # the totals, each the last running sum: of every component (-1), or of the n keys (i)
        totals = {p: (f"{p}.s", (-1, row)) for p in "qkv"} | {"omega": ("omega.s", (-1, row, keys))}
        totals |= {"causal.sum": ("causal.sum.s", (i, row)), "causal.alpha_sum": ("causal.alpha_sum.s", (i, row))}
        totals["z"] = ("z.s", (i, row))
        got = {pre + name: torch.from_numpy(self.tables[name][where]) for name, where in at.items()}
        got |= {pre + name: torch.from_numpy(self.tables[table][where]) for name, (table, where) in totals.items()}
        return got
