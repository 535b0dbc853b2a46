"""The words a student reads on every lesson page: written for them, in the page's language.

Each page is read as a reader sees it (:mod:`tests.pagetext`: maths, code,
figures and tokens stripped) and must hold no internal node name, no maths
in plain text and no command-line flag; a Chinese page's words are Chinese
apart from an allow-list.  Wrong statements that once stood on the pages are
pinned here so they stay fixed.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

import tracer
from tests import written
from tests.pagetext import NODE_NAMES, PLAIN_MATHS, visible, words
from tracer.present import report
from tracer.present.strings import LANGS

CHECKED = ("simple", "trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache")
"""The lesson pages whose words are checked (every lesson, once its narrative is written for readers)."""
LESSON_IDS = {"simple", "trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache"}
LATIN_OK = {"softmax", "float32", "float64", "attn", "trace", "inf", "nan", *LESSON_IDS}
"""Latin words a Chinese page may show: the library's name, dtypes, inf/nan, softmax, lesson ids."""
LATIN_OK |= {"FlashAttention", "GPU"}  # lesson flash: the kernel's name (as Chinese texts write it), the hardware
LATIN_OK |= {"PyTorch"}  # the library's name on a folded code block's summary, as Chinese texts write it


@cache
def page(lesson: str, lang: str) -> str:
    """The HTML page of the lesson's default example."""
    return report.build(tracer.trace_lesson(lesson), lang, formats=("html",))["index.html"].decode()


@cache
def tokens(lesson: str) -> list[str]:
    """The lesson's tokens."""
    return tracer.trace_lesson(lesson).tokens


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("lesson", CHECKED)
def test_no_node_names_or_plain_maths(lesson: str, lang: str) -> None:
    text = words(page(lesson, lang), tokens(lesson))
    for pattern in NODE_NAMES:
        assert not pattern.search(text), f"{lesson}.{lang}: {pattern.search(text)}"
    found = PLAIN_MATHS.search(text)
    assert found is None, f"{lesson}.{lang}: plain-text maths {text[max(0, found.start() - 30) : found.end() + 10]!r}"
    assert not re.search(r"(?<![\w-])--[a-z]", text), "a command-line flag in the prose"
    assert "%(" not in page(lesson, lang), "a placeholder left unfilled"
    assert "<mtext>\\" not in page(lesson, lang), "LaTeX that did not become MathML"


@pytest.mark.parametrize("lesson", CHECKED)
def test_chinese_pages_are_chinese(lesson: str) -> None:
    text = words(page(lesson, "zh"), tokens(lesson))
    latin = set(re.findall(r"[A-Za-z][A-Za-z0-9]+", text))
    assert latin <= LATIN_OK, f"{lesson}.zh shows Latin words {sorted(latin - LATIN_OK)}"
    assert not re.search(r"[\u4e00-\u9fff][:;,?!]", text), "a half-width colon or comma after Chinese text"


@pytest.mark.parametrize("lesson", CHECKED)
def test_chinese_markdown_punctuation_is_full_width(lesson: str) -> None:
    """The Markdown page too (its summary list once read ``词元: 6``): prose outside code and maths."""
    md = report.build(tracer.trace_lesson(lesson), "zh", formats=("md",))["index.md"].decode()
    prose = re.sub(r"```.*?```|\$\$.*?\$\$|\$[^$\n]*\$", "", md, flags=re.S)
    found = re.search(r".{0,12}[\u4e00-\u9fff][:;,?!]", prose)
    assert found is None, f"{lesson}.zh: a half-width colon or comma after Chinese text: {found and found[0]!r}"


def test_the_check_on_words_catches_what_it_should() -> None:
    html = (
        "<p>stable.exp[i,j] = exp(stable.shift[i,j]) and sqrt_dk, max |a − b|, ω_2j, "
        "<code>torch.softmax</code> <math><mi>α</mi></math> journey</p>"
    )
    text = words(html, ["journey"])
    assert "torch" not in text and "journey" not in text and "α" not in text
    hits = [p.pattern for p in NODE_NAMES if p.search(text)]
    assert len(hits) == len(NODE_NAMES)
    assert PLAIN_MATHS.search(text)


def test_trainable_states_what_its_page_shows() -> None:
    t = tracer.trace_lesson("trainable")
    en, zh = visible(page("trainable", "en")), visible(page("trainable", "zh"))
    assert "masked" not in en.lower() and "掩码" not in zh  # no mask in this lesson
    products = sum(1 for n in t.nodes if n.op == "matmul")
    assert products == 5
    assert "five matrix products" in en and "五次矩阵乘法" in zh
    assert "four matrix products" not in en


def test_matrix_form_is_not_listed_twice() -> None:
    html = page("trainable", "en")
    assert 'data-id="mat.' not in html  # the matrix form's tables repeat the loops' tables: only its checks show
    assert html.count('data-id="check.') == 7


