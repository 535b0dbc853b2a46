"""``check --backward``: hand-written backward passes against the lessons' traced backward, in the Python API.

The corpus (``tests/check_backward/``) holds correct backward passes in
several styles (loops, einsum, matrix products with dropout, two
``autograd.Function`` subclasses) and one copy per mistake of the catalogue;
each file names its subject ``attention_backward``.  The command line, the
class mode and the other formats are in ``test_check_backward_cli.py``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tracer
from tracer.compare.check import align, gradcheck, gradmistakes, gradref
from tracer.compare.check.context import Context
from tracer.compare.check.lessons import SPECS
from tracer.compare.check.student import StudentError
from tracer.errors import InputError
from tracer.present.checkpage import render_check

CORPUS = Path(__file__).resolve().parent / "check_backward"
LESSONS = ("trainable", "causal")
CORRECT = (
    "back_loops",
    "back_einsum",
    "back_matmul_dropout",
    "back_function",
    "back_function_flash",
    "back_function_setup_context",
)
MISTAKES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # file: (the mistake's code, the role of its first wrong step, the lessons it is checked on)
    "mistake_rowsum_missing": ("grad_rowsum_missing", "rowsum", LESSONS),
    "mistake_rowsum_axis": ("grad_rowsum_axis", "rowsum", LESSONS),
    "mistake_dp_for_ds": ("grad_dp_for_ds", "ds", LESSONS),
    "mistake_dv_untransposed": ("grad_dv_untransposed", "dv", LESSONS),
    "mistake_dk_untransposed": ("grad_dk_untransposed", "dk", LESSONS),
    "mistake_scale_missing": ("grad_scale_missing", "unscaled", LESSONS),
    "mistake_scale_doubled": ("grad_scale_doubled", "unscaled", LESSONS),
    "mistake_mask_leak": ("grad_mask_leak", "rowsum", ("causal",)),
    "mistake_dropout_mask": ("grad_dropout_mask", "dropped", ("causal",)),
    "mistake_dropout_scale": ("grad_dropout_scale", "kept", ("causal",)),
}


def subject(name: str) -> Any:
    """The ``attention_backward`` of corpus file ``name``."""
    path = CORPUS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"backward_corpus_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.attention_backward


def checked(name: str, lesson: str) -> tracer.CheckResult:
    return tracer.check(subject(name), lesson=lesson, backward=True, source=str(CORPUS / f"{name}.py"))


def _context(lesson: str, dropout: bool) -> Context:
    spec = gradcheck.backward_spec(SPECS[lesson])
    traces = gradref.references(spec, dropout)
    return Context(spec, traces["eval"], [], {}, traces=traces)


@pytest.mark.parametrize(("lesson", "dropout"), [("trainable", False), ("causal", False), ("causal", True)])
def test_the_hypotheses_model_is_the_lessons_traced_backward(lesson: str, dropout: bool) -> None:
    ctx = _context(lesson, dropout)
    g = ctx.spec.gradients
    assert g is not None
    for run in ctx.traces:
        right = gradmistakes.predicted(ctx, run, gradmistakes.Slip())
        for role, value in right.items():
            node = getattr(g, role)
            if node:
                traced = np.asarray(ctx.traces[run].tensor(node), dtype=np.float64)
                assert np.allclose(value, traced, rtol=1e-5, atol=1e-6), (run, role)


@pytest.mark.parametrize(("lesson", "dropout"), [("trainable", False), ("causal", False), ("causal", True)])
def test_every_mistake_changes_the_gradients_and_is_told_from_the_others(lesson: str, dropout: bool) -> None:
    ctx = _context(lesson, dropout)
    right = gradmistakes.predicted(ctx, "eval", gradmistakes.Slip())
    seen: dict[str, list[np.ndarray]] = {}
    for code, forms in gradmistakes.FORMS.items():
        if (code == "grad_mask_leak" and lesson != "causal") or (code.startswith("grad_dropout") and not dropout):
            continue  # no mask to leak through, no dropout to forget
        got = gradmistakes.predicted(ctx, "eval", forms[0])
        results = [got[r] for r in gradmistakes.RESULTS]
        assert any(not align.close(a, right[r]) for a, r in zip(results, gradmistakes.RESULTS, strict=True)), code
        for other, theirs in seen.items():
            assert any(not align.close(a, b) for a, b in zip(results, theirs, strict=True)), (code, other)
        seen[code] = results


def test_the_causal_lesson_is_traced_without_dropout_when_asked() -> None:
    plain = gradref.references(gradcheck.backward_spec(SPECS["causal"]), False)["eval"]
    dropped = gradref.references(gradcheck.backward_spec(SPECS["causal"]), True)["eval"]
    assert plain.meta["dropout"]["p"] == 0.0 and dropped.meta["dropout"]["p"] == 0.5
    assert np.all(np.asarray(plain.tensor("dropout.keep")) == 1.0)
    assert not np.allclose(plain.tensor("dq"), dropped.tensor("dq"))
    with pytest.raises(InputError, match=r"must be at least 0 and below 1, got 1\.0"):
        tracer.trace_lesson("causal", dropout=1.0)


@pytest.mark.parametrize("lesson", LESSONS)
@pytest.mark.parametrize("name", CORRECT)
def test_every_correct_backward_matches(name: str, lesson: str) -> None:
    r = checked(name, lesson)
    assert r.ok, r.explain("en")
    assert [s.status for s in r.stages] == ["match"] * 9 and r.backward
    assert "MATCHES" in r.explain("en") and "一致" in r.explain("zh")


@pytest.mark.parametrize(
    ("name", "lesson"), [(n, lesson) for n, (_, _, lessons) in MISTAKES.items() for lesson in lessons]
)
def test_every_mistake_is_named_with_its_first_wrong_step(name: str, lesson: str) -> None:
    code, role, _ = MISTAKES[name]
    r = checked(name, lesson)
    assert not r.ok and r.diagnosis == code, r.explain("en")
    d = r.first_divergence
    assert d is not None and d.step == getattr(SPECS[lesson].gradients, role) and d.note == "grad_implied"
    assert d.element.startswith(f"{d.step}[") and d.student is not None
    assert d.student != pytest.approx(d.reference, rel=1e-4, abs=1e-5)  # the step shown does differ
    if not isinstance(subject(name), type):  # a function's tensors are captured: the line of its first wrong one
        assert d.student_id and re.fullmatch(rf"{name}\.py:\d+", d.where) and r.hit is not None
        assert r.hit.where == d.where and r.to_json()["diagnosis"]["where"] == d.where
    else:  # autograd runs an autograd.Function's backward: its tensors are not captured, the file is named
        assert d.student_id is None and d.where == f"{name}.py"
    for lang in ("en", "zh"):
        text, sentence = r.explain(lang), r.sentence(lang)
        assert f"[{code}]" in text and sentence and "".join(sentence.split()) in "".join(text.split())
    assert r.sentence("en") != r.sentence("zh")


def test_a_backward_without_the_dropout_mask_is_checked_without_dropout_and_says_so() -> None:
    plain, through = checked("back_einsum", "causal"), checked("back_matmul_dropout", "causal")
    assert plain.notes == ["grad_no_dropout"] and through.notes == ["grad_dropout"]
    assert through.given == {"causal": "flag", "dropout_mask": "dropout_keep", "p": "dropout_p"}
    assert checked("back_matmul_dropout", "trainable").given == {"causal": "flag"}  # no dropout to pass


@pytest.mark.parametrize(
    ("name", "note", "stage", "said"),
    [
        ("verdict_shape", "grad_shape", "dkeys", "shape (2, 6); its input has shape (6, 2)"),
        ("verdict_dtype", "grad_dtype", "dvalues", "a float64 tensor; its input is float32"),
        ("verdict_two", "grad_missing", "dvalues", "returned 2 values, not dQ, dK and dV"),
        ("verdict_function_shape", "grad_shape", "dvalues", "shape (6, 6); its input has shape (6, 2)"),
        ("verdict_huge", "grad_shape", "dvalues", "shape (1000, 1000); its input has shape (6, 2)"),
    ],
)
def test_a_wrong_shape_dtype_or_count_is_a_verdict(name: str, note: str, stage: str, said: str) -> None:
    r = checked(name, "causal")
    d = r.first_divergence
    assert not r.ok and r.diagnosis is None and d is not None
    assert (d.note, d.stage, d.student) == (note, stage, None)
    assert said in " ".join(r.explain("en").split())
    assert r.to_json()["first_divergence"]["note"] == note


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_scale_written_for_the_lessons_size_differs_at_another(lesson: str) -> None:
    r = checked("verdict_fixed_scale", lesson)
    d = r.first_divergence
    assert not r.ok and d is not None and d.run == "wide" and d.quantity == "dv" and r.diagnosis is None
    assert [s.status for s in r.stages[:6]] == ["match"] * 6
    assert "queries, keys and values 3 wide (d_k = 3)" in " ".join(r.explain("en").split())


def test_the_line_named_is_where_the_mistake_is_made() -> None:
    assert checked("mistake_rowsum_missing", "causal").first_divergence.where == "mistake_rowsum_missing.py:15"
    assert checked("mistake_dk_untransposed", "trainable").first_divergence.where == "mistake_dk_untransposed.py:16"
    text = " ".join(checked("mistake_scale_missing", "causal").explain("en").split())
    assert "(your tensor dS, made at mistake_scale_missing.py:15)" in text


def test_a_backward_that_raises_is_named_with_its_line() -> None:
    with pytest.raises(StudentError, match=r"Attention\.backward raised RuntimeError: .* at verdict_raises\.py:17"):
        checked("verdict_raises", "causal")


def test_bad_subjects_and_lessons_are_refused_in_one_line() -> None:
    with pytest.raises(InputError, match="f\\(Q, K, V, dO\\)"):
        tracer.check(42, lesson="causal", backward=True)
    with pytest.raises(InputError, match="no backward check; check --backward checks the lessons trainable, causal"):
        tracer.check(subject("back_einsum"), lesson="simple", backward=True)
    with pytest.raises(InputError, match="--d-out"):
        tracer.check(subject("back_einsum"), lesson="causal", backward=True, d_out=4)

    def needs_more(Q: Any, K: Any, V: Any, dO: Any, temperature: float) -> Any:
        return Q, K, V

    with pytest.raises(InputError, match="needs_more requires temperature"):
        tracer.check(needs_more, lesson="trainable", backward=True)


def test_the_page_and_the_json_say_the_verdict() -> None:
    r = checked("mistake_scale_missing", "causal")
    page = render_check(r, "zh")
    assert "grad_scale_missing" in page and "dneg.omega" in page and "反向传播漏掉了缩放" in page
    doc = r.to_json("en")
    assert doc["backward"] is True and doc["diagnosis"]["code"] == "grad_scale_missing"
    assert doc["first_divergence"]["detail"]["element"] == doc["first_divergence"]["element"]
    assert [s["stage"] for s in doc["stages"]] == ["dvalues", "dqueries", "dkeys"] * 3


def test_data_a_child_could_forge_is_checked_in_the_parent() -> None:
    from tracer.compare.check.evidence import Evidence, Malformed, Run
    from tracer.compare.check.model import Seen
    from tracer.compare.check.run import judge, spec_for

    spec = spec_for("trainable", backward=True)
    bad = [Seen("dq", "shape:6xbig", np.zeros(0))]
    ev = Evidence("f", runs=[Run(run, seen=bad) for run in gradref.runs(spec)])
    with pytest.raises(Malformed, match="shape is not one"):
        judge(ev, spec, None)
    with pytest.raises(Malformed, match="runs"):
        judge(Evidence("f", runs=[Run("eval", seen=bad)]), spec, None)
