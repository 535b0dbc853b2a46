"""The trace: nodes of recorded values, and steps as views into them.

A :class:`Trace` is an ordered list of :class:`Node` objects, one per traced
primitive call, each holding a whole tensor of results (``omega.p`` holds every
product of every dot product).  A :class:`Step` is a cheap view of one element
(``omega[2,1].p[3]``), of a slice (``alpha[2]``), or of a whole tensor-level
node (``mat.omega``); steps are made on demand, never stored, so a trace of tens
of millions of steps costs only its tensors.

This module imports numpy only: no torch, no renderer, no I/O.  Rich display
and saving go through :mod:`tracer.core.hooks`, which the package's top fills in.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from tracer.core import formula, hooks, ids
from tracer.core.reads import Box, Reads
from tracer.core.verdict import Verification
from tracer.errors import StepNotFound

Values = npt.NDArray[np.floating[Any]]
"""What a node holds: float32 or float64 values (the only dtypes a trace file may declare)."""

ELEMENT = "element"  # every entry of the node is a step of its own
TENSOR = "tensor"  # the node is one step (matrix-form results, comparisons)
FOUND = 1 << 16
"""How many looked-up ids a trace remembers (a page's few thousand fit; a loop over millions stays bounded)."""


@dataclass(frozen=True)
class Ref:
    """How a node reads an operand: its name and, per operand axis, an index expression.

    An expression is an axis of the reading node (``"i"``), that axis shifted
    (``"k-1"``; an index that falls outside the operand is skipped), ``"*"``
    for every entry along that operand axis, or integer arithmetic over the
    reader's axes (``"2*h+c-2"``, ``"1"``: see :func:`tracer.core.ids.index_expr`),
    which layout ops such as a head split use.  ``index=None`` reads the whole
    tensor.
    """

    node: str
    index: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form used in trace files."""
        return {"node": self.node} if self.index is None else {"node": self.node, "index": list(self.index)}


@dataclass(eq=False)
class Node:
    """One traced primitive call and the whole tensor of values it produced."""

    name: str  # id stem, e.g. "omega.p"
    op: str  # "input", "mul", "acc", "sum", "exp", "max", "sub", "div", "softmax", "matmul", "maxabsdiff"
    stage: str  # the lesson stage it belongs to, e.g. "scores"
    axes: tuple[str, ...]  # axis names, one per value dimension, e.g. ("i", "j", "k")
    split: tuple[int, ...]  # how many indices each id segment takes, e.g. (2, 1) for omega[i,j].p[k]
    value: Values
    args: tuple[Ref, ...] = ()
    latex: str = ""  # formula template, e.g. r"\omega_{<i,j>} = x^{(<i>)} \cdot x^{(<j>)}"
    text: str = ""  # plain-text form of the right-hand side, e.g. "x(<i>)·x(<j>)"
    symbol: str = ""  # LaTeX of one entry, e.g. r"\omega_{<i,j>}"; empty for a tensor-level node (see core.formula)
    granularity: str = ELEMENT
    attrs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.value.ndim != len(self.axes):
            raise ValueError(f"node {self.name}: {self.value.ndim}-d value for axes {self.axes}")
        if sum(self.split) != len(self.axes) or len(self.split) != self.name.count(".") + 1:
            raise ValueError(f"node {self.name}: split {self.split} does not fit axes {self.axes}")
        if self.value.flags.writeable:
            self.value.flags.writeable = False

    @property
    def sizes(self) -> dict[str, int]:
        """Axis name -> number of entries."""
        return dict(zip(self.axes, self.value.shape, strict=True))

    @property
    def nsteps(self) -> int:
        """How many steps this node contributes when a trace is iterated."""
        return int(self.value.size) if self.granularity == ELEMENT else 1

    def nonfinite(self) -> tuple[int, int]:
        """(number of inf entries, number of NaN entries)."""
        v = self.value
        if v.dtype.kind != "f":
            return 0, 0
        return int(np.isinf(v).sum()), int(np.isnan(v).sum())


class Step:
    """A view of one recorded value: an element, a slice, or a whole node.

    ``index`` holds 0-based positions for the leading axes; an element step
    binds every axis.  Everything is derived on access from the node.
    """

    __slots__ = ("_inputs", "_reads", "_trace", "index", "node")

    def __init__(self, trace: Trace, node: Node, index: tuple[int, ...]) -> None:
        self._trace = trace
        self.node = node
        self.index = index
        self._inputs: tuple[str, ...] | None = None  # resolved on first use, kept for the step's life
        self._reads: Reads | None = None

    @property
    def is_element(self) -> bool:
        """True when every axis is bound, so the value is a single number."""
        return len(self.index) == len(self.node.axes)

    @property
    def id(self) -> str:
        """The step's canonical id, e.g. ``omega[2,1].p[3]``."""
        if not self.index:
            return self.node.name
        return ids.render(self.node.name, self.node.split, [i + 1 for i in self.index])

    @property
    def value(self) -> float | Values:
        """A float for an element step; a read-only float32 or float64 array for a slice or a whole node."""
        v = self.node.value[self.index]
        return float(v) if self.is_element else v

    @property
    def op(self) -> str:
        """The primitive that produced it."""
        return self.node.op

    @property
    def stage(self) -> str:
        """The stage of the lesson it belongs to."""
        return self.node.stage

    @property
    def bound(self) -> dict[str, int]:
        """Axis name -> 1-based index, for the axes this step binds."""
        return {a: i + 1 for a, i in zip(self.node.axes, self.index, strict=False)}

    @property
    def latex(self) -> str:
        """The formula in LaTeX, with this step's indices filled in."""
        return ids.fill(self.node.latex, self.bound, self.node.sizes)

    @property
    def symbol(self) -> str:
        """LaTeX naming this entry, indices filled in: ``\\omega_{21}``; the row ``alpha[2]`` reads ``\\alpha_{2j}``.

        Empty for a tensor-level node, which names no entry (see :mod:`tracer.core.formula`).
        """
        return ids.fill(self.node.symbol, self.bound, self.node.sizes)

    @property
    def definition(self) -> tuple[str, ...]:
        """The steps of the formula after the symbol, indices filled in (``x^{(2)} \\cdot x^{(1)}``, then the sum).

        Empty when the formula is the symbol itself; see :func:`tracer.core.formula.definition`.
        """
        steps = formula.definition(self.node.latex, self.node.symbol)
        return tuple(ids.fill(s, self.bound, self.node.sizes) for s in steps)

    @property
    def text(self) -> str:
        """The plain-text right-hand side, with indices filled in."""
        return ids.fill(self.node.text, self.bound, self.node.sizes)

    @property
    def inputs(self) -> tuple[str, ...]:
        """Ids of the steps this one was computed from, in argument order (resolved once per step object)."""
        if self._inputs is None:
            self._inputs = tuple(self.reads())
        return self._inputs

    def reads(self) -> Reads:
        """:attr:`inputs` as a sequence that writes an id only when asked: its length costs no id.

        A page that lists the first 16 of a 512-key softmax's inputs, or a
        board equation that writes out five terms, renders those, not 512.
        Made once per step object, like :attr:`inputs`.
        """
        if self._reads is None:
            bound, expand = self.bound, self.is_element
            boxes = [b for b in (self._trace._box(ref, bound, expand) for ref in self.node.args) if b is not None]
            self._reads = Reads(boxes, self.node.name, lambda: self.id, self._trace._learn)
        return self._reads

    def __repr__(self) -> str:
        """``Step(omega[2,1] = 0.9544, op='sum', stage='scores')``: the value as pages print it (see reprs)."""
        text: str = hooks.call("repr", self)
        return text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter's rich display: the repr, and the explanation as HTML (MathML) and Markdown."""
        bundle: dict[str, str] = hooks.call("display", self, include, exclude)
        return bundle


class Trace:
    """An ordered collection of nodes with metadata; index it by step id."""

    def __init__(self, nodes: Sequence[Node], meta: Mapping[str, Any]) -> None:
        self.meta: dict[str, Any] = dict(meta)
        self._nodes: dict[str, Node] = {}
        self._verification: Verification | None = None
        self._recorded: Trace | None = None
        self.shown_form: Trace | None = None
        """This trace as pages print it (:func:`tracer.core.portable.shown` keeps it here, made once)."""
        self._found: dict[str, tuple[Node, tuple[int, ...]]] = {}  # ids looked up already (see __getitem__)
        for n in nodes:
            if n.name in self._nodes:
                raise ValueError(f"duplicate node {n.name}")
            self._nodes[n.name] = n

    # -- nodes -------------------------------------------------------------
    @property
    def nodes(self) -> tuple[Node, ...]:
        """Nodes in recording order."""
        return tuple(self._nodes.values())

    def node(self, name: str) -> Node:
        """The node called ``name`` (``StepNotFound`` if none)."""
        try:
            return self._nodes[name]
        except KeyError:
            raise StepNotFound(self._unknown(name)) from None

    def tensor(self, name: str) -> Values:
        """The whole value array of node ``name`` (read-only)."""
        return self.node(name).value

    @property
    def stages(self) -> tuple[str, ...]:
        """Stage names in the order they were first recorded."""
        return tuple(dict.fromkeys(n.stage for n in self._nodes.values()))

    def __repr__(self) -> str:
        """``Trace(lesson='simple', tokens=[...], query=2, dtype='float32', 56 nodes, 1689 steps)``."""
        text: str = hooks.call("repr", self)
        return text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter's rich display: the repr, and a summary by stage as HTML (MathML) and Markdown."""
        bundle: dict[str, str] = hooks.call("display", self, include, exclude)
        return bundle

    # -- metadata shortcuts ------------------------------------------------
    @property
    def tokens(self) -> list[str]:
        """Token labels, one per input row."""
        return list(self.meta.get("tokens", []))

    @property
    def query(self) -> int:
        """The 1-based focus query the reports dwell on."""
        return int(self.meta.get("query", 1))

    @property
    def dtype(self) -> str:
        """The dtype the values were computed in: ``float32`` or ``float64``."""
        return str(self.meta.get("dtype", "float32"))

    # -- steps -------------------------------------------------------------
    def __getitem__(self, step_id: str) -> Step:
        """The step an id names; :class:`~tracer.errors.StepNotFound` says what is wrong with a bad one.

        A page looks the same ids up many times (a value, then its equation,
        then as another step's input): each id is parsed and checked once and
        remembered, up to :data:`FOUND` ids, after which the memory starts over.
        """
        hit = self._found.get(step_id)
        if hit is not None:
            return Step(self, *hit)
        step = self._find(step_id)
        if len(self._found) >= FOUND:
            self._found.clear()
        self._found[step_id] = (step.node, step.index)
        return step

    def _learn(self, step_id: str, name: str, index: tuple[int, ...]) -> None:
        """Remember where an id a step's inputs wrote points (1-based ``index`` into node ``name``).

        A page looks each input up right after writing its id (its value in
        an equation, its own panel): remembered here, it is never parsed.
        """
        if step_id not in self._found:
            if len(self._found) >= FOUND:
                self._found.clear()
            self._found[step_id] = (self._nodes[name], tuple(i - 1 for i in index))

    def _find(self, step_id: str) -> Step:
        try:
            name, segments, index = ids.parse(step_id)
        except ValueError as e:
            raise StepNotFound(str(e)) from None
        node = self._nodes.get(name)
        if node is None:
            raise StepNotFound(self._unknown(name, step_id))
        counts = [c for _, c in segments]
        short = False
        for got, want in zip(counts, node.split, strict=True):
            if got > want or (short and got):
                raise StepNotFound(f"{step_id!r} does not fit {self._grammar(node)}")
            short = short or got < want
        for axis, i, size in zip(node.axes, index, node.value.shape, strict=False):
            if not 1 <= i <= size:
                raise StepNotFound(f"{step_id!r}: index {axis}={i} is out of range 1..{size}")
        return Step(self, node, tuple(i - 1 for i in index))

    def get(self, step_id: str) -> Step | None:
        """The step, or None when the id names no step."""
        try:
            return self[step_id]
        except StepNotFound:
            return None

    def __contains__(self, step_id: object) -> bool:
        return isinstance(step_id, str) and self.get(step_id) is not None

    def __iter__(self) -> Iterator[Step]:
        return self.steps()

    def __len__(self) -> int:
        return sum(n.nsteps for n in self._nodes.values())

    def steps(self, stage: str | None = None, pattern: str | None = None) -> Iterator[Step]:
        """Steps in recording order, lazily; optionally one stage's, or ids matching a glob.

        In ``pattern`` only ``*`` (any run of characters within a segment),
        ``**`` (anything) and ``?`` (one character) are wildcards; brackets
        and dots are literal, so ``omega[2,*]`` lists the scores of query 2
        and ``omega[2,*].p[*]`` their products.
        """
        matcher = ids.glob_matcher(pattern) if pattern is not None else None
        shaped = ids.id_shape(pattern) if pattern is not None else None
        for node in self._nodes.values():
            if stage is not None and node.stage != stage:
                continue
            if matcher is not None and not ids.may_match(node.name, pattern or ""):
                continue
            if node.granularity != ELEMENT:
                step = Step(self, node, ())
                if matcher is None or matcher(step.id):
                    yield step
                continue
            ranges = _index_ranges(node, shaped) if shaped is not None else None
            if ranges is not None:  # walk only the indices the pattern allows
                for idx in product(*ranges):
                    yield Step(self, node, idx)
                continue
            for idx in np.ndindex(*node.value.shape):
                step = Step(self, node, tuple(idx))
                if matcher is None or matcher(step.id):
                    yield step

    def expand(self, step: Step) -> Iterator[Step]:
        """The element steps under a slice or tensor step (just the step itself for an element)."""
        node = step.node
        if step.is_element:
            yield step
            return
        rest = node.value.shape[len(step.index) :]
        for idx in np.ndindex(*rest):
            yield Step(self, node, step.index + tuple(idx))

    def nonfinite(self) -> list[tuple[str, int, int]]:
        """(node, inf count, NaN count) for each node holding non-finite values."""
        out = []
        for n in self._nodes.values():
            inf, nan = n.nonfinite()
            if inf or nan:
                out.append((n.name, inf, nan))
        return out

    def verify(self) -> Verification:
        """Recompute every value from its recorded operands with its recorded op (see :mod:`tracer.core.verify`).

        ``verify().ok`` is False when some values do not follow from their
        inputs (a file edited by hand, or by someone who recomputed its
        digest); ``verify().summary()`` names them in one line.  The work is
        :func:`tracer.core.verify.verify`, reached through :mod:`tracer.core.hooks`
        (that module reads traces, so the trace may not import it).  It runs
        once per trace: nodes and their values are read-only after the trace is
        built, so a report in two languages and two formats asks for it four
        times and pays once.
        """
        if self._recorded is not None:  # a form made for print answers with the recorded trace's verdict
            return self._recorded.verify()
        if self._verification is None:
            self._verification = hooks.call("verify", self)
        return self._verification

    def for_print(self, nodes: Sequence[Node]) -> Trace:
        """The same steps holding other values for print (:func:`tracer.core.portable.shown`), verified as this one.

        A page prints a library result as its loop form, so a check ``|N - N.loop|`` it
        shows no longer matches the values beside it; recomputing the printed trace
        would call the check "edited".  The verdict is the recorded trace's: the one
        ``attn-trace verify`` gives, computed once for both (a report and ``verify``
        can never disagree).
        """
        out = Trace(nodes, self.meta)
        out._recorded = self
        return out

    def save(self, path: str | os.PathLike[str] | IO[str]) -> None:
        """Write the trace file (see ``docs/trace-format.md``); :func:`tracer.core.serialize.save` does the work."""
        hooks.call("save", self, path)

    # -- helpers -----------------------------------------------------------
    def _box(self, ref: Ref, bound: Mapping[str, int], expand: bool) -> Box | None:
        """The entries a reference selects, given the reading step's bound axes (1-based); None: none.

        An axis read at ``*`` takes every index when the step is an element
        (``expand``) and ends the selection otherwise (a slice reads a slice);
        an index outside the operand selects nothing.
        """
        op = self._nodes[ref.node]
        if ref.index is None:
            return (op.name, op.split, None)
        prefix: list[list[int]] = []
        stopped = False
        for expr, size in zip(ref.index, op.value.shape, strict=True):
            if expr == "*":
                choices = list(range(1, size + 1)) if expand else []
            else:
                i = ids.index_expr(expr)(bound)
                if i is not None and not 1 <= i <= size:
                    return None
                choices = [] if i is None else [i]
            stopped = stopped or not choices
            if not stopped:
                prefix.append(choices)
        return (op.name, op.split, prefix)

    @staticmethod
    def _grammar(node: Node) -> str:
        return ids.pattern(node.name, node.split, node.axes)

    def _unknown(self, name: str, step_id: str | None = None) -> str:
        near = difflib.get_close_matches(name, list(self._nodes), n=3)
        hint = f"; did you mean {', '.join(self._grammar(self._nodes[n]) for n in near)}?" if near else ""
        return f"no step {step_id or name!r} in this trace{hint}"


def _index_ranges(node: Node, shaped: list[tuple[str, list[str] | None]]) -> list[list[int]] | None:
    """Per axis, the 0-based indices of ``node`` an id-shaped glob selects.

    ``[[]]`` when no id of the node can match (a ``*`` never crosses a dot, so
    the segments must line up); None when the pattern gives a segment another
    number of indices than the node has (``x[*]``: a ``*`` may span commas),
    which is left to the scan.
    """
    names = node.name.split(".")
    if len(names) != len(shaped):
        return [[]]
    ranges: list[list[int]] = []
    sizes = iter(node.value.shape)
    for (name, count), (glob, idx) in zip(zip(names, node.split, strict=True), shaped, strict=True):
        if not ids.glob_matcher(glob)(name):
            return [[]]
        if len(idx or []) != count:
            return None
        for token in idx or []:
            size = next(sizes)
            match = ids.glob_matcher(token)
            ranges.append([i for i in range(size) if match(str(i + 1))])
    return ranges