def _equation(html: str, step: str) -> list[str]:
    """The numbers of the written-out equation of ``step``."""
    start = rf'class="equation[^>]*data-id="{re.escape(step)}">\s*<div class="eq[^"]*">'
    found = re.search(start + r"(.*?)\n</div>", html, re.S)  # the equation's lines, not its running sums
    assert found is not None, step
    return re.findall(r"<mn>([^<]+)</mn>", found.group(1))


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("lesson", ("causal", "multihead"))
def test_masked_weights_are_shown_as_what_they_are(lesson: str, lang: str) -> None:
    html = page(lesson, lang)
    assert "Blank cells" not in html and "空白格" not in html
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", html, re.S)
    heat = [c for c in captions if "0.0000" in c]
    assert heat, "the masked heatmap cells' value is named in a caption"
    t = tracer.trace_lesson(lesson)
    name = "causal.alpha" if lesson == "causal" else "wrap.causal.alpha"
    alpha = t.node(name).value.reshape(-1, len(t.tokens), len(t.tokens))[0]
    assert (alpha[0, 1:] == 0).all()  # what the caption claims: exactly zero above the diagonal
    svg = re.search(rf'<figure class="fig step[^"]*" id="fig-{name.replace(".", "-")}[^"]*">(.*?)</figure>', html, re.S)
    assert svg is not None and ">0.0000<" in svg.group(1)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("lesson", ("causal", "multihead"))
def test_the_batch_is_explained_once(lesson: str, lang: str) -> None:
    text = visible(page(lesson, lang))
    note = {"en": "Only the first sample of the batch", "zh": "批次中的第 1 个样本"}[lang]
    assert text.count(note) == 1
    assert "batch entry" not in text and "个批次（共" not in text and "两份批次" not in text


def test_dropout_is_written_out_where_it_does_something() -> None:
    t = tracer.trace_lesson("causal")
    keep, alpha = t.tensor("dropout.keep"), t.tensor("causal.alpha")
    assert not (alpha[1] * keep[1]).any()  # the book's draw drops every weight of the focus row, as the prose says
    row = alpha[3] * keep[3]
    assert (row > 0).sum() == 2 and ((alpha[3] > 0) & (keep[3] == 0)).sum() == 2  # row 4: two survive, two dropped
    html = page("causal", "en")
    for j in range(1, 7):
        want = [written.fixed(t[f"causal.alpha[4,{j}]"].value, 4), written.fixed(t[f"dropout.keep[4,{j}]"].value, 0)]
        want += [written.fixed(t["dropout.scale"].value, 4), written.fixed(t[f"dropout.alpha[4,{j}]"].value, 4)]
        assert _equation(html, f"dropout.alpha[4,{j}]")[-4:] == want  # α × B × 1/(1−p): the symbols' own numbers
    assert not re.search(r'class="equation[^>]*data-id="dropout\.alpha\[2,', html)


def test_multihead_output_is_built_term_by_term() -> None:
    t = tracer.trace_lesson("multihead")
    html = page("multihead", "en")
    for c in (1, 2):
        nums = _equation(html, f"split.proj[1,2,{c}]")
        want = []
        for k in (1, 2):
            want += [
                written.fixed(t[f"split.concat[1,2,{k}]"].value, 4),
                written.fixed(t[f"split.W_out[{k},{c}]"].value, 4),
            ]
        want += [written.fixed(t[f"split.proj[1,2,{c}].p[{k}]"].value, 4) for k in (1, 2)]
        want.append(written.fixed(t[f"split.proj[1,2,{c}]"].value, 4))
        assert [n.lstrip("(").rstrip(")") for n in nums if "." in n] == [w.lstrip("-") for w in want]
    assert written.fixed(t["split.proj[1,2,1]"].value, 4) == "0.1010"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("lesson", CHECKED)
def test_each_caption_is_said_once(lesson: str, lang: str) -> None:
    captions = [visible(c) for c in re.findall(r"<figcaption>(.*?)</figcaption>", page(lesson, lang), re.S)]
    repeated = {c for c in captions if captions.count(c) > 1 and c.strip()}
    assert not repeated, f"{lesson}.{lang}: captions repeated {sorted(repeated)[:3]}"


def _head(html: str, anchor: str) -> str:
    """The first header cell of the table ``anchor``."""
    found = re.search(rf'id="{anchor}".*?<th scope="col"[^>]*>(.*?)</th>', html, re.S)
    assert found is not None, anchor
    return found.group(1)


@pytest.mark.parametrize("lang", LANGS)
def test_tutorial_states_what_its_page_shows(lang: str) -> None:
    html = page("simple", lang)
    text = visible(html)
    for anchor in ("alpha-table", "z-table"):  # rows are queries
        assert "<mi>i</mi>" in _head(html, anchor)
    if lang == "en":
        assert "Three matrix products" not in text and "Two matrix products and a row-wise softmax" in text
        assert "in short, is agreement" not in text and "lengths" in text
    else:
        assert "三次矩阵乘法" not in text and "两次矩阵乘法加上逐行的 softmax" in text
        assert "长度的乘积" in text
    t = tracer.trace_self_attention()
    omega = t.tensor("omega")[1]
    assert omega.argmax() == 1 and abs(omega[1] - float((t.tensor("x")[1] ** 2).sum())) < 1e-6  # ω22 = |x(2)|²
