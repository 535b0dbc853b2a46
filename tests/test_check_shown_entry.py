"""The divergence is shown at an entry where the mistake shows, not at the first entry that differs.

A causal module that forgets the √d_k scaling has every score wrong, but
row 1 of its weights is 1 whichever score it had: shown there, the numbers
hide the mistake.  The entry shown is where the weights that follow differ
most from the lesson's (:func:`tracer.compare.check.align.first_difference`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import tracer
from tracer.compare.check.align import first_difference, gaps
from tracer.compare.check.student import load

CORPUS = Path(__file__).parent / "check_corpus"


def test_the_rule_on_small_arrays() -> None:
    ref = np.array([[1.0, 2.0], [3.0, 4.0]])
    got = np.array([[1.5, 2.0], [3.0, 9.0]])
    assert first_difference(ref, got) == (1, 1)  # the largest difference
    shows = np.array([[0.7, 0.0], [0.0, 0.1]])
    assert first_difference(ref, got, shows) == (0, 0)  # where the consequence differs most
    assert first_difference(ref, got, np.zeros((2, 2))) == (1, 1)  # a consequence that differs nowhere: ignored
    assert first_difference(ref, ref.copy(), shows) == (0, 0)
    assert gaps(np.array([1.0, -np.inf]), np.array([np.nan, -np.inf])).tolist() == [np.inf, 0.0]


def test_a_missing_scale_is_shown_where_the_weights_differ_most(tmp_path: Path) -> None:
    book = (CORPUS / "causal_book.py").read_text(encoding="utf-8")
    unscaled = book.replace("attn_scores / keys.shape[-1] ** 0.5", "attn_scores")
    assert unscaled != book
    (tmp_path / "unscaled.py").write_text(unscaled, encoding="utf-8")
    obj, source = load(f"{tmp_path / 'unscaled.py'}:CausalAttention")
    r = tracer.check(obj, lesson="causal", source=source)
    d = r.first_divergence
    assert d is not None and r.student is not None and r.diagnosis == "scale_missing"
    lesson = np.asarray(r.trace.node("batch.causal.alpha").value, dtype=np.float64)[0]
    mine = np.asarray(r.student.node("attn_weights").value, dtype=np.float64)[0]
    i, j = np.unravel_index(int(np.argmax(np.abs(mine - lesson))), lesson.shape)
    assert d.element == f"scaled[{i + 1},{j + 1}]" and i > 0  # not row 1, where the softmax is 1 either way
    assert d.student_step == f"attn_weights[1,{i + 1},{j + 1}]"
