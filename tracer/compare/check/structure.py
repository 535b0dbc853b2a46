"""Differences of structure: hypotheses tried when every stage matches, or when nothing could be compared.

They name a module that is not the lesson's computation at all (its weights
say so as it is built: ``grouped_query``, ``latent_kv``), or is the lesson's
only at the lesson's own sizes (``sizes_ignored``: built again at other
sizes, it does not compute the lesson there).  They have no first
divergence; like every other entry, each is a test the evidence bears out
or not.
"""

from __future__ import annotations

from collections.abc import Callable

from tracer.compare.check import resize
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
from tracer.compare.check.evidence import Malformed
from tracer.message import Message

STAGE = ("structure",)


def found_when_built(code: str) -> Callable[[Context], Hit | None]:
    """The test of a structure the weights showed as the module was built (:class:`.roles.Structural`)."""

    def test(c: Context) -> Hit | None:
        if c.structure is None or c.structure[0] != code:
            return None
        return Hit(None, (), dict(c.structure[1]))

    return test


def sizes_ignored(c: Context) -> Hit | None:
    """Built again at other sizes (the lesson's ``rebuilds``), the module does not compute the lesson there."""
    if c.structure is not None or not c.spec.is_class or c.spec.rebuilds is None:
        return None
    if c.other is None:
        raise Malformed(Message("check.second_build_missing"))
    return resize.hit(c.spec, c.other)


BUILT = ("grouped_query", "latent_kv")
"""The structures a build can find (:mod:`.roles`); anything else in a child's data is malformed."""

STRUCTURE: tuple[Entry, ...] = (
    *(Entry(code, STAGE, found_when_built(code)) for code in BUILT),
    Entry("sizes_ignored", STAGE, sizes_ignored),
)
"""In the order they are tried."""
