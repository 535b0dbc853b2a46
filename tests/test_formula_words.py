"""A formula's words are recorded as structure and said in each language; nothing reads English back.

A masked score's equation holds words (``unless ..., then -inf``), and so
does the heads' concatenation (``head outputs side by side: ...``).  The
pipelines record their parts (the hidden cases as ``unless``, the code as
``code``) beside the English ``text``; :func:`tracer.present.explain.said_text`
says them from the string tables.  The English it writes must be the
recorded text, byte for byte, in every lesson that records such a node.
"""

from __future__ import annotations

import pytest

from tracer import api
from tracer.core import serialize
from tracer.core.trace import Trace
from tracer.errors import TraceFormatError
from tracer.present.explain import equation, said_text
from tracer.present.strings import Strings

WORDED = ["causal", "window", "kvcache", "flash", "multihead", "gqa", "rope"]
"""Lessons with a masked score or a concatenation of heads."""


@pytest.fixture(scope="module", params=WORDED)
def trace(request: pytest.FixtureRequest) -> Trace:
    return api.trace_lesson(request.param)


def _steps(trace: Trace) -> list:
    out = []
    for step in trace:
        n = step.node
        if (n.op == "masked_fill" and n.attrs.get("unless")) or (n.op == "concat" and "code" in n.attrs):
            out.append(step)
    return out


def test_the_english_sentence_is_the_recorded_text(trace: Trace) -> None:
    steps = _steps(trace)
    assert steps, f"lesson {trace.meta.get('lesson')} records no worded node"
    en = Strings("en")
    for step in steps:
        assert said_text(step, en) == step.text


def test_the_chinese_sentence_has_no_english_word(trace: Trace) -> None:
    zh = Strings("zh")
    for step in _steps(trace):
        said = said_text(step, zh)
        assert "unless" not in said and " or " not in said and "side by side" not in said, said
        assert "当" in said or "并排" in said


def test_a_window_rule_joins_its_cases_in_the_reader_language() -> None:
    t = api.trace_lesson("window")
    hidden = next(s for s in _steps(t) if len(s.node.attrs["unless"]) == 2 and float(s.value) == float("-inf"))
    assert " or " in said_text(hidden, Strings("en")) and " 或 " in said_text(hidden, Strings("zh"))
    assert "（当 " in equation(t, hidden, s=Strings("zh"))


@pytest.mark.parametrize("bad", ["<j> > <i>", ["x" * 201], [1], ["a"] * 9])
def test_a_trace_file_with_a_malformed_rule_is_refused(bad: object) -> None:
    """A trace file is untrusted: ``unless`` must be a short list of short texts."""
    doc = serialize.to_dict(api.trace_lesson("causal"))
    node = next(n for n in doc["nodes"] if "unless" in n["attrs"])
    node["attrs"]["unless"] = bad
    doc["digest"] = serialize.digest({k: v for k, v in doc.items() if k != "digest"})
    with pytest.raises(TraceFormatError, match="unless"):
        serialize.from_dict(doc)
