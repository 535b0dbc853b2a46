"""What a lesson asks of a student's code: the check description each lesson carries.

A lesson's check description is a :class:`Spec`, the ``check`` attribute of
its :class:`~tracer.record.lesson.Lesson` (the built-in lessons' are in
``tracer/lessons/<name>/check.py``): the constructor the book's reader writes
(``docs/check.md``), the sizes and seed it is built with, how it is run
(:data:`DRIVERS`), and the lesson's quantities in the order the lesson
computes them.  The engines read only these fields, never a lesson's name.
:data:`SPECS` finds every installed lesson's description through the
registry.  Two modules build on a description: :mod:`.sizing` makes it at
the sizes a teacher asks for (``--d-out``, ``--heads``) or in the form the
student wrote (the book's wrapper of heads), and :mod:`.reference` makes the
inputs the student's code is called on and the lesson's own trace computed
with the student's weights.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from tracer.compare.check.model import Quantity
from tracer.errors import InputError
from tracer.record import registry

if TYPE_CHECKING:
    from types import ModuleType

    import numpy as np
    import torch

    from tracer.compare.check.model import Role

Q = Quantity

FUNCTION = "function"
"""A function of the inputs, called once on them (no weights of its own)."""
MODULE = "module"
"""A module built from the constructor's arguments, then called (in eval mode, and as the quantities ask)."""
QKV = "qkv"
"""A function of queries, keys, values and a block size, called at several sizes (:mod:`.flashcheck`)."""
GENERATION = "generation"
"""A module driven through a generation, call by call, its cache carried between calls (:mod:`.generation`)."""
GRAD = "grad"
"""A hand-written backward pass: ``f(Q, K, V, dO) -> (dQ, dK, dV)`` or an ``autograd.Function`` (:mod:`.gradcheck`)."""
DRIVERS = (FUNCTION, MODULE, QKV, GENERATION, GRAD)
"""The ways the check runs a student's code: a lesson's ``driver`` is one of them."""


class Mistake(Protocol):
    """A mistake the check can name (:class:`~.entry.Entry`): its code, the stages where it shows, its test."""

    @property
    def code(self) -> str: ...

    @property
    def stages(self) -> tuple[str, ...]: ...

    @property
    def test(self) -> Callable[[Any], Any]: ...

    @property
    def lesson(self) -> str: ...

    @property
    def key(self) -> str: ...


@dataclass(frozen=True)
class Gradients:
    """Where a lesson's traced backward pass keeps each quantity a hand-written attention backward computes.

    Each field names a node of the lesson's trace traced with
    ``backward=True`` (``docs/step-ids.md``).  A lesson whose attention has
    no dropout leaves ``kept``, ``dropped``, ``keep`` and ``rate`` empty, and
    one whose gradient is not masked gives ``scores`` the same node as
    ``unscaled``.
    """

    upstream: str  # dO, the upstream gradient of the output
    weights: str  # P, the attention weights (masked, before dropout)
    dp: str  # dP = dO Vᵀ, the gradient of the weights the output was computed with
    rowsum: str  # Σ_j P_ij dP_ij, the softmax gradient's row sum
    ds: str  # dS = P ⊙ (dP − rowsum), the gradient of the scaled scores
    unscaled: str  # dS / √d_k, the gradient of the raw scores
    scores: str  # the raw scores' gradient after the mask (a hidden score's is 0)
    kept: str = ""  # dP × 1/(1−p)
    dropped: str = ""  # dP × 1/(1−p) × B, the gradient of the weights before dropout
    keep: str = ""  # B, the dropout mask (1 kept, 0 dropped)
    rate: float = 0.0  # p, the dropout rate the lesson is traced at (0: no dropout)
    undropped: tuple[tuple[str, Any], ...] = ()  # the lesson's options that trace it without dropout
    wider: tuple[tuple[str, Any], ...] = ()  # the lesson's options that trace it at other sizes (another d_k)
    q: str = "q"
    k: str = "k"
    v: str = "v"
    dq: str = "dq"
    dk: str = "dk"
    dv: str = "dv"


