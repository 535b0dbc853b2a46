"""A step's reads: the lazy list of its inputs agrees with :attr:`Step.inputs` and writes only the ids asked for.

Pages list the first 16 inputs of a step and count the rest; a board
equation writes out five terms of a long sum.  :meth:`Step.reads` must give
the same ids in the same order as ``inputs`` (repeats and the step itself
left out), while rendering only what is looked at, so a page of 512 tokens
does not write out 512 ids per softmax entry.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracer
from tracer import api
from tracer.core import ids, reads
from tracer.record.inputs import Example


@pytest.fixture(scope="module", params=["simple", "flash", "kvcache", "rope", "gqa"])
def trace(request: pytest.FixtureRequest) -> tracer.Trace:
    return tracer.trace_lesson(request.param)


def test_reads_agree_with_inputs_everywhere(trace: tracer.Trace) -> None:
    seen = 0
    for step in trace.steps():
        r = step.reads()
        assert tuple(r) == step.inputs
        assert len(r) == len(step.inputs)
        assert [r[k] for k in range(len(r))] == list(step.inputs)  # entry by entry, through the mixed radix
        assert r[-1:] == list(step.inputs[-1:]) and r[:2] == list(step.inputs[:2])
        seen += 1
    assert seen > 100


def _long_trace() -> tracer.Trace:
    x = np.random.default_rng(1).random((64, 4)).round(2)
    return api.run("simple", Example(x, [f"t{i}" for i in range(64)], 2, "float32"))


def test_a_long_softmax_renders_only_what_is_looked_at(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _long_trace()
    step = trace["z[5,1]"]  # a weighted sum over 64 tokens: 64 weighted terms
    calls = 0
    real = ids.render

    def counted(*a: object) -> str:
        nonlocal calls
        calls += 1
        return real(*a)  # type: ignore[arg-type]

    monkeypatch.setattr(reads.ids, "render", counted)
    r = step.reads()
    assert len(r) == 64
    assert calls == 0  # counting writes no id
    first = r[:3]
    assert calls == 3 and first == ["z[5].t[1,1]", "z[5].t[2,1]", "z[5].t[3,1]"]


def test_an_index_outside_the_reads_is_refused() -> None:
    r = tracer.trace_self_attention()["omega[2,1]"].reads()
    with pytest.raises(IndexError):
        r[3]
    assert r[-3] == "omega[2,1].p[1]"
