"""Every node's formula, plain text and inputs for one element, against expectations written by hand.

``tests/formulas/LESSON.tsv`` lists, for one representative element of each
node of each lesson (query 4, key 3, component 2, batch 2, head 1, so that
swapped axes show), the LaTeX and plain text it must read and the steps it
was computed from; the entry's stored symbol must be the LaTeX's left side.
These are the oracle for the formulas: snapshots and golden reports only say
that nothing changed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tracer
from tests.mutation import shared

TABLES = Path(__file__).parent / "formulas"
OPTIONS = {"multihead": {"d_out": 4}}  # head width 2, so a head split is visible in the ids


def _rows(lesson: str) -> list[tuple[str, str, str, tuple[str, ...]]]:
    rows = []
    for line in (TABLES / f"{lesson}.tsv").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        step, latex, text, inputs = line.split("\t")
        rows.append((step, latex, text, tuple(inputs.split())))
    return rows


class _Traces(dict[str, tracer.Trace]):
    """Each lesson's trace, recorded when a test first asks for it."""

    def __missing__(self, lesson: str) -> tracer.Trace:
        self[lesson] = tracer.trace_lesson(lesson, **OPTIONS.get(lesson, {}))
        return self[lesson]


@pytest.fixture(scope=shared("module"))
def traces() -> dict[str, tracer.Trace]:
    return _Traces()


CASES = [(lesson, *row) for lesson in ("simple", "trainable", "causal", "multihead") for row in _rows(lesson)]


@pytest.mark.parametrize(("lesson", "step", "latex", "text", "inputs"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_formula_text_and_inputs(
    traces: dict[str, tracer.Trace], lesson: str, step: str, latex: str, text: str, inputs: tuple[str, ...]
) -> None:
    got = traces[lesson][step]
    assert got.latex == latex
    assert got.text == text
    assert got.inputs == inputs
    # the stored symbol names the entry: the formula's left side, or all of it (a product, an exp); none for a matrix
    assert got.symbol == (latex.split(" = ")[0] if got.node.granularity == "element" else "")


@pytest.mark.parametrize("lesson", ["simple", "trainable", "causal", "multihead"])
def test_every_node_has_an_expectation(traces: dict[str, tracer.Trace], lesson: str) -> None:
    listed = [traces[lesson][step].node.name for step, *_ in _rows(lesson)]
    assert listed == [n.name for n in traces[lesson].nodes]


def test_the_running_sum_of_exps_names_the_row_not_the_key() -> None:
    """The a9b91f2 bug: the summand uses the summation index (j'; m_2 is the row's max), not the element's j."""
    t = tracer.trace_self_attention(query=2)
    assert t["stable.sum[2].s[3]"].latex == r"\sum_{j'=1}^{3} e^{\omega_{2j'} - m_{2}}"
    assert t["stable.sum[2].s[3]"].inputs == ("stable.sum[2].s[2]", "stable.exp[2,3]")


SUM_INDEX = re.compile(r"\\sum_\{([a-z]'?)=1\}")


@pytest.mark.parametrize("lesson", ["simple", "trainable", "causal", "multihead"])
def test_no_summation_index_is_also_a_symbol(traces: dict[str, tracer.Trace], lesson: str) -> None:
    """A running sum counting with m must not subtract a row maximum called m_4 (nor any other letter's twin)."""
    sums = 0
    for step, *_ in _rows(lesson):
        latex = traces[lesson][step].latex
        for found in SUM_INDEX.finditer(latex):
            sums += 1
            summand = latex[found.end() :]
            assert not re.search(rf"(?<![A-Za-z\\]){re.escape(found.group(1))}_\{{", summand), f"{step}: {latex}"
    assert sums > 0


@pytest.mark.parametrize("lesson", ["causal", "multihead"])
def test_element_conditions_read_numbers(traces: dict[str, tracer.Trace], lesson: str) -> None:
    """The -inf fill of element 4,3 reads "3 \\le 4", not the letters "j \\le i"."""
    conditions = []
    for step, *_ in _rows(lesson):
        latex = traces[lesson][step].latex
        if r"\begin{cases}" in latex:
            conditions += re.findall(r"& ([^&]*?)(?:\\\\|\\end\{cases\})", latex)
    assert conditions
    for condition in conditions:
        assert re.fullmatch(r"\d+ (\\le|>) \d+", condition.strip()), condition


def test_the_causal_weights_have_one_name(traces: dict[str, tracer.Trace]) -> None:
    """The causal lesson has weights before masking (alpha) and after (causal.alpha): each formula names them so."""
    t = traces["causal"]
    causal = r"\alpha^{\mathrm{causal}}_{43}"
    assert t["alpha[4,3]"].latex.startswith(r"\alpha_{43} = ")
    assert t["causal.alpha[4,3]"].latex.startswith(causal + " = ")
    assert t["dropout.kept[4,3]"].latex == causal + " B_{43}"
    assert t["dropout.alpha[4,3]"].latex.endswith(r"\frac{" + t["dropout.kept[4,3]"].latex + "}{1-p}")
    assert r"\alpha^{\mathrm{causal}} \rvert" in t["check.mask"].latex


@pytest.mark.parametrize("lesson", ["simple", "trainable", "causal", "multihead"])
def test_every_value_follows_from_its_recorded_op(traces: dict[str, tracer.Trace], lesson: str) -> None:
    """Each node recomputed from its operands with the op and attributes it records (a wrong op name fails).

    Nothing is left out: head splits and joins are copies, recomputed entry by
    entry, and the matrix forms (``mat.omega``, ``batch.mat.z``, library results)
    are held to their loop forms within their checks' bounds.
    """
    checked = traces[lesson].verify()
    assert checked.ok, checked.summary()
    assert checked.unchecked == ()  # an op name verify does not know (XXmaxXX) would be listed here


BOUNDED = {  # the checks of a library result (BLAS matmul, torch.softmax, the book's module) against its loop form
    "simple": {"check.torch", "check.omega", "check.alpha", "check.z"},
    "trainable": {"check.torch", "check.q", "check.k", "check.v", "check.omega", "check.alpha", "check.z"},
    "causal": {"check.batch.z"},
    "multihead": set(),
}


@pytest.mark.parametrize("lesson", ["simple", "trainable", "causal", "multihead"])
def test_every_library_result_is_checked_against_a_bound(traces: dict[str, tracer.Trace], lesson: str) -> None:
    """Its last bits are the machine's, so a check carries the bound the maths puts on it; two loop forms need none."""
    bounds = {n.name: n.attrs.get("bound") for n in traces[lesson].nodes if n.op == "maxabsdiff"}
    assert {name for name, b in bounds.items() if b is not None} == BOUNDED[lesson]
    assert all(0 < b < 1e-4 for b in bounds.values() if b is not None)  # a few float32 roundings of values near 1
