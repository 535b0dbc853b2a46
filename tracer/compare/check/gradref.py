"""The reference of ``check --backward``, and what a hand-written backward returned, read as data.

Both halves of the check use this module: the child (:mod:`.gradcall`) calls
the student's code on the operands of :func:`references`, and the parent
(:mod:`.gradcheck`, :mod:`.gradmistakes`) compares and diagnoses what came
back.  The reference is the lesson's own backward trace (``trace_lesson(name,
backward=True)``), whose nodes the lesson names in its
:class:`~.lessons.Gradients`, in three runs:

* run ``eval``: the lesson's own, the gradient of L = ½ Σ z² (dO = O);
* run ``upstream``: another, drawn under the lesson's seed and rounded to
  two decimals, so that no mistake hides behind dO = O;
* run ``wide``: the lesson traced at other sizes (its ``Gradients.wider``
  options: queries and keys 3 wide), so that a backward which writes the
  lesson's d_k = 2 into its scale does not pass.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from tracer.compare.check.context import Context
from tracer.compare.check.evidence import MAX_DIMS, Evidence, Malformed
from tracer.compare.check.lessons import Gradients, Spec
from tracer.compare.check.model import Quantity, Seen
from tracer.core.trace import Trace
from tracer.record import registry

RUNS = ("eval", "upstream", "wide")
"""Every run a backward check may make (a lesson without ``Gradients.wider`` has no ``wide``: :func:`runs`)."""
LINES = "lines"
"""Not a run of its own: the tensors a function made on run ``eval``'s operands, with their lines (may be absent)."""
STAGES = {"dv": "dvalues", "dq": "dqueries", "dk": "dkeys"}
"""Returned gradient -> the check's stage for it (one point each with ``--format gradescope``)."""
DTYPE = "float32"
"""The dtype the lesson's traces (and so Q, K, V and dO) have: every gradient must have it too."""


def runs(spec: Spec) -> tuple[str, ...]:
    """The runs of lesson ``spec``'s backward check, in order."""
    return RUNS if spec.gradients is not None and spec.gradients.wider else RUNS[:2]


@cache
def _traced(name: str, dropout: bool, run: str) -> Trace:
    lesson = registry.get(name)
    spec = lesson.check
    assert isinstance(spec, Spec) and spec.gradients is not None
    options = {} if dropout else dict(spec.gradients.undropped)
    if run == "upstream":
        shape = _traced(name, dropout, "eval").tensor(spec.gradients.upstream).shape
        options["grad_output"] = np.round(np.random.default_rng(spec.seed).normal(size=shape), 2)
    elif run == "wide":
        options.update(spec.gradients.wider)
    trace: Trace = lesson.trace(backward=True, **options)
    return trace


def references(spec: Spec, dropout: bool) -> dict[str, Trace]:
    """Run -> the lesson's backward trace for it (``dropout``: through the lesson's dropout)."""
    return {run: _traced(spec.name, dropout, run) for run in runs(spec)}


def operands(trace: Trace, g: Gradients) -> tuple[np.ndarray, ...]:
    """Q, K, V and dO of ``trace``, as float64 arrays of the float32 values the student is given."""
    return tuple(np.array(trace.tensor(n), dtype=np.float64) for n in (g.q, g.k, g.v, g.upstream))


def tokens(trace: Trace, g: Gradients) -> int:
    """T, the number of queries."""
    return int(trace.tensor(g.q).shape[0])


def with_dropout(ev: Evidence, spec: Spec) -> bool:
    """True when the student was given the lesson's dropout mask, so that its reference goes through dropout."""
    from tracer.compare.check.gradargs import KEEP  # the kinds of argument, which the parent decodes too

    return bool(spec.gradients and spec.gradients.rate) and KEEP in ev.given.values()


def returned(ctx: Context, run: str, key: str) -> Seen | None:
    """The value the student returned for gradient ``key`` in ``run`` (None: it returned fewer values)."""
    return next((s for s in ctx.needed(run).seen if s.id == key), None)


def problem(ctx: Context, q: Quantity) -> tuple[str, dict[str, str]]:
    """What is wrong with the returned gradient itself, before its values: a note code and its details, or ``""``."""
    want = ctx.traces[q.run].tensor(q.step).shape
    got = returned(ctx, q.run, q.key)
    if got is None:
        return "grad_missing", {"count": str(len(ctx.needed(q.run).seen))}
    if got.op.startswith("shape:"):  # too large to be sent: its shape alone (:data:`.gradcall.LARGEST`)
        return "grad_shape", {"shape": _shape(_sent_shape(got.op)), "want": _shape(want)}
    if got.op == "none" or got.op.startswith("type:"):
        return "grad_type", {"type": got.op.removeprefix("type:")}
    if got.op != DTYPE:
        return "grad_dtype", {"dtype": got.op, "want": DTYPE}
    if got.value.shape != want:
        return "grad_shape", {"shape": _shape(got.value.shape), "want": _shape(want)}
    return "", {}


def _sent_shape(op: str) -> tuple[int, ...]:
    """The shape in a child's ``shape:AxB`` (anything else is malformed data)."""
    sizes = op.removeprefix("shape:").split("x")
    if not 0 < len(sizes) <= MAX_DIMS or not all(n.isdigit() and len(n) <= 12 for n in sizes):
        raise Malformed(f"a returned gradient's shape is not one: {op[:40]!r}")
    return tuple(int(n) for n in sizes)


def _shape(shape: tuple[int, ...]) -> str:
    return f"({', '.join(map(str, shape))})"


def values(ctx: Context, run: str) -> dict[str, np.ndarray | None]:
    """Each returned gradient as a float64 array, None where it is not a float32 tensor of its input's shape."""
    out: dict[str, np.ndarray | None] = {}
    for key in STAGES:
        got = returned(ctx, run, key)
        q = Quantity(key, STAGES[key], getattr(ctx.spec.gradients, key), run=run)
        out[key] = got.value if got is not None and not problem(ctx, q)[0] else None
    return out
