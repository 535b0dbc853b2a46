"""``var``, ``F.layer_norm`` and ``F.gelu``, decomposed into the steps their formulas name.

Each keeps torch's own result as ``N`` (what the program went on with) and
records beside it the formula computed step by step in the dtype, with
``check.N`` between the two (torch's kernels fuse and reorder these steps):

* ``var(dim)``: ``N.sum`` (running sums), ``N.mean``, ``N.dev`` = x − mean,
  ``N.sq`` = dev², ``N.ss`` (running sums), ``N.quot`` = ss / (n − correction);
* ``layer_norm`` over the last axis: ``N.sum``, ``N.mean``, ``N.dev``,
  ``N.sq``, ``N.ss``, ``N.var``, ``N.eps``, ``N.veps`` = var + eps,
  ``N.std`` = √veps, ``N.norm`` = dev / std, then ``N.scaled`` = norm × weight
  and ``N.shifted`` = scaled + bias when given;
* ``gelu``: ``0.5·x·(1 + erf(x/√2))`` (``N.u``, ``N.erf``, ``N.onep``,
  ``N.half``, ``N.prod``) or, with ``approximate="tanh"``, the book's
  ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`` (``N.cube``, ``N.cubec``,
  ``N.inner``, ``N.u``, ``N.tanh``, ``N.onep``, ``N.half``, ``N.prod``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from tracer.core.trace import Ref
from tracer.record.capture import axes as ax
from tracer.record.capture.ops.common import Call, Unsupported, check
from tracer.record.capture.ops.reduce import _dim, _keepdim
from tracer.record.capture.session import Session
from tracer.record.recorder import Var


class Steps:
    """Records the steps of one decomposition, each ``name.part``, on tensors laid out in ``names``."""

    def __init__(self, s: Session, name: str, names: tuple[str, ...], dtype: torch.dtype) -> None:
        self.s, self.name, self.names, self.dtype = s, name, names, dtype

    def ref(self, v: Var) -> Ref:
        """How a step of the full layout reads ``v`` (a reduced var is read without its last axis)."""
        return Ref(v.name, self.names[: len(v.axes)] if len(v.axes) < len(self.names) else self.names)

    def wide(self, v: Var) -> torch.Tensor:
        """``v``'s values broadcastable against the full layout."""
        return v.data.unsqueeze(-1) if len(v.axes) < len(self.names) else v.data

    def const(self, part: str, value: float) -> Var:
        """A number the formula fixes (eps, 0.5, √2)."""
        data = torch.tensor(value, dtype=self.dtype)
        return self.s.rec.apply("const", f"{self.name}.{part}", data, [], (), text=f"{value:g}")

    def op(self, part: str, op: str, fn: Callable[..., torch.Tensor], args: Sequence[Var], text: str) -> Var:
        """One elementwise step: ``fn`` of the operands' values, recorded with a reference to each."""
        value = fn(*(self.wide(a) if a.axes else a.data for a in args))
        refs = [self.ref(a) if a.axes else Ref(a.name, ()) for a in args]
        return self.s.rec.apply(op, f"{self.name}.{part}", value.to(self.dtype), refs, self.names, text=text)

    def total(self, part: str, x: Var) -> Var:
        """Running sums left to right along the last axis, and their total."""
        over = self.names[-1]
        return self.s.rec.contract(
            f"{self.name}.{part}",
            x(*self.names),
            None,
            self.names,
            over,
            symbol="S",
            latex=rf"\sum_{{{over}}}",
            text=f"Σ_{over} {ax.ref_text(x.name, self.names)}",
        )

    def mean_dev(self, x: Var) -> tuple[Var, Var, Var]:
        """``mean``, ``dev`` = x − mean and the sum of squared deviations ``ss``."""
        n = self.const("n", float(x.data.shape[-1]))
        total = self.total("sum", x)
        rest = self.names[:-1]
        mean = self.s.rec.apply(
            "div", f"{self.name}.mean", total.data / n.data, [Ref(total.name, rest), Ref(n.name, ())], rest,
            text=f"{ax.ref_text(total.name, rest)} / {n.name}",
        )  # fmt: skip
        dev = self.op("dev", "sub", torch.sub, [x, mean], f"{ax.ref_text(x.name, self.names)} − mean")
        sq = self.op("sq", "mul", torch.mul, [dev, dev], "dev × dev")
        return mean, dev, self.total("ss", sq)


def _layout(s: Session, x: torch.Tensor, d: int) -> tuple[Var, tuple[str, ...]]:
    vx = s.var(x)
    if d != x.dim() - 1:
        raise Unsupported("a reduction over another axis than the last")
    return vx, vx.axes


