"""The inputs' vectors figure in hand-written SVG: the 3-D view, arrows ending at their points, no matplotlib."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from tracer.present.figures import vectors as vec
from tracer.present.figures.place import crosses, polygon, text_box, touches
from tracer.present.figures.space import Space

ROOT = Path(__file__).resolve().parent.parent
TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
X = np.array(
    [
        [0.43, 0.15, 0.89],
        [0.55, 0.87, 0.66],
        [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33],
        [0.77, 0.25, 0.10],
        [0.05, 0.80, 0.55],
    ]
)
NS = "{http://www.w3.org/2000/svg}"


def _points(svg: str) -> list[tuple[float, float]]:
    """Every coordinate pair drawn: line ends, polygon corners, circle centres."""
    root = ET.fromstring(svg)
    out = []
    for el in root.iter():
        a = el.attrib
        if el.tag == NS + "line":
            out += [(float(a["x1"]), float(a["y1"])), (float(a["x2"]), float(a["y2"]))]
        elif el.tag == NS + "polygon":
            out += [tuple(map(float, p.split(","))) for p in a["points"].split()]  # type: ignore[misc]
        elif el.tag == NS + "circle":
            out.append((float(a["cx"]), float(a["cy"])))
    return out


def test_the_3d_view_is_matplotlibs_default_one() -> None:
    """Component 1 runs right and a little down the page, component 2 right and up, component 3 straight up."""
    s = Space(X, vec.WIDE, vec.TALL, ["c1", "c2", "c3"])
    o = s.at((0.0, 0.0, 0.0))
    e1, e2, e3 = (s.at(tuple(0.5 if k == i else 0.0 for k in range(3))) for i in range(3))
    assert e1[0] > o[0] and e1[1] > o[1] and e1[0] - o[0] > 2 * (e1[1] - o[1])
    assert e2[0] > o[0] and e2[1] < o[1]
    assert abs(e3[0] - o[0]) < 1e-9 and e3[1] < o[1]
    assert s.at((0.5, 0.5, 0.5)) == pytest.approx(
        (e1[0] + e2[0] + e3[0] - 2 * o[0], e1[1] + e2[1] + e3[1] - 2 * o[1])
    )  # a linear map: the tip of a sum is the sum of the tips


@pytest.mark.parametrize("x", [X, -X, X * 1000, np.zeros((3, 3)), X[:1]])
def test_3d_everything_drawn_lies_inside_the_figure(x: np.ndarray) -> None:
    svg = vec.vectors("fig-inputs", x, TOKENS[: len(x)], 1, ["component 1", "component 2", "component 3"])
    pts = _points(svg)
    assert pts and all(0 <= px <= vec.WIDE and 0 <= py <= vec.TALL for px, py in pts), svg
    assert svg == vec.vectors("fig-inputs", x, TOKENS[: len(x)], 1, ["component 1", "component 2", "component 3"])


def test_3d_arrow_heads_end_at_the_points() -> None:
    svg = vec.vectors("fig-inputs", X, TOKENS, 2, ["c1", "c2", "c3"])
    s = Space(X, vec.WIDE, vec.TALL, ["c1", "c2", "c3"])
    heads = re.findall(r'<polygon points="([^" ]+) [^"]*" fill="([^"]+)"', svg)
    tips = {(round(float(a), 2), round(float(b), 2)) for a, b in (h.split(",") for h, _ in heads)}
    for row in X:
        px, py = s.at(tuple(row))
        assert (round(px, 2), round(py, 2)) in tips
    assert [c for _, c in heads].count(vec.FOCUS) == 1  # the query's arrow alone in its colour
    for t in TOKENS:
        assert f">{t}</text>" in svg


@pytest.mark.parametrize("d", [1, 2, 5])
def test_2d_arrows_end_at_the_points_and_axes_are_titled(d: int) -> None:
    x = np.random.default_rng(d).normal(size=(6, d))
    svg = vec.vectors("fig-inputs", x, TOKENS, 3, ["component 1", "component 2"])
    centres = re.findall(r'<circle cx="([^"]+)" cy="([^"]+)"', svg)
    heads = [h.split()[0] for h in re.findall(r'<polygon points="([^"]+)"', svg)]
    assert len(centres) == 6 and sorted(heads) == sorted(f"{a},{b}" for a, b in centres)
    assert ">component 1</text>" in svg and (">component 2</text>" in svg) == (d > 1)
    assert all(0 <= px <= vec.WIDE and 0 <= py <= vec.TALL for px, py in _points(svg))


def test_many_tokens_label_only_the_query_and_hostile_labels_are_escaped() -> None:
    many = [f"t{j}" for j in range(30)]
    svg = vec.vectors("fig-inputs", np.random.default_rng(0).random((30, 2)), many, 7, ["a", "b"])
    labels = [t for t in re.findall(r">([^<]+)</text>", svg) if t.startswith("t")]
    assert labels == ["t6"] and "<polygon" not in svg  # points only, no arrows
    evil = ["<script>", 'a"b&c', "x" * 40]
    svg = vec.vectors("fig-inputs", X[:3], evil, 1, ["<i>", "b", "c"])
    ET.fromstring(svg)  # still well-formed
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&lt;i&gt;" in svg
    assert "x" * 17 + "…" in svg and "x" * 18 not in svg  # long labels cut


def test_a_report_draws_its_figures_without_matplotlib(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from tracer.cli import main\n"
        f"sys.argv = ['attn-trace', 'report', '--format', 'md', '-o', {str(tmp_path / 'r')!r}]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'matplotlib', 'mpl_toolkits', 'PIL'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert (tmp_path / "r" / "fig-inputs.svg").read_text(encoding="utf-8").count("<polygon") >= 3 + 6


def _labels_and_lines(svg: str) -> tuple[list[tuple[str, tuple[float, float, float, float]]], list[tuple[float, ...]]]:
    """The token labels (unrotated, left-anchored texts) with their boxes, and every segment drawn outside the grid."""
    root = ET.fromstring(svg)
    grid = {id(el) for g in root.iter(NS + "g") if g.get("class") == "grid" for el in g.iter()}
    segs: list[tuple[float, ...]] = []
    labels = []
    for el in root.iter():
        a = el.attrib
        if id(el) in grid:
            continue
        if el.tag == NS + "line":
            segs.append(tuple(float(a[k]) for k in ("x1", "y1", "x2", "y2")))
        elif el.tag == NS + "polygon":
            segs += polygon([(float(p.split(",")[0]), float(p.split(",")[1])) for p in a["points"].split()])
        elif el.tag == NS + "text" and a["text-anchor"] == "start" and "transform" not in a:
            labels.append((el.text or "", text_box(float(a["x"]), float(a["y"]), el.text or "")))
    return labels, segs


@pytest.mark.parametrize("q", range(1, 7))
def test_3d_no_arrow_axis_or_leader_crosses_a_token_label(q: int) -> None:
    """The tutorial's vectors, each query in turn: every label clear of every line drawn and of every other label."""
    labels, segs = _labels_and_lines(vec.vectors("fig-inputs", X, TOKENS, q, ["component 1", "component 2", "c3"]))
    assert sorted(s for s, _ in labels) == sorted(TOKENS)
    for n, (s, (left, top, right, bottom)) in enumerate(labels):
        inner = (left + 0.5, top + 1.0, right - 0.5, bottom - 1.0)
        assert not [g for g in segs if crosses(g, inner)], f"{s!r} is crossed (query {q})"
        assert not [t for t, box in labels[n + 1 :] if touches(inner, box)], f"{s!r} touches another label"


def test_the_grid_is_marked_as_lying_behind() -> None:
    svg = vec.vectors("fig-inputs", X, TOKENS, 2, ["c1", "c2", "c3"])
    assert svg.count('<g class="grid">') == 1 and svg.index("<g class") < svg.index(">Your</text>")
