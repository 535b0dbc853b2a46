"""What every op handler shares: the call it records, operands, constants, checks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from tracer.core import bounds
from tracer.core.trace import Ref
from tracer.record.capture import axes as ax
from tracer.record.capture.session import Session
from tracer.record.recorder import Var, held


class Unsupported(Exception):
    """This form of the op is not decomposed: it is recorded as an opaque step instead."""


@dataclass
class Call:
    """One intercepted torch call and what torch returned."""

    key: str  # the function's name ("matmul", "softmax", "T" for the ``.T`` property …)
    func: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    out: Any
    rng: torch.Tensor | None = None  # the CPU random state just before the call (ops that draw)
    extra: dict[str, Any] = field(default_factory=dict)

    def arg(self, pos: int, name: str, default: Any = None) -> Any:
        """Argument ``name`` given by position ``pos`` or by keyword."""
        if name in self.kwargs:
            return self.kwargs[name]
        return self.args[pos] if len(self.args) > pos else default

    def tensors(self) -> list[torch.Tensor]:
        """The tensor arguments, in order (lists of tensors flattened)."""
        out: list[torch.Tensor] = []
        for a in (*self.args, *self.kwargs.values()):
            if isinstance(a, torch.Tensor):
                out.append(a)
            elif isinstance(a, list | tuple):
                out.extend(x for x in a if isinstance(x, torch.Tensor))
        return out


Handler = Callable[[Session, Call], None]


def as_stored(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A tensor's values as a trace stores them: floats as they are, whole numbers exactly (:func:`held`).

    A complex tensor (Meta's rotary embedding: ``view_as_complex``, ``torch.polar``)
    is stored as its real and imaginary parts side by side, one axis more
    (``torch.view_as_real``): casting it to a real dtype would keep the real
    part alone and write a value the code never held.
    """
    if t.is_complex():
        return torch.view_as_real(t.resolve_conj()).to(dtype)
    return held(t, dtype)


def has_complex(c: Call) -> bool:
    """Whether a call reads or returns a complex tensor: such calls are recorded as opaque steps."""
    outs = c.out if isinstance(c.out, tuple | list) else (c.out,)
    return any(isinstance(t, torch.Tensor) and t.is_complex() for t in (*c.tensors(), *outs))


def out_axes(s: Session, out: torch.Tensor, operands: Sequence[torch.Tensor]) -> tuple[str, ...]:
    """Axis names for an elementwise result: those of an operand of the same rank, else the defaults."""
    for t in operands:
        if t.dim() == out.dim():
            return s.var(t).axes
    return ax.default(out.dim())


def constant(s: Session, value: float, reader: str, dtype: torch.dtype) -> Var:
    """A Python number in a captured op (``scores / 8.0``), recorded as a scalar node read by ``reader``."""
    name = s.fresh()
    from tracer.record.capture.session import Info

    s.info[name] = Info("const", "c", s.scope, hint=reader)
    data = torch.tensor(value, dtype=dtype if dtype.is_floating_point else s.rec.dtype)
    return s.rec.apply("const", name, data, [], (), symbol=f"{value:g}", text=f"{value:g}", latex=f"{value:g}")


def operand(s: Session, x: Any, reader: str, names: Sequence[str], shape: Sequence[int], dtype: torch.dtype) -> Ref:
    """A tensor or Python-number operand of an elementwise node, as the reference the node stores."""
    if isinstance(x, torch.Tensor):
        return s.read(x, names, shape).ref
    if isinstance(x, bool | int | float):
        return Ref(constant(s, float(x), reader, dtype).name, ())
    raise Unsupported(f"operand of type {type(x).__name__}")


def text_of(ref: Ref) -> str:
    """Plain text of one operand entry in a template."""
    return ax.ref_text(ref.node, ref.index or ())


def check(
    s: Session,
    name: str,
    torch_value: Var,
    ours: torch.Tensor,
    ours_name: str,
    what: str,
    bound: np.ndarray | None = None,
) -> None:
    """Record how far torch's own result is from the left-to-right form, as the lessons' checks do.

    ``ours_name`` is the node holding ``ours`` (the recomputation reads it);
    ``bound`` is the elementwise bound the maths puts on the difference
    (:mod:`tracer.core.bounds`): a check that carries one is printed as
    ``≤ bound`` and lets ``verify`` accept the library's own rounding.
    """
    mine = Var(ours_name, torch_value.axes, ours, ours_name)
    s.rec.maxabsdiff(
        f"check.{name}",
        torch_value,
        mine,
        latex=rf"\max \lvert \mathrm{{{name}}} - \mathrm{{{ours_name}}} \rvert",
        text=f"max |{name} − {what}|",
        bound=bound,
    )


def magnitude(terms: np.ndarray | torch.Tensor, dim: int) -> np.ndarray:
    """``Σ |t|`` along ``dim`` in float64: what the bound of a sum of these terms scales with."""
    if isinstance(terms, torch.Tensor):
        return np.asarray(terms.abs().sum(dim=dim, dtype=torch.float64).numpy())
    return np.asarray(np.add.reduce(np.abs(terms), axis=dim, dtype=np.float64))


def sums_bound(mag: np.ndarray, n: int, dtype: torch.dtype) -> np.ndarray:
    """:func:`tracer.core.bounds.sums` for terms of ``dtype``."""
    return bounds.sums(mag, n, unit(dtype))


def unit(dtype: torch.dtype) -> float:
    """The unit roundoff of a torch dtype (``2**-24`` for float32)."""
    return bounds.unit(str(dtype).removeprefix("torch."))
