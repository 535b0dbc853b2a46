"""The context a lesson's page is built in: the trace, its narrative, and how each entry prints.

Beyond :class:`~tracer.present.views.common.Ctx`, a lesson's context knows
its narrative and two facts about a node read from the trace itself: which
nodes print as whole numbers (:meth:`LessonCtx.whole`) and which entries are
hidden keys (:meth:`LessonCtx.hidden`), so that a table, a worked equation
and a heatmap show an entry the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tracer.core import fmt
from tracer.core.trace import Node
from tracer.present.narrative import Narrative, NodeText
from tracer.present.views.common import Ctx

WHOLE_OPS = ("input", "add", "sub", "mul")
"""Ops that keep whole numbers whole: their results print as whole numbers when their operands do."""


@dataclass(frozen=True)
class LessonCtx(Ctx):
    """:class:`Ctx` for any lesson: its narrative, and the token count taken from the tokens, not from ``x``."""

    story: Narrative | None = None
    said: set[str] = field(default_factory=set, compare=False, repr=False)  # notes already on the page
    _whole: dict[str, bool] = field(default_factory=dict, init=False, compare=False, repr=False)
    _hidden: dict[str, np.ndarray | None] = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def t(self) -> int:
        """Number of tokens."""
        return len(self.trace.tokens)

    def text(self, node: Node) -> NodeText:
        """What the narrative says about ``node`` (nothing, for a narrative that does not name it)."""
        return self.story.node(node.name) if self.story is not None else NodeText()

    def whole(self, node: Node) -> bool:
        """Whether ``node`` prints as whole numbers, like the numbers it is made from.

        A count marked ``integer``, an input given as whole numbers (a 0/1
        mask), and the sum, difference or product of such nodes when every
        entry is whole: the sum of two masks prints ``1`` as its parts do,
        never ``1.0000`` beside them.
        """
        if node.name not in self._whole:
            self._whole[node.name] = self._is_whole(node)
        return self._whole[node.name]

    def value(self, node: Node, v: float) -> str:
        """An entry ``v`` of ``node`` as the page prints it everywhere: whole, as given, or fixed decimals."""
        if np.isfinite(v) and self.whole(node):  # token ids, counts, masks and their sums
            return str(int(v))
        return self.given(v, node.name) if node.op == "input" else self.num(v)

    def hidden(self, node: Node) -> np.ndarray | None:
        """Where ``node``'s entries are hidden keys: the ``-inf`` of the mask it is computed from, else None.

        Walks back through the nodes of the same axes (the scaled scores, the
        softmax's steps) to a ``masked_fill``: a weight there is an exact 0
        because its key is masked, not a small weight, and is drawn so.
        """
        if node.name not in self._hidden:
            self._hidden[node.name] = self._find_hidden(node)
        return self._hidden[node.name]

    def _find_hidden(self, node: Node) -> np.ndarray | None:
        seen, todo = set(), [node]
        while todo:
            n = todo.pop()
            if n.name in seen or n.axes != node.axes or n.value.shape != node.value.shape:
                continue
            seen.add(n.name)
            if n.op == "masked_fill":
                return np.isneginf(np.asarray(n.value))
            todo += [self.trace.node(r.node) for r in n.args]
        return None

    def _is_whole(self, node: Node) -> bool:
        if node.attrs.get("integer"):
            return True
        if node.op not in WHOLE_OPS or fmt.places(node.value, self.decimals) != 0:
            return False
        return node.op == "input" or all(self.whole(self.trace.node(r.node)) for r in node.args)