@dataclass(frozen=True)
class Spec:
    """One lesson as the check sees it."""

    name: str
    signature: tuple[str, ...]  # the constructor's parameters as the book names them
    args: tuple[Any, ...]  # the values passed, positionally, in that order
    seed: int
    d_in: int
    d_out: int
    heads: int
    batch: bool  # called on torch.stack((inputs, inputs)) rather than on inputs
    quantities: tuple[Quantity, ...]
    short: int = 0  # tokens of a shorter sequence whose result must be the first rows of the full one (0: none)
    dropout: float = 0.0  # p of the train-mode run (0: no train-mode run)
    form: str = ""  # "wrap" when the student's module is the book's wrapper of heads
    block: int = 0  # driver qkv: the second block size it is called with (one that does not divide T)
    style: str = ""  # rotary lessons: the pairing the student's code should use, "half" or "interleaved"
    bias: bool = False  # the projections' biases are the module's own (no qkv_bias to turn them off): added
    driver: str = MODULE  # how the student's code is run (DRIVERS)
    causal: bool = False  # the scores are masked causally (and nothing else)
    scaled: bool = True  # the scores are divided by √d_k before the softmax
    trained: bool = False  # the second builds are also called in training mode (dropout = 0 must change nothing)
    calls: tuple[tuple[int, int], ...] = ()  # driver generation: the first and last token (1-based) of each call
    rebuilds: Callable[[Spec], tuple[dict[str, Any], ...]] | None = None
    """The second builds' sizes by the constructor's names, and ``tokens`` (:mod:`.resize`; None: none)."""
    at_size: Callable[[Spec, dict[str, Any], dict[str, Role], np.ndarray], np.ndarray] | None = None
    """``(spec, sizes, weights, inputs)`` -> the lesson's result at a second build's sizes, in float64."""
    plug: (
        Callable[
            [Spec, ModuleType, torch.Tensor, dict[str, torch.Tensor], dict[str, Role], dict[str, Any]], dict[str, Any]
        ]
        | None
    ) = None
    """``(spec, pipeline, inputs, weights, roles, info)`` -> the pipeline's ``build`` arguments with the student's
    weights (:mod:`.reference`); None: the lesson has no weights."""
    gradients: Gradients | None = None
    """Where its traced backward pass keeps what ``check --backward`` compares (None: no backward check)."""
    mistakes: tuple[Mistake, ...] = ()
    """The lesson's own mistakes, each a hypothesis (:class:`~.entry.Entry`: a code, the stages where it shows,
    the test that predicts the wrong values and looks for them), tried after the catalogue's; each is said by
    the lesson's own message table, ``diagnosis.<code>`` (``docs/lessons.md``)."""

    def __post_init__(self) -> None:
        """Mark the lesson's own mistakes as its own, so that their sentences come from its table."""
        if any(e.lesson != self.name for e in self.mistakes):
            own = tuple(replace(e, lesson=self.name) for e in self.mistakes)  # type: ignore[type-var]
            object.__setattr__(self, "mistakes", own)

    @property
    def is_class(self) -> bool:
        """True when the student gives a module class or a function of q, k, v (every driver but ``function``)."""
        return self.driver != FUNCTION

    @property
    def multi(self) -> bool:
        """True for the lessons whose module takes ``num_heads``, whatever their number."""
        return "num_heads" in self.signature

    @property
    def grouped(self) -> bool:
        """True for the lessons whose module takes ``num_kv_groups`` (queries share keys and values by group)."""
        return "num_kv_groups" in self.signature

    @property
    def windowed(self) -> bool:
        """True for the lessons whose module takes ``window_size`` (a query sees only the last keys)."""
        return "window_size" in self.signature

    @property
    def window(self) -> int:
        """The ``window_size`` the module is built with (0 without one)."""
        return int(self.args[self.signature.index("window_size")]) if self.windowed else 0

    @property
    def rotary(self) -> bool:
        """True for the lessons whose queries and keys are turned (RoPE): they have a pairing ``style``."""
        return bool(self.style)

    @property
    def head_dim(self) -> int:
        """d_k of one head."""
        return self.d_out // self.heads


def qkv(pre: str, optional: bool = False, group: str = "") -> tuple[Quantity, ...]:
    return tuple(Q(n, "projections", f"{pre}{n}", optional, group) for n in ("q", "k", "v"))


class _Specs(Mapping[str, Spec]):
    """Lesson name -> its check description, for every installed lesson that has one (read through the registry)."""

    def __getitem__(self, name: str) -> Spec:
        try:
            spec = registry.get(name).check
        except InputError:
            raise KeyError(name) from None
        if not isinstance(spec, Spec):
            raise KeyError(name)
        return spec

    def __iter__(self) -> Iterator[str]:
        return iter([n for n in registry.names() if n in self])

    def __contains__(self, name: object) -> bool:
        try:
            return isinstance(name, str) and isinstance(registry.get(name).check, Spec)
        except InputError:
            return False

    def __len__(self) -> int:
        return sum(1 for _ in self)


SPECS: Mapping[str, Spec] = _Specs()
"""Every installed lesson's check description, in course order."""
