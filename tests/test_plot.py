"""tracer.plot and `attn-trace figures`: the report's figures as matplotlib Figures and standalone files."""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tracer
from tracer.cli import app
from tracer.core import fmt
from tracer.errors import InputError
from tracer.present.figures import marks

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.figure import Figure  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@cache
def lesson(name: str) -> tracer.Trace:
    return tracer.trace_lesson(name)


def test_heatmap_numbers_every_cell_on_the_report_s_colours() -> None:
    t = lesson("simple")
    fig = tracer.plot.heatmap(t, "alpha")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    alpha = np.asarray(t.tensor("alpha"), dtype=np.float64)
    labels = [x.get_text() for x in ax.texts]
    assert labels == [fmt.num(float(v)) for v in alpha.ravel()]
    image = ax.images[0].get_array()
    lo, hi = float(alpha.min()), float(alpha.max())
    want = marks.blues((alpha[1, 2] - lo) / (hi - lo))
    assert matplotlib.colors.to_hex(image[1, 2]) == want
    for text in ax.texts:  # the numbers are legible: AA on their cells
        i, j = round(text.get_position()[1]), round(text.get_position()[0])
        fill = marks.blues((alpha[i, j] - lo) / (hi - lo))
        assert marks.contrast(matplotlib.colors.to_hex(text.get_color()), fill) >= marks.AA
    assert [x.get_text() for x in ax.get_yticklabels()] == t.tokens
    assert matplotlib.colors.to_hex(ax.get_yticklabels()[1].get_color()) == "#c2410c"  # the focus query


def test_contributions_stack_to_the_context_vector() -> None:
    t = lesson("simple")
    fig = tracer.plot.contributions(t, "z[2]")
    ax = fig.axes[0]
    heights = np.zeros(3)
    for bar in ax.patches:
        heights[round(bar.get_x() + bar.get_width() / 2)] += bar.get_height()
    assert np.allclose(heights, np.asarray(t.tensor("z")[1], dtype=np.float64), atol=1e-6)
    legend = [x.get_text() for x in ax.get_legend().get_texts()]
    assert set(t.tokens) <= set(legend) and any("z⁽²⁾" in x for x in legend)


def test_a_head_of_a_lesson_and_its_errors() -> None:
    t = lesson("multihead")
    fig = tracer.plot.heatmap(t, "wrap.causal.alpha", head=2)
    assert fig.axes[0].get_title(loc="left") == "Head 2"
    with pytest.raises(InputError, match="2 heads: head 3"):
        tracer.plot.heatmap(t, "wrap.causal.alpha", head=3)
    with pytest.raises(InputError, match=r"not one query.s context vector|not a row"):
        tracer.plot.contributions(lesson("simple"), "alpha[2]")


def test_vectors_are_3d_for_three_components_and_2d_otherwise() -> None:
    assert tracer.plot.vectors(lesson("simple")).axes[0].name == "3d"
    four = tracer.trace_self_attention(np.arange(20, dtype=np.float32).reshape(5, 4) / 20, query=3)
    assert tracer.plot.vectors(four).axes[0].name == "rectilinear"


