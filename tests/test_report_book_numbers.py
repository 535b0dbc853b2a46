"""Every number the book prints for the later lessons appears on the committed pages, in the row it belongs to.

The book's printed values (chapter 3: self-attention with trainable weights,
causal attention with its mask and dropout, the compact causal module on a
batch, the multi-head wrapper and the efficient multi-head module) are typed
in here from the book, not computed, and looked up in the Markdown tables of
``reports/`` in both languages: a row of a matrix must be one table row, its
numbers in order.  The tutorial's own numbers are checked by
``test_report_numbers``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BOOK: dict[str, dict[str, list[list[str]]]] = {
    "trainable": {
        "query 2 (x(2) W_q)": [["0.4306", "1.4551"]],
        "key 2": [["0.4433", "1.1419"]],
        "scores of query 2": [["1.2705", "1.8524", "1.8111", "1.0795", "0.5577", "1.5440"]],
        "weights of query 2": [["0.1500", "0.2264", "0.2199", "0.1311", "0.0906", "0.1820"]],
        "context vector 2": [["0.3061", "0.8210"]],
    },
    "causal": {
        "weights before masking": [
            ["0.1921", "0.1646", "0.1652", "0.1550", "0.1721", "0.1510"],
            ["0.2041", "0.1659", "0.1662", "0.1496", "0.1665", "0.1477"],
            ["0.2036", "0.1659", "0.1662", "0.1498", "0.1664", "0.1480"],
            ["0.1869", "0.1667", "0.1668", "0.1571", "0.1661", "0.1564"],
            ["0.1830", "0.1669", "0.1670", "0.1588", "0.1658", "0.1585"],
            ["0.1935", "0.1663", "0.1666", "0.1542", "0.1666", "0.1529"],
        ],
        "masked and renormalized weights": [
            ["1.0000", "0.0000", "0.0000", "0.0000", "0.0000", "0.0000"],
            ["0.5517", "0.4483", "0.0000", "0.0000", "0.0000", "0.0000"],
            ["0.3800", "0.3097", "0.3103", "0.0000", "0.0000", "0.0000"],
            ["0.2758", "0.2460", "0.2462", "0.2319", "0.0000", "0.0000"],
            ["0.2175", "0.1983", "0.1984", "0.1888", "0.1971", "0.0000"],
            ["0.1935", "0.1663", "0.1666", "0.1542", "0.1666", "0.1529"],
        ],
        "weights after dropout (seed 123)": [
            ["2.0000", "0.0000", "0.0000", "0.0000", "0.0000", "0.0000"],
            ["0.0000", "0.0000", "0.0000", "0.0000", "0.0000", "0.0000"],
            ["0.7599", "0.6194", "0.6206", "0.0000", "0.0000", "0.0000"],
            ["0.0000", "0.4921", "0.4925", "0.0000", "0.0000", "0.0000"],
            ["0.0000", "0.3966", "0.0000", "0.3775", "0.0000", "0.0000"],
            ["0.0000", "0.3327", "0.3331", "0.3084", "0.3331", "0.0000"],
        ],
        "CausalAttention's context vectors": [
            ["-0.4519", "0.2216"],
            ["-0.5874", "0.0058"],
            ["-0.6300", "-0.0632"],
            ["-0.5675", "-0.0843"],
            ["-0.5526", "-0.0981"],
            ["-0.5299", "-0.1081"],
        ],
    },
    "multihead": {
        "MultiHeadAttentionWrapper's output": [
            ["-0.4519", "0.2216", "0.4772", "0.1063"],
            ["-0.5874", "0.0058", "0.5891", "0.3257"],
            ["-0.6300", "-0.0632", "0.6202", "0.3860"],
            ["-0.5675", "-0.0843", "0.5478", "0.3589"],
            ["-0.5526", "-0.0981", "0.5321", "0.3428"],
            ["-0.5299", "-0.1081", "0.5077", "0.3493"],
        ],
        "MultiHeadAttention's output": [
            ["0.3190", "0.4858"],
            ["0.2943", "0.3897"],
            ["0.2856", "0.3593"],
            ["0.2693", "0.3873"],
            ["0.2639", "0.3928"],
            ["0.2575", "0.4028"],
        ],
    },
}


def _rows(lesson: str, lang: str) -> list[list[str]]:
    """The decimal numbers of every Markdown table row on the page, in order (index columns left out)."""
    md = (ROOT / "reports" / lesson / lang / "index.md").read_text(encoding="utf-8")
    return [re.findall(r"-?\d+\.\d+", ln.replace("**", "")) for ln in md.splitlines() if ln.startswith("|")]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson", sorted(BOOK))
def test_every_number_the_book_prints_is_in_its_row(lesson: str, lang: str) -> None:
    rows = _rows(lesson, lang)
    for what, matrix in BOOK[lesson].items():
        for n, want in enumerate(matrix):
            assert want in rows, f"{lesson}/{lang}: {what}, row {n + 1} {want} is not a row of any table"
