"""The hand-written figures: deterministic, escaped, labels apart, colours and ticks as intended."""

from __future__ import annotations

import numpy as np
import pytest

from tracer.present.figures import bars, heat, marks
from tracer.present.figures.place import Room, crosses, touches


def test_ticks_cover_the_range_with_round_steps() -> None:
    for lo, hi in ((0.0, 0.2379), (-0.31, 0.66), (0.0, 1.0), (-2.5, 0.0), (0.1, 1849.0)):
        t = marks.ticks(lo, hi, 5)
        assert t[0] <= lo and t[-1] >= hi and len(t) <= 8
        steps = np.diff(t)
        assert np.allclose(steps, steps[0])
        mantissa = steps[0] / 10 ** np.floor(np.log10(steps[0]))
        assert round(mantissa, 6) in (1.0, 2.0, 5.0)
    assert marks.tick_text(-0.2, 0.1) == "−0.2" and marks.tick_text(0.0, 0.1) == "0"


def test_text_width_counts_cjk_as_one_em() -> None:
    assert marks.width("注意力", 12) == 36
    assert marks.width("0.9544", 12) > marks.width("0.95", 12)


def test_blues_matches_matplotlib() -> None:
    matplotlib = pytest.importorskip("matplotlib")
    cmap = matplotlib.colormaps["Blues"]
    for v in (0.0, 0.1, 0.37, 0.5, 0.93, 1.0):
        want = "#" + "".join(f"{round(c * 255):02x}" for c in cmap(v)[:3])
        got = marks.blues(v)
        assert max(abs(int(got[k : k + 2], 16) - int(want[k : k + 2], 16)) for k in (1, 3, 5)) <= 1, v


def test_heatmap_is_deterministic_escaped_and_linked() -> None:
    m = np.array([[1.0, -np.inf], [0.25, 0.5]])
    cells = [["1.0000", "-inf"], ["0.2500", "0.5000"]]
    ticks = ["<b>", "a&b"]
    links = [["#pair-1-1", ""], ["#pair-2-1", "#pair-2-2"]]
    one = heat.heatmap("fig-x", m, cells, ticks, 1, links, "key j", "query i")
    assert one == heat.heatmap("fig-x", m, cells, ticks, 1, links, "key j", "query i")
    assert "&lt;b&gt;" in one and "a&amp;b" in one and "<b>" not in one
    assert one.count('<a href="#pair-') == 3 and heat.MASKED in one
    assert ">key j</text>" in one and ">query i</text>" in one


def test_bar_charts_fit_a_phone_column_and_name_every_series() -> None:
    tokens = ["Your", "journey", "starts"]
    series = [("divide", np.array([0.2, 0.5, 0.3])), ("naive", np.array([np.nan, 0.0, 1.0]))]
    svg = bars.grouped("fig-w", tokens, 2, series, "weight")
    assert 'width="340"' in svg and ">divide</text>" in svg and ">naive</text>" in svg and "nan" not in svg
    zeros = bars.grouped("fig-0", tokens, 1, [("divide", np.zeros(3))], "weight")  # all zero: still a range
    assert ">divide</text>" in zeros and "nan" not in zeros
    terms = np.array([[0.1, -0.2], [0.3, 0.4]])
    svg = bars.stacked("fig-c", terms, terms.sum(axis=0), ["a", "b"], ["z1", "z2"], "z(2)")
    assert ">z(2)</text>" in svg and ">z1</text>" in svg


def test_room_keeps_labels_apart_and_off_lines() -> None:
    points = ((150.0, 100.0), (152.0, 101.0), (154.0, 99.0), (350.0, 40.0))
    room = Room((0.0, 0.0, 400.0, 300.0))
    room.segs.append((0.0, 100.0, 400.0, 100.0))  # a line right through the first point
    placed = [room.place(p, (1.0, 0.0), 40.0, 15.0) for p in points]
    boxes = [box for box, _ in placed]
    assert boxes[3] == (355.0, 32.5, 395.0, 47.5)  # nothing in the way: beside the point, toward the arrow
    for n, (box, leader) in enumerate(placed):
        assert not any(crosses(s, box) for s in room.segs if s != leader), box  # no line, no other leader
        assert all(not touches(box, other) for other in boxes[n + 1 :])
    assert placed[2][1] is not None and placed[2][1][:2] == points[2]  # moved away: a leader back to its point
    again = Room((0.0, 0.0, 400.0, 300.0))
    again.segs.append((0.0, 100.0, 400.0, 100.0))
    assert [again.place(p, (1.0, 0.0), 40.0, 15.0) for p in points] == placed


def test_crosses_and_touches() -> None:
    box = (0.0, 0.0, 10.0, 10.0)
    assert crosses((-5, 5, 15, 5), box) and crosses((2, 2, 3, 3), box) and crosses((-1, -1, 11, 11), box)
    assert (
        not crosses((-5, 12, 15, 12), box) and not crosses((-5, 0, 15, 0), box) and not crosses((11, -5, 20, 20), box)
    )
    assert touches(box, (9.0, 9.0, 20.0, 20.0)) and not touches(box, (10.0, 0.0, 20.0, 10.0))


def test_symbols_in_figure_text_raise_and_lower_digits() -> None:
    assert "z" + marks.sup("(2)") == "z⁽²⁾" and "z" + marks.sub("13") == "z₁₃" and marks.sup("x") == "x"
