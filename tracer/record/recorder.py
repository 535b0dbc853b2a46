"""Traced primitives: compute with torch, record every result as a node.

A pipeline is ordinary torch code written with a :class:`Recorder`::

    rec = Recorder(torch.float32)
    with rec.stage("inputs"):
        x = rec.input("x", inputs, axes="ik", symbol=r"x^{(<i>)}_{<k>}")
    with rec.stage("scores"):
        omega = rec.contract("omega", x("i", "k"), x("j", "k"), axes="ijk", over="k")

``x("j", "k")`` says how an operand is read: here row j of x, component k.
Each primitive records one node per tensor it makes (``omega.p`` the products,
``omega.s`` the running sums, ``omega`` the totals) and returns a :class:`Var`
for the next primitive.  Values are computed in the recorder's dtype with plain
IEEE operations, left to right where a sum is accumulated, exactly as the
tutorial's ``res += a * b`` loop does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tracer.core import bounds, exact, trig
from tracer.core.trace import ELEMENT, TENSOR, Node, Ref, Trace
from tracer.record.layout import Misread, Plan, contraction, lay_out, plan, sizes_of


@dataclass(frozen=True)
class Var:
    """A recorded tensor, with the axis names and LaTeX symbol of its elements."""

    name: str
    axes: tuple[str, ...]
    data: torch.Tensor
    symbol: str  # LaTeX of one element, placeholders in this var's axes

    def __call__(self, *index: str) -> Arg:
        """Read this var with the given axis names (one per axis) in an operation."""
        if len(index) != len(self.axes):
            raise ValueError(f"{self.name} has {len(self.axes)} axes, got index {index}")
        return Arg(self, tuple(index))

    @property
    def all(self) -> Arg:
        """Read this var with its own axis names."""
        return Arg(self, self.axes)


@dataclass(frozen=True)
class Arg:
    """An operand of a primitive: a var and the axis names it is read with."""

    var: Var
    index: tuple[str, ...]

    @property
    def ref(self) -> Ref:
        """The serializable reference stored in the trace."""
        return Ref(self.var.name, self.index)

    @property
    def symbol(self) -> str:
        """The var's element symbol with its axes renamed to this reading."""
        from tracer.core.ids import rename

        return rename(self.var.symbol, dict(zip(self.var.axes, self.index, strict=True)))

    def aligned(self, axes: Sequence[str], shape: Sequence[int] | None = None) -> torch.Tensor:
        """The operand permuted and unsqueezed to broadcast against ``axes`` (expanded to ``shape`` if given).

        An index that is a whole number (``"1"``, 1-based) reads that one
        entry of its axis: how a broadcast axis of size one is read.
        """
        return lay_out(self.var.data, self._plan(axes), shape)

    def sizes(self, axes: Sequence[str]) -> list[int]:
        """The sizes :meth:`aligned` gives along ``axes`` before any broadcast (1 for an axis it does not read)."""
        return sizes_of(self.var.data, self._plan(axes))

    def _plan(self, axes: Sequence[str]) -> Plan:
        try:
            return plan(self.index, tuple(axes))
        except Misread as e:
            raise ValueError(f"{self.var.name}{self.index if e.repeated else ''}: {e}") from None


def _axes(spec: str | Sequence[str]) -> tuple[str, ...]:
    return tuple(spec)


_BINARY: dict[str, Callable[..., torch.Tensor]] = {
    "mul": torch.mul,
    "add": torch.add,
    "sub": torch.sub,
    "div": torch.div,
}
"""The two-operand elementwise ops, each one correctly rounded IEEE operation per entry."""
_OPERANDS = {**dict.fromkeys(_BINARY, 2), "masked_fill": 2, "exp": 1, "cos": 1, "sin": 1, "sqrt": 1}
"""How many operands each elementwise op takes."""

SMALL_ROWS = 4096
"""Entries per running-sum step below which numpy's ``add.accumulate`` is used (faster for small tensors)."""


