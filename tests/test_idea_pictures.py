"""The picture of each lesson's idea: on its page before the numbers, drawn from its own trace, in both forms."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest

import tracer
from tracer.canvas import drawn
from tracer.present.figures.ideas import WIDTH
from tracer.present.figures.scene import Box, Label, Line, Picture
from tracer.present.report import build
from tracer.present.strings import Strings
from tracer.present.views.idea import NAME, picture
from tracer.record import registry

from . import tinymodels as tm

ROOT = Path(__file__).resolve().parent.parent
BUILT_IN = ("simple", "trainable", "causal", "window", "gqa", "rope", "multihead", "flash", "kvcache", "model")
FOLDERS = ("tutorial", "trainable", "causal", "window", "gqa", "rope", "multihead", "flash", "kvcache", "model")


def drawing(name: str, lang: str = "en", **options: object) -> Picture:
    """The picture of lesson ``name`` (lesson model on the tests' tiny stand-in model, unless told another)."""
    found = picture(tracer.trace_lesson(name, **{**tm.stand_in(name), **options}), Strings(lang))
    assert found is not None, f"{name} draws no picture of its idea"
    return found


def texts(p: Picture) -> list[str]:
    return [m.text for m in p.scene.marks if isinstance(m, Label)]


def fills(p: Picture) -> list[str]:
    return [m.fill for m in p.scene.marks if isinstance(m, Box)]


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_committed_page_opens_with_its_picture_before_the_first_section(folder: str, lang: str) -> None:
    page = (ROOT / "reports" / folder / lang / "index.html").read_text(encoding="utf-8")
    at, first = page.find(f'<figure class="fig idea" id="{NAME}">'), page.find('<section class="part"')
    assert 0 < at < first, "the picture comes before the numbers"
    svg = page[at : page.index("</figure>", at)]
    assert 'role="img"' in svg and "<title" in svg and "<desc>" in svg
    width = float(re.search(r'<svg[^>]* width="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    assert width <= WIDTH  # its natural size fits a phone's column: labels keep 12 px
    said = re.search(r"<desc>([^<]*)</desc>", svg).group(1)  # type: ignore[union-attr]
    assert bool(re.search(r"[\u4e00-\u9fff]", said)) == (lang == "zh")  # described in the page's language
    md = (ROOT / "reports" / folder / lang / "index.md").read_text(encoding="utf-8")
    assert f"]({NAME}.svg)" in md.split("\n## ")[0]  # Markdown shows it above its first section too
    assert (ROOT / "reports" / folder / lang / f"{NAME}.svg").is_file()


def test_the_causal_triangle_follows_the_number_of_tokens() -> None:
    four = drawing("causal", inputs=np.eye(4, 3).tolist(), tokens=["a", "b", "c", "d"])
    six = drawing("causal")
    grey = "#e2e8f0"
    assert fills(four).count(grey) == 4 * 3 // 2 + 1  # the cells above the diagonal of a 4 x 4 grid, the legend's
    assert fills(six).count(grey) == 6 * 5 // 2 + 1
    assert "4 by 4" in four.alt and "6 by 6" in six.alt


def test_the_window_band_is_the_trace_s_mask() -> None:
    for w in (2, 3, 6):
        t = tracer.trace_lesson("window", window=w)
        drawn_ = picture(t, Strings("en"))
        assert drawn_ is not None
        hidden = int(np.asarray(t.tensor("mask.hide")).sum())
        masked_cells = fills(drawn_).count("#e2e8f0") - 1  # one grey swatch in the legend
        assert masked_cells == hidden
        assert f"$w = {w}$" in drawn_.caption


def test_the_weights_written_in_the_cells_are_the_trace_s() -> None:
    t = tracer.trace_lesson("causal")
    drawn_ = picture(t, Strings("en"))
    assert drawn_ is not None
    row = np.asarray(t.tensor("causal.alpha"))[1, :2]  # query 2 sees keys 1 and 2
    shown = texts(drawn_)
    assert all(f"{v:.2f}" in shown for v in row)


def test_the_groups_follow_the_heads_and_groups_asked_for() -> None:
    one = drawing("gqa", groups=1)
    two = drawing("gqa")
    heads = [x for x in texts(two) if x.startswith("head")]
    assert len(heads) == 4 and len([x for x in texts(two) if x.startswith("group")]) == 2
    assert len([x for x in texts(one) if x.startswith("group")]) == 1
    arrows = [m for m in one.scene.marks if isinstance(m, Line) and m.arrow]
    assert len(arrows) == 4 and len({(a.x2, a.y2) for a in arrows}) == 1  # every head reads the one group


def test_the_cache_grows_one_row_per_step() -> None:
    p = drawing("kvcache")
    t = tracer.trace_lesson("kvcache")
    sizes = [int(b) for _, b in t.meta["steps"]]
    assert [x for x in texts(p) if x.endswith("rows")] == [f"{n} rows" for n in sizes]
    new = [m for m in p.scene.marks if isinstance(m, Box) and m.fill == "#ffedd5"]
    assert len(new) == sizes[0] + len(sizes) - 1 + 1  # the prompt's rows, one per later step, and the legend


def test_flash_writes_the_running_max_and_sum_of_the_focus_query() -> None:
    t = tracer.trace_lesson("flash")
    p = picture(t, Strings("en"))
    assert p is not None
    q = t.query
    shown = texts(p)
    for v in [*np.asarray(t.tensor("flash.l"))[q - 1], *np.asarray(t.tensor("flash.m"))[q - 1]]:
        assert f"{v:.2f}".replace("-", "−") in shown


def test_the_rope_picture_turns_the_query_by_its_angle() -> None:
    t = tracer.trace_lesson("rope")
    p = picture(t, Strings("en"))
    assert p is not None
    phi = float(t.tensor("rope.angle")[t.query - 1, 0])
    assert any(x.endswith(f"{phi:.2f} rad") for x in texts(p))
    solid = [m for m in p.scene.marks if isinstance(m, Line) and m.arrow and not m.dash]
    centre = solid[0].x1, solid[0].y1
    qb = np.arctan2(-(solid[0].y2 - centre[1]), solid[0].x2 - centre[0])  # the query's pair after turning
    before = next(m for m in p.scene.marks if isinstance(m, Line) and m.arrow and m.dash)
    qa = np.arctan2(-(before.y2 - centre[1]), before.x2 - centre[0])
    assert np.isclose((qb - qa) % (2 * np.pi), phi % (2 * np.pi), atol=1e-6)


def test_the_model_picture_outlines_the_traced_head_and_writes_its_weights() -> None:
    """The head asked for is outlined over the group the trace says it reads; its last query's weights below."""
    for head in (0, 3):
        t = tracer.trace_lesson("model", **{**tm.stand_in("model"), "head": head})
        p = picture(t, Strings("en"))
        assert p is not None
        outlined = [m for m in p.scene.marks if isinstance(m, Box) and m.fill == "none"]
        assert len(outlined) == 1
        box = outlined[0]
        inside = [m.text for m in p.scene.marks if isinstance(m, Label) and box.x < m.x < box.x + box.w and m.y < 60]
        assert inside == [str(head)]
        arrows = [m for m in p.scene.marks if isinstance(m, Line) and m.arrow]
        read = next(a for a in arrows if box.x < a.x1 < box.x + box.w)
        groups = [m for m in p.scene.marks if isinstance(m, Label) and m.text.startswith("group ")]
        nearest = min(groups, key=lambda g: abs(g.x - read.x2))
        assert nearest.text == f"group {t.meta['group']}"
        weights = np.asarray(t.tensor("causal.alpha"))[t.query - 1]
        shown = texts(p)
        assert all(f"{w:.2f}" in shown for w in weights)
        assert f"head {head}, query" in " ".join(shown) and f"reads group {t.meta['group']}" in p.alt
    slide = tracer.plot.report_figures(t)[NAME]()  # attn-trace figures draws the same picture for slides
    assert [x.get_text() for x in slide.axes[0].texts] == texts(p)


@pytest.mark.parametrize("head", [99, -1, "5", None])
def test_a_trace_file_naming_a_head_the_model_lacks_is_one_line(head: object) -> None:
    from tracer.core.trace import Trace
    from tracer.errors import InputError

    t = tm.lesson_trace("model")
    with pytest.raises(InputError, match="not one of its 4 heads"):
        build(Trace(t.nodes, {**t.meta, "head": head}), "en", ("html", "md"))


def test_a_layer_of_many_heads_draws_the_traced_head_s_group_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """More heads than a phone's column holds side by side: the traced head's group is drawn, the alt counts all."""
    from tracer.lessons.model import idea

    monkeypatch.setattr(idea, "MOST_HEADS", 3)  # the tiny model's 4 heads are "many" here
    p = drawing("model", head=3)
    assert [x for x in texts(p) if x.isdigit()] == ["2", "3"]
    assert [x for x in texts(p) if x.startswith("group")] == ["group 1"]
    assert "4 query heads reading 2 shared key/value groups" in p.alt


@pytest.mark.parametrize("name", BUILT_IN)
def test_both_languages_draw_the_same_marks_in_their_own_words(name: str) -> None:
    en, zh = drawing(name, "en"), drawing(name, "zh")
    assert [type(m) for m in en.scene.marks] == [type(m) for m in zh.scene.marks]
    assert en.title != zh.title and re.search(r"[\u4e00-\u9fff]", zh.title)


@pytest.mark.parametrize("name", ["causal", "rope", "kvcache"])
def test_the_slide_is_the_same_drawing(name: str) -> None:
    p = drawing(name)
    fig = drawn(p.scene)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == texts(p)
    assert fig.get_size_inches()[0] == pytest.approx(p.scene.w / 96)
    assert tracer.plot.report_figures(tracer.trace_lesson(name))[NAME]().axes[0].texts  # attn-trace figures has it


def test_a_lesson_without_a_picture_gets_a_page_without_one() -> None:
    plain = tracer.trace_lesson("causal")
    plain.meta["lesson"] = "no-such-lesson"
    plain.meta["narrative"] = {"en": registry.get("causal").narrative("en")}
    assert registry.of(plain) is None and picture(plain, Strings("en")) is None
    files = build(plain, "en", ("html", "md"))
    assert b'class="fig idea"' not in files["index.html"] and f"{NAME}.svg" not in files


def test_chinese_labels_fall_back_to_a_font_that_has_them() -> None:
    from matplotlib import font_manager

    from tracer.canvas import CJK

    if not any(f.name in CJK for f in font_manager.fontManager.ttflist):
        pytest.skip("no Chinese font installed")
    fig = drawn(drawing("kvcache", "zh").scene)
    fig.savefig(io.BytesIO(), format="svg")  # the fallback is taken as the figure draws
    chinese = [t for t in fig.axes[0].texts if re.search(r"[\u4e00-\u9fff]", t.get_text())]
    assert chinese and all(set(t.get_fontfamily()) & set(CJK) for t in chinese)
    heat = tracer.plot.heatmap(tracer.trace_lesson("causal"), "alpha", lang="zh")
    from tracer.cli.figures import _render

    _render(heat, "svg", 72)  # the command line's figures get the fallback too, the heatmap's axis titles included
    assert set(heat.axes[0].xaxis.label.get_fontfamily()) & set(CJK)


def _box(m: Label) -> tuple[float, float, float, float]:
    from tracer.present.figures.marks import width

    w = width(m.text, m.size) * (1.1 if m.bold else 1.0)
    x0 = m.x - {"start": 0.0, "middle": w / 2, "end": w}[m.anchor]
    return x0 - 2, m.y - m.size * 0.8, x0 + w + 2, m.y + m.size * 0.2  # 2 px each side: words that touch run together


@pytest.mark.parametrize("name", BUILT_IN)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_two_labels_of_a_picture_overlap_and_all_stay_inside_it(name: str, lang: str) -> None:
    p = drawing(name, lang)
    boxes = [(m.text, _box(m)) for m in p.scene.marks if isinstance(m, Label) and m.text.strip()]
    for n, (a, ba) in enumerate(boxes):
        assert ba[0] >= -1 and ba[2] <= p.scene.w + 1 and ba[1] >= -1 and ba[3] <= p.scene.h + 1, f"{a!r} leaves it"
        for b, bb in boxes[n + 1 :]:
            assert not (ba[0] < bb[2] and bb[0] < ba[2] and ba[1] < bb[3] and bb[1] < ba[3]), f"{a!r} overlaps {b!r}"
