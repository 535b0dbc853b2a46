"""Heatmaps of matrices that are not square: cross-attention, a generation step, and both when large.

Queries are rows and keys columns, whatever their numbers: cross-attention
of 3 queries over 5 keys draws 3 x 5 cells with the 5 keys along the bottom;
a generation step (1 query over n cached keys) draws one row, labelled with
the newest token; a 40 x 100 matrix is averaged over blocks of rows and of
columns separately (20 x 25 blocks, not a square grid that drops or repeats
keys).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import tracer
from tracer.present import report
from tracer.present.strings import Strings
from tracer.present.views.common import HEAT_BLOCKS, Ctx, heatmap_svg


def _cells(svg: str) -> list[tuple[float, float, float, float]]:
    """The (x, y, width, height) of each cell of a heatmap (white-edged rectangles)."""
    found = re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"[^>]*stroke="#ffffff"', svg)
    return [(float(a), float(b), float(c), float(d)) for a, b, c, d in found]


def _grid(svg: str) -> tuple[int, int]:
    cells = _cells(svg)
    return len({y for _, y, _, _ in cells}), len({x for x, _, _, _ in cells})


def _ctx(rows: int, query: int = 2) -> Ctx:
    def run() -> torch.Tensor:
        return torch.rand(rows, 2) * 2

    t = tracer.trace_torch(run, tokens=[f"w{n}" for n in range(1, rows + 1)], query=query)
    return Ctx(t, Strings("en"), 4)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_cross_attention_three_queries_five_keys(lang: str) -> None:
    ctx = Ctx(_ctx(3).trace, Strings(lang), 4)  # the tokens label the queries; the keys are another sequence
    m = np.arange(15, dtype=np.float64).reshape(3, 5) / 10
    svg, small = heatmap_svg(ctx, "fig-x", m)
    assert not small and _grid(svg) == (3, 5)
    labels = re.findall(r'text-anchor="end"[^>]*>([^<]+)<', svg)
    assert sorted(labels) == sorted(["w1", "w2", "w3", "1", "2", "3", "4", "5"]), labels  # rows, then every key
    assert ctx.s("figures.key") in svg and ctx.s("figures.query") in svg
    for v in ("0.0000", "1.4000", "0.4000", "1.0000"):  # corners: (1,1), (3,5), (1,5), (3,1)
        assert f">{v}<" in svg
    assert svg.count('stroke="#c2410c"') == 1  # the focus row outlined


def test_a_generation_step_is_one_row_of_the_newest_token() -> None:
    ctx = _ctx(5, query=5)
    svg, small = heatmap_svg(ctx, "fig-g", np.array([[0.1, 0.2, 0.3, 0.25, 0.15]]))
    assert not small and _grid(svg) == (1, 5)
    labels = re.findall(r'text-anchor="end"[^>]*>([^<]+)<', svg)
    assert labels.count("w5") == 2  # the row (the newest token) and the last key
    assert svg.count('stroke="#c2410c"') == 1


@pytest.mark.parametrize(("rows", "cols", "grid"), [(40, 100, (20, 25)), (1, 100, (1, 25)), (3, 40, (3, 20))])
def test_a_large_matrix_is_averaged_over_blocks_of_rows_and_of_columns(
    rows: int, cols: int, grid: tuple[int, int]
) -> None:
    ctx = _ctx(cols, query=1)
    m = np.add.outer(np.arange(rows), np.arange(cols) * 1000).astype(np.float64)
    svg, small = heatmap_svg(ctx, "fig-big", m)
    assert small and _grid(svg) == grid
    assert max(grid) <= HEAT_BLOCKS
    cells = _cells(svg)
    width = max(x + w for x, _, w, _ in cells) - min(x for x, _, _, _ in cells)
    height = max(y + h for _, y, _, h in cells) - min(y for _, y, _, _ in cells)
    assert width / height == pytest.approx(grid[1] / grid[0])  # square blocks: the shape of the matrix
    hi = re.findall(r'text-anchor="end"[^>]*>([^<]+)<', svg)[-1]  # the colour scale's top: the last block's mean
    last = m[-(rows // grid[0]) :, -(cols // grid[1]) :].mean()
    assert float(hi) == pytest.approx(last, abs=0.5), (hi, last)


def test_a_captured_cross_attention_report_draws_every_key() -> None:
    def cross(x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:  # the tokens: the rows of x, the queries
        w = torch.softmax(x @ memory.transpose(1, 2) / 2.0, dim=-1)
        return w @ memory

    torch.manual_seed(0)
    t = tracer.trace_torch(cross, torch.rand(1, 3, 4), torch.rand(1, 5, 4))
    assert t.tokens == ["t1", "t2", "t3"]
    for lang in ("en", "zh"):
        files = report.build(t, lang)
        figs = [v.decode() for k, v in files.items() if k.startswith("fig-") and k.endswith(".svg")]
        assert figs, sorted(files)
        for svg in figs:
            assert _grid(svg) == (3, 5)
            labels = re.findall(r'text-anchor="end"[^>]*>([^<]+)<', svg)
            assert sorted(labels) == ["1", "2", "3", "4", "5", "t1", "t2", "t3"], labels


def test_cell_doors_are_written_only_for_a_heatmap_that_draws_its_cells() -> None:
    """A block heatmap (a T = 512 page's) asks for no step ids: they would be 262,144 strings for nothing."""
    asked: list[int] = []

    def doors(n: int) -> list[list[str]]:
        asked.append(n)
        return [[f"w[{i + 1},{j + 1}]" for j in range(n)] for i in range(n)]

    ctx = _ctx(40, query=1)
    svg, small = heatmap_svg(ctx, "fig-big", np.ones((40, 40)), doors=lambda: doors(40))
    assert small and asked == [] and "data-id" not in svg
    few = _ctx(3)
    svg, small = heatmap_svg(few, "fig-few", np.ones((3, 3)), doors=lambda: doors(3))
    assert not small and asked == [3] and 'data-id="w[3,3]"' in svg