def variance(s: Session, c: Call) -> None:
    """``x.var(dim, unbiased=…, correction=…, keepdim=…)`` over one axis (the last)."""
    x, out = c.args[0], c.out
    d = _dim(c, x)
    vx, names = _layout(s, x, d)
    corr = c.kwargs.get("correction")
    if corr is None:
        unbiased = c.kwargs.get("unbiased", c.args[2] if len(c.args) > 2 and isinstance(c.args[2], bool) else True)
        corr = 1 if unbiased else 0
    keep = bool(c.kwargs.get("keepdim", False))
    name, _ = s.begin("var", vx.name)
    st = Steps(s, name, names, out.dtype)
    _mean, _dev, ss = st.mean_dev(vx)
    rest = names[:-1]
    count = st.const("count", float(x.shape[d] - int(corr)))
    quot = s.rec.apply(
        "div", f"{name}.quot", ss.data / count.data, [Ref(ss.name, rest), Ref(count.name, ())], rest,
        text=f"{ax.ref_text(ss.name, rest)} / {count.name}",
    )  # fmt: skip
    value = out.squeeze(d) if keep else out
    v = s.rec.apply("var", name, value, [Ref(quot.name, rest)], rest, text=f"var {ax.ref_text(vx.name, names)}")
    check(s, name, v, quot.data, quot.name, f"{quot.name} (step by step)")
    if keep:
        _keepdim(s, c, v, out, vx)
    else:
        s.bind(out, v)


def layer_norm(s: Session, c: Call) -> None:
    """``F.layer_norm(x, (d,), weight, bias, eps)`` over the last axis."""
    x, shape, out = c.args[0], c.arg(1, "normalized_shape"), c.out
    w, b, eps = c.arg(2, "weight"), c.arg(3, "bias"), float(c.arg(4, "eps", 1e-5))
    if len(tuple(shape)) != 1:
        raise Unsupported("layer_norm over more than the last axis")
    vx, names = _layout(s, x, x.dim() - 1)
    name, _ = s.begin("layer_norm", vx.name)
    st = Steps(s, name, names, out.dtype)
    _mean, dev, ss = st.mean_dev(vx)
    rest = names[:-1]
    n = s.rec.value(f"{name}.n")
    var = s.rec.apply(
        "div", f"{name}.var", ss.data / n, [Ref(ss.name, rest), Ref(f"{name}.n", ())], rest, text="ss / n"
    )
    e = st.const("eps", eps)
    veps = s.rec.apply(
        "add", f"{name}.veps", var.data + e.data, [Ref(var.name, rest), Ref(e.name, ())], rest, text="var + eps"
    )
    std = s.rec.apply(
        "sqrt", f"{name}.std", torch.sqrt(veps.data), [Ref(veps.name, rest)], rest, text="sqrt(var + eps)"
    )
    cur = st.op("norm", "div", torch.div, [dev, std], "dev / std")
    if isinstance(w, torch.Tensor):
        cur = _affine(s, st, cur, w, "scaled", "mul", torch.mul)
    if isinstance(b, torch.Tensor):
        cur = _affine(s, st, cur, b, "shifted", "add", torch.add)
    v = s.rec.apply("layer_norm", name, out, [Ref(cur.name, names)], names, text=f"layer_norm({vx.name})")
    s.bind(out, v)
    check(s, name, v, cur.data, cur.name, f"{cur.name} (step by step)")


def _affine(
    s: Session, st: Steps, cur: Var, p: torch.Tensor, part: str, op: str, fn: Callable[..., torch.Tensor]
) -> Var:
    vp = s.var(p)
    ref = Ref(vp.name, (st.names[-1],))
    value = fn(cur.data, vp.data)
    sign = "×" if op == "mul" else "+"
    return s.rec.apply(
        op, f"{st.name}.{part}", value, [Ref(cur.name, st.names), ref], st.names, text=f"{cur.name} {sign} {vp.name}"
    )


def gelu(s: Session, c: Call) -> None:
    """``F.gelu(x)`` (erf form) or ``F.gelu(x, approximate="tanh")``."""
    x, out = c.args[0], c.out
    approx = c.kwargs.get("approximate", c.args[1] if len(c.args) > 1 else "none")
    vx = s.var(x)
    names = vx.axes
    name, _ = s.begin("gelu", vx.name)
    st = Steps(s, name, names, out.dtype)
    if approx == "tanh":
        three = st.const("three", 3.0)
        cube = st.op("cube", "pow", torch.pow, [vx, three], "x^3")
        k = st.const("k", 0.044715)
        cubec = st.op("cubec", "mul", torch.mul, [k, cube], "0.044715 × x^3")
        inner = st.op("inner", "add", torch.add, [vx, cubec], "x + 0.044715 x^3")
        root = st.const("root", math.sqrt(2.0 / math.pi))
        u = st.op("u", "mul", torch.mul, [root, inner], "sqrt(2/pi) × inner")
        g = st.op("tanh", "tanh", torch.tanh, [u], "tanh(u)")
    else:
        r2 = st.const("r2", 1.0 / math.sqrt(2.0))
        u = st.op("u", "mul", torch.mul, [vx, r2], "x / sqrt(2)")
        g = st.op("erf", "erf", torch.erf, [u], "erf(u)")
    one = st.const("one", 1.0)
    onep = st.op("onep", "add", torch.add, [one, g], "1 + g")
    h = st.const("h", 0.5)
    half = st.op("half", "mul", torch.mul, [h, vx], "0.5 × x")
    prod = st.op("prod", "mul", torch.mul, [half, onep], "0.5 x × (1 + g)")
    v = s.rec.apply("gelu", name, out, [Ref(prod.name, names)], names, text=f"gelu({vx.name})")
    s.bind(out, v)
    check(s, name, v, prod.data, prod.name, f"{prod.name} (step by step)")
