"""Where the page's step navigator stops: the worked results a reader steps through.

The HTML page's Previous / Next buttons walk through a page's stops in
reading order.  A stop is a result a student works through, not every block
that has an anchor:

1. each worked equation (an entry of the focus query written out: formula,
   numbers, terms, result), unless an earlier stop shows the very same
   equation;
2. each table that works the focus query's result out down to a sum (it has a
   Σ row: the tutorial's normalizations, overflow and context terms);
3. each figure;
4. in a section that has none of these, its first table or formula, so that
   every section can be reached.

Never a stop: anything inside a folded group (the all-pairs expansions, which
a heatmap cell opens), display formulas that state a general rule (the
equations under them work it out, and the recap repeats them), and reference
tables (inputs, weights, whole matrices, the single numbers and checks), which
a reader looks up rather than steps through.  ``docs/reports.md`` states the
same rule for teachers.
"""

from __future__ import annotations

from collections.abc import Iterable

from tracer.present.views.model import Equation, Figure, Formula, Section, Table


def _worked(block: Table | Equation | Figure) -> bool:
    """A block that is a stop wherever it is (rules 1 to 3, before removing repeats)."""
    return any(r.total for r in block.rows) if isinstance(block, Table) else True


def stops(sections: Iterable[Section]) -> frozenset[str]:
    """The anchors of the blocks the navigator stops at (see the module's rule)."""
    out: set[str] = set()
    seen: set[str] = set()  # the equations already stepped through
    for section in sections:
        mine = []
        for b in section.blocks:
            if not isinstance(b, Table | Equation | Figure) or not _worked(b):
                continue
            if isinstance(b, Equation):
                if b.latex in seen:
                    continue
                seen.add(b.latex)
            mine.append(b.anchor)
        if not mine:  # rule 4: the section can still be reached
            mine = [b.anchor for b in section.blocks if isinstance(b, Table | Formula)][:1]
        out.update(mine)
    return frozenset(out)
