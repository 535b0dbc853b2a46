"""Every lesson's trace, as pages print it, is the same bits whichever kernels torch and MKL pick.

Each run below forces other kernels than this machine's defaults: MKL's
instruction set (``MKL_ENABLE_INSTRUCTIONS``), one thread (``OMP_NUM_THREADS``)
and torch's own vector code (``ATEN_CPU_CAPABILITY=default``: no AVX).  The
canonical trace (every traced primitive, library results as their loop forms,
checks as their bounds) must hash the same in all of them.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HASHES = """
import hashlib
import tracer
from tracer.core import portable
from tracer.core.serialize import dumps
for lesson in ("simple", "trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache"):
    canon = portable.canonical(tracer.trace_lesson(lesson))
    print(lesson, hashlib.sha256(dumps(canon).encode()).hexdigest())
"""

SETTINGS = [
    {},
    {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
    {"MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    {"OMP_NUM_THREADS": "1"},
    {"ATEN_CPU_CAPABILITY": "default"},
]


def hashes(extra: dict[str, str], script: str = HASHES) -> str:
    """What ``script`` prints in a fresh interpreter with the settings ``extra`` (and no others of ours)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MKL_ENABLE_INSTRUCTIONS", "ATEN_CPU_CAPABILITY")}
    env.update(extra)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_canonical_traces_do_not_depend_on_kernels() -> None:
    base = hashes(SETTINGS[0])
    assert base.count("\n") == 9  # one line per lesson
    for extra in SETTINGS[1:]:
        assert hashes(extra) == base, extra