def running_sums(terms: torch.Tensor) -> torch.Tensor:
    """Running sums of ``terms`` along its first axis, left to right: one IEEE addition of the dtype per sum.

    Both ways below do exactly those additions (``ufunc.accumulate`` never
    reassociates, unlike a reduction or ``torch.cumsum``'s wider accumulator),
    so the bits are the same; they differ in speed.  numpy's accumulate has
    little overhead per call, which a lesson of many small nodes (kvcache's
    510 steps) needs, but runs slowly along a leading axis of large rows
    (a T = 512 score table: 1.0 s instead of 0.5 s for the whole trace), where
    one ``np.add`` per step, over a whole row at once, is faster.  That loop is
    numpy's, not ``torch.add``'s: a row add is bound by memory, and torch
    splits it over its intra-op threads, which on a busy machine wait on each
    other at every one of the 637 steps of a T = 512 trace (2 to 5 times the
    time of the single-threaded numpy loop, measured side by side).
    """
    values = terms.numpy()
    rows = terms.shape[0]
    with np.errstate(all="ignore"):  # inf + -inf is NaN here as in torch: recorded, never warned about
        if rows == 0 or terms.numel() < SMALL_ROWS * rows:
            return torch.from_numpy(np.add.accumulate(values, axis=0))
        sums = np.empty_like(values)  # the terms' memory layout, as torch.empty_like kept it
        sums[0] = values[0]
        for n in range(1, rows):
            np.add(sums[n - 1], values[n], out=sums[n])
    return torch.from_numpy(sums)


