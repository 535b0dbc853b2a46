"""Large inputs: the focus query in full, the rest summarized, the files small."""

from __future__ import annotations

import numpy as np
import pytest

import tracer
from tracer.present import report


@pytest.fixture(scope="module")
def big() -> tuple[tracer.Trace, dict[str, bytes]]:
    rng = np.random.default_rng(7)
    x = rng.random((512, 64)).round(2)
    t = tracer.trace_self_attention(x, query=300)
    return t, report.build(t, "en")


def test_size_and_lines_stay_small(big: tuple[tracer.Trace, dict[str, bytes]]) -> None:
    _, files = big
    assert sum(len(d) for d in files.values()) < 2_000_000
    assert sum(d.count(b"\n") for d in files.values()) < 60_000


def test_focus_row_in_full_and_notes_for_the_rest(big: tuple[tracer.Trace, dict[str, bytes]]) -> None:
    _, files = big
    page = files["index.html"].decode()
    for j in (1, 256, 512):
        assert f'data-id="alpha[300,{j}]"' in page
    assert 'data-id="alpha[299,1]"' not in page  # other queries' weights: only in the (averaged) heatmap
    assert "averages over blocks of 16 × 16" in page
    assert "rows left out" in page and "only the first and last terms" in page
    assert "projection onto components 1 and 2" in page
