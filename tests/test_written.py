"""The report tests' own number writer (``tests/written.py``) against literal expectations.

It must agree with what the book prints and with the rules ``fmt`` documents,
without sharing its code: the report tests trust it to catch a bug in ``fmt``.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests import written


@pytest.mark.parametrize(
    ("value", "decimals", "want"),
    [
        (0.9544, 4, "0.9544"),
        (1.0, 4, "1.0000"),
        (-0.0, 4, "0.0000"),  # negative zero reads as zero
        (-1e-7, 4, "-0.0000"),  # a tiny negative value keeps its sign
        (0.125, 2, "0.12"),  # an exact binary half rounds to even
        (0.375, 2, "0.38"),
        (2.5, 0, "2"),
        (0.00005, 4, "0.0001"),  # stored a hair above the half
        (0.15, 1, "0.1"),  # stored a hair below the half
        (2.0**100, 0, "1267650600228229401496703205376"),  # 31 digits: wider than Decimal's default 28
        (float("inf"), 4, "inf"),
        (float("-inf"), 4, "-inf"),
        (float("nan"), 4, "nan"),
        (np.float32(0.43), 4, "0.4300"),
    ],
)
def test_fixed(value: float, decimals: int, want: str) -> None:
    assert written.fixed(value, decimals) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (999999999.99994, "999999999.9999"),  # below 1e9: decimals
        (999999999.99995, "1000000000.0000"),  # rounds up to 1e9 but was below it: still decimals
        (1e9, "1.0000e+09"),
        (4.25012345e36, "4.2501e+36"),
        (-2.5e12, "-2.5000e+12"),
        (9.99999e9, "1.0000e+10"),  # the mantissa rounds up into the next power
        (float("inf"), "inf"),
    ],
)
def test_cell(value: float, want: str) -> None:
    assert written.cell(value, 4) == want


@pytest.mark.parametrize(
    ("values", "want"),
    [
        (np.array([0.43, 0.80, 0.10], dtype=np.float32), 2),  # the tutorial's inputs
        (np.array([0.43, 0.80, 0.10]), 2),
        (np.array([1.0, 0.0], dtype=np.float32), 0),
        (np.array([0.5, np.nan], dtype=np.float32), 1),
        (np.array([0.29611194], dtype=np.float32), 4),  # a random weight: capped
    ],
)
def test_given_places(values: np.ndarray, want: int) -> None:
    assert written.given_places(values) == want