def products(a: torch.Tensor, b: torch.Tensor, sizes: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    """``a * b`` broadcast to ``sizes``, in ``dtype``: one correctly rounded IEEE product per entry.

    numpy's multiply when both operands are already in ``dtype`` (the same
    bits as ``torch.mul``: one rounding each), for the reason given in
    :func:`running_sums`: a T = 512 score table's 16.7 million products are
    bound by memory, and torch's intra-op threads wait on each other on a
    busy machine (the trace of T = 512 took 5.2 s of wall time against 3.0 s
    this way, side by side on a loaded two-core machine).  Otherwise
    ``torch.mul``, which converts as it always has.
    """
    terms = torch.empty(list(sizes), dtype=dtype)
    if a.dtype == b.dtype == dtype and not (a.requires_grad or b.requires_grad):
        with np.errstate(all="ignore"):  # an overflow is an IEEE inf, recorded and noted like torch's
            np.multiply(a.numpy(), b.numpy(), out=terms.numpy())
    else:
        torch.mul(a, b, out=terms)
    return terms


def held(value: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A mask, count or index (any tensor that is not floating point) as the numbers a trace stores, exactly.

    A trace file holds floating-point values; whole numbers are stored in
    ``dtype`` when it holds every one of them exactly (a float32 trace holds
    integers up to 2**24), else in float64 (up to 2**53), so a count or an
    index of a large tensor is never rounded.  Floating-point values are
    returned as they are.
    """
    if value.is_floating_point():
        return value
    data = value.to(dtype)
    if dtype != torch.float64 and not torch.equal(data.to(value.dtype), value):
        data = value.to(torch.float64)
    return data


class Recorder:
    """Collects nodes while a pipeline runs; :meth:`trace` hands them over."""

    def __init__(self, dtype: torch.dtype = torch.float32) -> None:
        self.dtype = dtype
        self._nodes: list[Node] = []
        self._stage = "main"

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Record the nodes made inside the block under stage ``name``."""
        old, self._stage = self._stage, name
        try:
            yield
        finally:
            self._stage = old

    def trace(self, meta: dict[str, Any]) -> Trace:
        """The finished trace with ``meta`` (tokens, query, dtype, ...)."""
        return Trace(self._nodes, meta)

    @property
    def nodes(self) -> list[Node]:
        """The nodes recorded so far, in order (a copy of the list; the nodes themselves are the recorder's)."""
        return list(self._nodes)

    def __len__(self) -> int:
        """How many nodes are recorded so far."""
        return len(self._nodes)

    def since(self, start: int) -> list[Node]:
        """The nodes recorded after the first ``start`` (``rec.since(len(rec))`` before a step: that step's)."""
        return self._nodes[start:]

    def extend(self, nodes: Sequence[Node]) -> None:
        """Append nodes made elsewhere, each with its stage already set: for example a lesson's repeated
        steps filled in from one recorded step (lesson kvcache's ``Replay``)."""
        self._nodes.extend(nodes)

    def value(self, name: str, last: str | None = None) -> torch.Tensor:
        """A copy of the values recorded under node ``name``; with ``last``, only the last entry along that axis."""
        for node in reversed(self._nodes):
            if node.name == name:
                v = node.value if last is None else node.value[(slice(None),) * node.axes.index(last) + (-1,)]
                return torch.from_numpy(np.array(v))
        raise KeyError(name)

    def data(self, name: str) -> np.ndarray:
        """The values recorded under node ``name``, not copied (read them, do not change them)."""
        for node in reversed(self._nodes):
            if node.name == name:
                return node.value
        raise KeyError(name)

    def var(self, name: str) -> Var:
        """The var recorded as ``name`` (for a step a helper recorded without returning it)."""
        axes = next((n.axes for n in reversed(self._nodes) if n.name == name), None)
        if axes is None:
            raise KeyError(name)
        return Var(name, axes, self.value(name), name)

    # -- recording ---------------------------------------------------------
    def _record(
        self,
        name: str,
        op: str,
        axes: tuple[str, ...],
        value: torch.Tensor,
        args: Sequence[Ref],
        *,
        split: Sequence[int] | None = None,
        symbol: str = "",
        latex: str = "",
        text: str = "",
        granularity: str = ELEMENT,
        attrs: dict[str, Any] | None = None,
    ) -> Var:
        if split is None:
            split = (0,) * name.count(".") + (len(axes),)
        node = Node(
            name,
            op,
            self._stage,
            axes,
            tuple(split),
            (value.detach() if value.requires_grad else value).numpy(),
            tuple(args),
            latex,
            text,
            symbol if granularity == ELEMENT else "",  # a tensor-level step names no entry
            granularity,
            dict(attrs) if attrs else {},
        )
        self._nodes.append(node)
        return Var(name, axes, value, symbol or name)

    def input(
        self,
        name: str,
        value: torch.Tensor,
        axes: str | Sequence[str],
        *,
        symbol: str,
        text: str = "",
        attrs: dict[str, Any] | None = None,
    ) -> Var:
        """Record given data (embeddings, weights) as the leaves of the trace."""
        data = value.detach().to(self.dtype) if value.is_floating_point() else held(value.detach(), self.dtype)
        data = data.contiguous()
        return self._record(name, "input", _axes(axes), data, (), symbol=symbol, text=text, latex=symbol, attrs=attrs)

    def elementwise(
        self,
        op: str,
        name: str,
        args: Sequence[Arg],
        axes: str | Sequence[str],
        *,
        symbol: str,
        latex: str,
        text: str,
        split: Sequence[int] | None = None,
        fill: float = float("-inf"),
        kept: str = "",
        unless: Sequence[str] = (),
    ) -> Var:
        """One of ``mul``, ``add``, ``sub``, ``div`` (two operands), ``exp``, ``cos``, ``sin``, ``sqrt`` (one) or
        ``masked_fill`` (value, mask: entries where the mask is non-zero become
        ``fill``), broadcast over ``axes``.

        Operands are expanded to the full shape first, so torch never takes
        its scalar fast path (a division by a one-element tensor becomes a
        multiplication by its reciprocal there): every entry is one correctly
        rounded IEEE operation, which is what the trace file relies on.
        ``exp`` is correctly rounded too (:func:`tracer.core.exact.exp`), not
        left to a vector library whose last bit depends on the CPU; so are
        ``cos`` and ``sin`` (:mod:`tracer.core.trig`).

        ``kept`` and ``unless`` are a ``masked_fill``'s kept value and its
        hidden cases as text (``omega[<i>,<j>]``, ``<j> > <i>``), recorded as
        the node's ``kept`` and ``unless`` so that its equation can be said in
        any language: ``text`` is its English form.
        """
        out = _axes(axes)
        if op not in _OPERANDS or _OPERANDS[op] != len(args):
            raise ValueError(f"unknown elementwise op {op!r} with {len(args)} operands")
        attrs: dict[str, Any] = {"fill": str(fill)} if op == "masked_fill" else {}
        if unless:
            attrs.update(kept=kept, unless=list(unless))
        value = _pointwise(op, out, args, fill)
        refs = [a.ref for a in args]
        return self._record(name, op, out, value, refs, split=split, symbol=symbol, latex=latex, text=text, attrs=attrs)

    def apply(
        self,
        op: str,
        name: str,
        value: torch.Tensor,
        args: Sequence[Ref],
        axes: str | Sequence[str],
        *,
        symbol: str = "",
        latex: str = "",
        text: str = "",
        attrs: dict[str, Any] | None = None,
        granularity: str = ELEMENT,
    ) -> Var:
        """Record a result a library computed (a captured torch op), entry by entry.

        ``value`` is kept as given (a mask or an index as numbers of the
        recorder's dtype), so what a captured program computed with
        is what the trace holds; ``args`` say, per entry, which operand
        entries it came from (a layout op's references carry index
        arithmetic: :func:`tracer.core.ids.index_expr`).  A ``tensor``
        ``granularity`` makes the whole result one step (an op recorded
        without its inner workings).
        """
        data = held(value.detach().clone(), self.dtype)  # masks, counts and indices: whole numbers, exactly
        return self._record(
            name,
            op,
            _axes(axes),
            data,
            args,
            symbol=symbol,
            latex=latex,
            text=text,
            attrs=attrs,
            granularity=granularity,
        )

    def constant(self, name: str, value: float, *, symbol: str, text: str) -> Var:
        """Record a scalar the lesson fixes (such as sqrt(d_k)), rounded to the dtype once."""
        data = torch.tensor(value, dtype=self.dtype)
        return self._record(name, "const", (), data, (), symbol=symbol, latex=symbol, text=text)

    def max(self, name: str, arg: Arg, over: str, *, symbol: str, latex: str, text: str) -> Var:
        """The largest entry along axis ``over`` (``torch.amax``)."""
        out = tuple(a for a in arg.index if a != over)
        value = torch.amax(arg.aligned((*out, over)), dim=-1)
        ref = Ref(arg.var.name, tuple("*" if a == over else a for a in arg.index))
        return self._record(name, "max", out, value, [ref], symbol=symbol, latex=latex, text=text, attrs={"over": over})

    def contract(
        self,
        name: str,
        a: Arg,
        b: Arg | None,
        axes: str | Sequence[str],
        over: str,
        *,
        symbol: str,
        latex: str,
        text: str,
        parts: tuple[str, str] = ("p", "s"),
        part_latex: tuple[str, str] = ("", ""),
        part_text: tuple[str, str] = ("", ""),
        total: torch.Tensor | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> Var:
        """Sum over axis ``over`` of ``a * b`` (or of ``a`` alone when ``b`` is None).

        Records ``name.p`` (each product; skipped when ``b`` is None), ``name.s``
        (each running sum, accumulated left to right in the dtype) and ``name``
        (the totals).  The reduced axis is laid out first in memory, so each
        accumulation step adds two contiguous planes.

        ``total`` is a library's own result for the same sums (a captured
        ``@``, laid out in ``axes`` without ``over``): it becomes ``name``'s
        value, since that is what the captured program computed with, while
        ``name.s`` keeps the left-to-right sums.  ``attrs`` are added to the
        total's.
        """
        out = _axes(axes)
        if over not in out:
            raise ValueError(f"{name}: axis {over!r} is not among {out}")
        c = contraction(out, over)
        term_ref = a.ref
        args = [a] if b is None else [a, b]
        sizes = _sizes(c.work, args)
        if b is None:
            terms = a.aligned(c.work, sizes).contiguous()
        else:
            terms = products(a.aligned(c.work), b.aligned(c.work), sizes, self.dtype)
        sums = running_sums(terms)
        split = (0,) * name.count(".") + (c.lead, len(out) - c.lead)
        if b is not None:
            term_name = f"{name}.{parts[0]}"
            self._record(
                term_name,
                "mul",
                out,
                terms.permute(c.perm),
                [a.ref, b.ref],
                split=split,
                symbol=part_latex[0],  # a product is named by the expression that defines it
                latex=part_latex[0],
                text=part_text[0],
            )
            term_ref = Ref(term_name, out)
        sums_name = f"{name}.{parts[1]}"
        self._record(
            sums_name,
            "acc",
            out,
            sums.permute(c.perm),
            [Ref(sums_name, c.prev), term_ref],
            split=split,
            symbol=part_latex[1],
            latex=part_latex[1],
            text=part_text[1],
            attrs={"over": over},
        )
        if total is None:
            total = sums[-1].clone()
        total = held(total, sums.dtype)  # a library's sum of whole numbers (``mask.sum(-1)``): its exact count
        if tuple(total.shape) != tuple(sums.shape[1:]):
            raise ValueError(f"{name}: total of shape {tuple(total.shape)} for sums of shape {tuple(sums.shape[1:])}")
        star = Ref(term_ref.node, tuple("*" if x == over else x for x in (term_ref.index or ())))
        return self._record(
            name,
            "sum",
            c.rest,
            total,
            [star],
            symbol=symbol,
            latex=latex,
            text=text,
            attrs={**(attrs or {}), "over": over, "partials": sums_name},
        )

    def softmax(self, name: str, arg: Arg, over: str, *, symbol: str, latex: str, text: str) -> Var:
        """``torch.softmax`` along ``over``, recorded as one opaque op per entry."""
        out = arg.index
        t = arg.aligned(out)
        value = torch.softmax(t, dim=out.index(over))
        ref = Ref(arg.var.name, tuple("*" if a == over else a for a in arg.index))
        return self._record(
            name, "softmax", out, value, [ref], symbol=symbol, latex=latex, text=text, attrs={"over": over}
        )

    def tensor(
        self,
        name: str,
        op: str,
        value: torch.Tensor,
        args: Sequence[Var],
        axes: str | Sequence[str],
        *,
        latex: str,
        text: str,
        symbol: str = "",
        attrs: dict[str, Any] | None = None,
    ) -> Var:
        """Record a tensor-level step: one step for the whole result (matrix forms, checks)."""
        return self._record(
            name,
            op,
            _axes(axes),
            value.to(self.dtype),
            [Ref(v.name) for v in args],
            symbol=symbol,
            latex=latex,
            text=text,
            granularity=TENSOR,
            attrs=attrs,
        )

    def maxabsdiff(
        self,
        name: str,
        a: Var,
        b: Var,
        *,
        latex: str,
        text: str,
        bound: np.ndarray | None = None,
        traced: bool = False,
    ) -> Var:
        """Record max |a - b| over all entries: how far two forms of one quantity agree.

        When ``a`` comes from a library kernel (a BLAS matrix product, torch's
        softmax) its last bits depend on the machine; ``bound`` is then the
        elementwise bound of ``|a − b|`` that the maths fixes
        (:mod:`tracer.core.bounds`).  Its largest entry, rounded up to two
        digits, is stored as the attribute ``bound``: reports print that, never
        the residual itself, which stays in the trace.  With ``traced`` both
        operands are traced primitives, exact on every machine (two orders of
        one computation, as lesson flash's online and ordinary softmax): the
        bound is the maths' rounding bound, and pages print the residual too.
        """
        # equal infinities (masked) agree, and so do two NaNs (a row whose every key is masked, in both forms);
        # numpy's elementwise ops, single-threaded, as in running_sums (the same bits as torch's)
        kind = torch.promote_types(a.data.dtype, b.data.dtype)
        x, y = (v.data.detach().to(kind).numpy() for v in (a, b))
        with np.errstate(all="ignore"):
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            gap = np.where(same, x.dtype.type(0), np.abs(x - y))
        value = torch.from_numpy(np.asarray(gap.max())) if gap.size else torch.zeros(())
        attrs: dict[str, Any] = {}
        if bound is not None:  # entries whose bound is not a number are NaN in both forms: they agree exactly
            finite = np.asarray(bound, dtype=np.float64)
            finite = finite[np.isfinite(finite)]
            attrs["bound"] = bounds.shown(float(np.max(finite)) if finite.size else 0.0)
            if traced:
                attrs["forms"] = "traced"
        return self.tensor(name, "maxabsdiff", value, [a, b], (), latex=latex, text=text, attrs=attrs)


def _sizes(axes: Sequence[str], args: Sequence[Arg]) -> list[int]:
    """The size of each of ``axes``, read from the first operand that has it."""
    known: dict[str, int] = {}
    for arg in reversed(args):
        known.update(zip(arg.index, arg.var.data.shape, strict=True))
    try:
        return [known[x] for x in axes]
    except KeyError as e:
        raise ValueError(f"axis {e.args[0]!r} is not read by any operand") from None


def _pointwise(op: str, out: tuple[str, ...], args: Sequence[Arg], fill: float) -> torch.Tensor:
    """The values of :meth:`Recorder.elementwise`: ``op`` on ``args`` broadcast over ``out``."""
    # aligned operands all have len(out) dims, each of size 1 or the full size; torch.broadcast_shapes
    # would do, but it imports torch.fx's symbolic shapes (0.7 s) on first use
    shape = tuple(max(n) for n in zip(*(a.sizes(out) for a in args), strict=True))
    ts = [a.aligned(out, shape) for a in args]
    if op == "exp":
        return torch.from_numpy(exact.exp(ts[0].contiguous().numpy()))
    if op in ("cos", "sin"):
        return torch.from_numpy(getattr(trig, op)(ts[0].contiguous().numpy()))
    if op == "masked_fill":
        return ts[0].masked_fill(ts[1] != 0, fill)
    if op == "sqrt":  # IEEE 754 requires the square root correctly rounded: the same bits everywhere
        return torch.sqrt(ts[0])
    return _BINARY[op](ts[0], ts[1])
