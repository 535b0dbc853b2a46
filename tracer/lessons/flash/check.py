"""Lesson flash as ``attn-trace check`` sees it.

The student writes a function of queries, keys, values and a block size, called at three sizes.

:data:`CHECK` is the lesson's check description (:class:`tracer.compare.check.lessons.Spec`):
the constructor the student writes, the sizes and seed it is built with, how it
is run, and the lesson's quantities in the order the lesson computes them.
"""

from __future__ import annotations

from tracer.compare.check.lessons import QKV, Q, Spec

CHECK = Spec(
    "flash",
    ("q", "k", "v", "block_size"),
    (2,),
    789,
    3,
    2,
    1,
    False,
    (
        Q("z", "context", "flash.z"),
        Q("z", "context", "flash.z", run="block"),
        Q("short", "context", "flash.z", run="short"),
    ),
    short=5,
    block=4,
    driver=QKV,
)
