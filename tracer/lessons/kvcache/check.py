"""Lesson kvcache as ``attn-trace check`` sees it.

The student writes a module with a key/value cache, driven through a generation call by call (:data:`CALLS`).

:data:`CHECK` is the lesson's check description (:class:`tracer.compare.check.lessons.Spec`):
the constructor the student writes, the sizes and seed it is built with, how it
is run, and the lesson's quantities in the order the lesson computes them.
"""

from __future__ import annotations

from tracer.compare.check.lessons import GENERATION, Spec

CALLS = ((1, 2), (3, 3), (4, 4), (5, 6))
"""The generation as the check drives it: the first and last token (1-based) of each call.

A prompt of two tokens, tokens 3 and 4 one at a time, then tokens 5 and 6 in
one call (a prompt fed in pieces, a draft being verified): a mask that is not
offset to the new tokens' positions shows on a single token, one sliced
``mask[:n, :n]`` only on a call of several (``tracer.compare.check.generation``).
"""

CHECK = Spec(
    "kvcache",
    ("d_in", "d_out", "context_length"),
    (3, 2, 6),
    123,
    3,
    2,
    1,
    True,
    (),  # every call's context rows: tracer.compare.check.generation drives the generation
    driver=GENERATION,
    calls=CALLS,
)