def _token_labels(fig: Figure, tokens: list[str]) -> list[object]:
    """The window boxes of the tokens' names, as the figure is saved (drawn by Agg).

    A name written with ``ax.text`` on 3-D axes reports its box at its 3-D
    position read as 2-D data, so such a box is moved to where its point is
    projected, which is where the name is drawn.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.transforms import Bbox
    from mpl_toolkits.mplot3d import proj3d

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax, renderer = fig.axes[0], canvas.get_renderer()
    texts = {t.get_text().strip(): t for t in ax.texts if t.get_text().strip()}  # not the 2-D arrows
    assert sorted(texts) == sorted(tokens)  # one name per token, none left behind by a tried position
    boxes = []
    for tok in tokens:
        text, box = texts[tok], texts[tok].get_window_extent(renderer)
        if hasattr(text, "get_position_3d"):
            x, y, _ = proj3d.proj_transform(*text.get_position_3d(), ax.get_proj())
            left, bottom = ax.transData.transform((x, y))
            box = Bbox.from_bounds(left, bottom - box.height / 2, box.width, box.height)
        boxes.append(box)
    return boxes


@pytest.mark.parametrize("dim", [3, 2])
def test_the_inputs_names_never_overlap(dim: int) -> None:
    """journey (0.55, 0.87, 0.66) and starts (0.57, 0.85, 0.64) point almost the same way: their names did overlap."""
    rows = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64], [0.56, 0.86, 0.65], [0.22, 0.58, 0.33]]
    t = tracer.trace_self_attention([r[:dim] for r in rows], tokens=["Your", "journey", "starts", "near", "with"])
    boxes = _token_labels(tracer.plot.vectors(t), t.tokens)
    clashes = [
        (a, b) for i, a in enumerate(t.tokens) for j, b in enumerate(t.tokens) if i < j and boxes[i].overlaps(boxes[j])
    ]
    assert clashes == []


@pytest.mark.parametrize(
    ("name", "folder"),
    [
        ("simple", "tutorial"), ("trainable", "trainable"), ("causal", "causal"), ("multihead", "multihead"),
        ("kvcache", "kvcache"), ("flash", "flash"),
    ],
)  # fmt: skip
def test_the_figures_are_the_report_s_by_name(name: str, folder: str) -> None:
    shown = sorted(p.stem for p in (ROOT / "reports" / folder / "en").glob("fig-*.svg"))
    assert sorted(tracer.plot.report_figures(lesson(name))) == shown


def test_reports_and_import_tracer_never_import_matplotlib() -> None:
    code = (
        "import sys, tracer; from tracer.present import report; report.build(tracer.trace_lesson('causal'), 'en');"
        "print('matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cli_writes_every_figure_once_and_refuses_to_overwrite(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "slides"
    done = runner.invoke(app, ["figures", "--lesson", "causal", "--format", "svg", "-o", str(out)])
    assert done.exit_code == 0, done.output
    names = sorted(p.name for p in out.iterdir())
    assert names == ["fig-alpha.svg", "fig-batch-z.svg", "fig-causal-alpha.svg", "fig-idea.svg"]
    first = (out / "fig-alpha.svg").read_bytes()
    again = runner.invoke(app, ["figures", "--lesson", "causal", "--format", "svg", "-o", str(out)])
    assert again.exit_code == 2 and "already exists" in again.output
    forced = runner.invoke(app, ["figures", "--lesson", "causal", "--format", "svg", "-o", str(out), "--force"])
    assert forced.exit_code == 0 and (out / "fig-alpha.svg").read_bytes() == first  # the same bytes every time
    pdf = runner.invoke(app, ["figures", "--format", "pdf", "--dpi", "72", "-o", str(tmp_path / "pdf")])
    assert pdf.exit_code == 0 and (tmp_path / "pdf" / "fig-omega.pdf").read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--format", "jpg"], "'--format'"),
        (["--dpi", "0"], "'--dpi'"),
        (["--lesson", "nope"], "nope"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    done = CliRunner().invoke(app, ["figures", *args, "-o", str(tmp_path / "x")])
    assert done.exit_code == 2 and says in done.output and "Traceback" not in done.output
    assert not (tmp_path / "x").exists()


def test_the_3d_axis_titles_are_inside_the_figure() -> None:
    """At full size the 3-D box pushed "component 3" past the figure's right edge, where it was cut off."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = tracer.plot.vectors(lesson("simple"))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax = fig.axes[0]
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        box = axis.label.get_window_extent(canvas.get_renderer())
        assert axis.label.get_text().startswith("component")
        assert box.x0 >= 0 and box.x1 <= fig.bbox.x1 and box.y0 >= 0 and box.y1 <= fig.bbox.y1, axis.label.get_text()


def test_a_cache_step_s_contributions_draw_its_one_new_query() -> None:
    """A cache step holds one query row: its bars are that row's, not the focus query's number (out of range)."""
    figures = tracer.plot.report_figures(lesson("kvcache"))
    drawn = figures["fig-step2-z"]()
    assert drawn.axes and drawn.axes[0].patches  # the bars of the step's one query


def _chinese_font_installed() -> bool:
    from matplotlib import font_manager

    from tracer.canvas import CJK

    return any(f.name in CJK for f in font_manager.fontManager.ttflist)


def test_api_figures_draw_chinese_labels_in_a_chinese_font_when_saved() -> None:
    """A figure of ``tracer.plot`` saved by the user's own ``savefig`` misses no glyph, as the command's do.

    The fallback is applied as the figure draws, so a Chinese title the user
    adds after the figure was made falls back too.
    """
    import io
    import warnings

    from tracer.canvas import CJK

    if not _chinese_font_installed():
        pytest.skip("no Chinese font installed")
    fig = tracer.plot.heatmap(lesson("simple"), "alpha", lang="zh")
    fig.axes[0].set_title("注意力权重")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(io.BytesIO(), format="png", dpi=40)
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    assert not missing, missing[0]
    labels = [fig.axes[0].title, fig.axes[0].xaxis.label, fig.axes[0].yaxis.label]
    assert all(set(t.get_fontfamily()) & set(CJK) for t in labels)


def test_api_figures_pickle_and_come_back_as_the_same_kind_of_figure() -> None:
    import pickle

    from tracer.canvas import Sheet

    fig = tracer.plot.normalizations(lesson("simple"))
    back = pickle.loads(pickle.dumps(fig))
    assert isinstance(back, Sheet) and isinstance(back, Figure)
    assert [t.get_text() for t in back.axes[0].texts] == [t.get_text() for t in fig.axes[0].texts]
