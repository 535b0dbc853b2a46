"""The backward pass is the same bits whichever kernels torch and MKL pick.

Every gradient is a traced primitive (products, left-to-right running sums,
correctly rounded elementwise operations), never a library's matrix product
or reduction, so the bytes of every backward node must not change with MKL's
instruction set, the thread count or torch's vector code.
"""

from __future__ import annotations

import pytest

from tests.test_portable_kernels import SETTINGS, hashes

HASHES = """
import hashlib
import tracer
for lesson in ("simple", "trainable", "causal", "window", "multihead", "gqa", "rope"):
    for dtype in ("float32", "float64"):
        t = tracer.trace_lesson(lesson, backward=True, dtype=dtype)
        stages = set(t.meta["backward"]["stages"])
        h = hashlib.sha256()
        for node in t.nodes:
            if node.stage in stages:
                h.update(node.name.encode())
                h.update(node.value.tobytes())
        print(lesson, dtype, h.hexdigest())
"""


@pytest.mark.slow
def test_backward_nodes_do_not_depend_on_kernels() -> None:
    base = hashes(SETTINGS[0], HASHES)
    assert base.count("\n") == 14
    for extra in SETTINGS[1:]:
        assert hashes(extra, HASHES) == base, extra
