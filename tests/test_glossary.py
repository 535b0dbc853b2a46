"""One term per concept: the glossary of each language, and no wrong variant on its pages or in its texts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.pagetext import visible
from tests.test_report_words import CHECKED, page
from tracer.present import strings
from tracer.present.strings import LANGS, templates_dir

LESSONS = Path(__file__).resolve().parent.parent / "tracer" / "lessons"
"""The built-in lessons' folders, each with its narratives."""


def offences(lang: str, text: str) -> list[str]:
    """Every glossary variant to avoid that ``text`` holds."""
    found = []
    for concept, entry in strings.glossary(lang).items():
        found += [f"{concept}: {v}" for v in entry.get("avoid", []) if v in text]
        found += [f"{concept}: /{p}/" for p in entry.get("avoid_re", []) if re.search(p, text)]
    return found


@pytest.mark.parametrize("lang", LANGS)
def test_every_concept_has_one_term(lang: str) -> None:
    terms = strings.glossary(lang)
    assert {"score", "weight", "context", "dot", "token", "batch", "sample", "head"} <= set(terms)
    for concept, entry in terms.items():
        assert isinstance(entry["term"], str) and entry["term"], concept
        assert entry["term"] not in entry.get("avoid", []), concept


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("lesson", CHECKED)
def test_narratives_use_the_glossary(lesson: str, lang: str) -> None:
    text = (LESSONS / lesson / f"narrative.{lang}.toml").read_text(encoding="utf-8")
    assert offences(lang, text) == []


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("lesson", CHECKED)
def test_pages_use_the_glossary(lesson: str, lang: str) -> None:
    assert offences(lang, visible(page(lesson, lang))) == []


def test_the_glossary_check_catches_known_wrong_variants() -> None:
    wrong = "两份批次的得分，第 1 个批次（共 2 个），缩放后的分数"
    found = offences("zh", wrong)
    assert any("两份批次" in f for f in found) and any("得分" in f for f in found)
    assert any("个批次（共" in f for f in found) and any("(?<!注意力)分数" in f for f in found)
    assert offences("zh", "缩放后的注意力分数，批次中的第 1 个样本") == []
    assert offences("en", "Only batch entry 1 of 2 is shown") != []


@pytest.mark.parametrize("table", ["", "messages."])
@pytest.mark.parametrize("lang", LANGS)
def test_string_tables_use_the_glossary(lang: str, table: str) -> None:
    """The pages' string table and the check's message table (its verdicts, diagnoses and trouble lines)."""
    text = (templates_dir() / "locale" / f"{table}{lang}.toml").read_text(encoding="utf-8")
    assert offences(lang, text) == []
    if lang == "zh":
        assert not re.search(r"[\u4e00-\u9fff][:;,?!]", text), "a half-width colon or comma after Chinese text"


def test_the_glossary_rejects_the_variants_a_reader_found() -> None:
    """关注的查询 for the focus query, 分量 for a share, unnatural phrasings, and English "dropout" in Chinese prose."""
    wrongs = ("关注的查询", "每个向量所占的分量", "取 $e$ 的幂", "越受青睐")
    wrongs += ("两种结果一致的遮住未来的方法", "训练模式下的 dropout")
    for wrong in wrongs:
        assert offences("zh", wrong), wrong
    rights = ("焦点查询", "第 1 个分量", "求指数（以 $e$ 为底）", "随机失活（`nn.Dropout`）", 'show = ["dropout.keep"]')
    for right in rights:
        assert offences("zh", right) == [], right


@pytest.mark.parametrize("lesson", CHECKED)
def test_notebooks_use_the_glossary(lesson: str) -> None:
    """The zh notebook's prose cells (its code cells are Python: ``nn.Dropout`` stays) hold no variant."""
    import tracer
    from tracer.present.notebook import cells

    prose = [c["source"] for c in cells(tracer.trace_lesson(lesson), "zh") if c["cell_type"] == "markdown"]
    text = "\n".join(p if isinstance(p, str) else "".join(p) for p in prose)
    assert "焦点查询" in text or lesson != "simple"
    assert offences("zh", text) == []


@pytest.mark.parametrize("lesson", CHECKED)
def test_explain_speaks_the_glossary(lesson: str) -> None:
    """``explain --lang zh`` of the first entry of every node, its notes included, holds no variant in its words."""
    import tracer
    from tracer.present.explain import explain

    t = tracer.trace_lesson(lesson)
    ids: dict[str, str] = {}
    for step in t.steps():  # the first entry of every node
        ids.setdefault(step.id.split("[")[0], step.id)
    text = "\n".join(explain(t, i, lang="zh") for i in ids.values())
    words = re.sub(r"^\S+ = |运算：\S+|阶段：\S+", "", text, flags=re.M)  # step ids, op and stage names are ids
    assert offences("zh", words) == []


def test_the_glossary_holds_the_textbook_terms_a_review_asked_for() -> None:
    """The review's calques and doubled phrases are caught; the textbook wording (as d2l-zh writes it) is not."""
    terms = strings.glossary("zh")
    assert terms["running_max"]["term"] == "当前最大值" and "运行最大值" in terms["running_max"]["avoid"]
    wrong = (
        "运行最大值；它们所驱动的注意力；“输入”一节中上面的表格没有列出的常数和检查；"
        "查询 2（“journey”）的焦点查询的上下文向量"
    )
    found = {f.split(":")[0] for f in offences("zh", wrong)}
    assert {"running_max", "feeds", "leftover", "focus"} <= found
    right = (
        "当前最大值；在此基础上算出的注意力；“输入”中用到、但上面各表没有列出的常数与检查结果；"
        "查询 2（“journey”）的上下文向量"
    )
    assert offences("zh", right) == []
