"""Number formatting (``tracer.core.fmt``) against literal expectations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tracer.core import fmt


@pytest.mark.parametrize(
    ("value", "decimals", "want"),
    [
        (0.9544, 4, "0.9544"),
        (0.43, 2, "0.43"),
        (1.0, 4, "1.0000"),
        (-1.5, 1, "-1.5"),
        (0.0, 4, "0.0000"),
        (-0.0, 4, "0.0000"),  # negative zero reads as zero
        (-0.0, 0, "0"),
        (-1e-7, 4, "-0.0000"),  # a tiny negative value keeps its sign
        (0.125, 2, "0.12"),  # an exact binary half rounds to even
        (0.375, 2, "0.38"),
        (2.5, 0, "2"),
        (3.5, 0, "4"),
        (0.00005, 4, "0.0001"),  # 0.00005 is stored a hair above the half
        (0.15, 1, "0.1"),  # 0.15 is stored a hair below the half
        (12345.678, 2, "12345.68"),
        (float("inf"), 4, "inf"),
        (float("-inf"), 4, "-inf"),
        (float("nan"), 4, "nan"),
        (np.float32(0.43), 4, "0.4300"),
    ],
)
def test_num(value: float, decimals: int, want: str) -> None:
    assert fmt.num(value, decimals) == want


def test_num_default_is_the_tutorials_four_decimals() -> None:
    assert fmt.DECIMALS == 4
    assert fmt.num(0.95442) == "0.9544"


@pytest.mark.parametrize(
    ("values", "want"),
    [
        ([0.43, 0.80, 0.10], 2),  # the tutorial's inputs
        (np.array([0.43, 0.80, 0.10], dtype=np.float32), 2),  # float32's own rounding is allowed
        ([0.5, 0.25], 2),
        ([0.5], 1),
        ([1.0, 2.0, -3.0], 0),
        ([0.001], 3),
        ([0.4301], 4),
        ([0.43, 0.4301], 4),  # one value with more digits decides
        ([0.12345], 4),  # capped at the given decimals
        ([0.5, float("inf"), float("nan")], 1),  # non-finite values do not count
        ([], 0),
        ([1234567.5], 0),  # the tolerance is relative (1e-6 of the value, about a float32 ulp)
        ([0.4300015], 4),  # 1.5e-6 from 0.43: more than a float32 rounding, so not "0.43"
        # float32 inputs are measured in float64: rounded in float32, 984.549 would pass for 984.55
        (np.array([984.549], dtype=np.float32), 3),
        (np.array([9993.91], dtype=np.float32), 2),
    ],
)
def test_places(values: object, want: int) -> None:
    assert fmt.places(values) == want


def test_places_respects_the_cap() -> None:
    assert fmt.places([0.125], decimals=2) == 2
    assert fmt.places([0.125], decimals=6) == 3


@pytest.mark.parametrize(
    ("value", "want"),
    [(0.0, "0"), (-0.0, "0"), (1.49e-8, "1.49e-08"), (-2.98e-8, "-2.98e-08"), (float("inf"), "inf")],
)
def test_sci(value: float, want: str) -> None:
    assert fmt.sci(value) == want


def test_shown_switches_to_scientific_at_big() -> None:
    assert fmt.shown(999_999_999.0, 2) == "999999999.00"
    assert fmt.shown(4.2501e36) == "4.2501e+36"
    assert fmt.shown(-1e9, 1) == "-1.0e+09"
    assert fmt.shown(float("inf")) == "inf"


def test_full_tells_float32_neighbours_apart() -> None:
    a = np.float32(0.9544)
    b = np.nextafter(a, np.float32(1))
    assert fmt.num(a) == fmt.num(b)
    assert fmt.full(a) != fmt.full(b)
    assert fmt.full(a) == "0.954400003"
    assert fmt.full(float("nan")) == "nan"
    assert fmt.full(np.float32(0.1)) == "0.100000001"  # nine significant digits, not ten


@pytest.mark.parametrize(
    ("value", "dtype", "want"),
    [
        (np.float32(0.43), "float32", "0.43"),
        (0.1, "float64", "0.1"),
        (1e-5, "float64", "1.0e-05"),
        (0.0, "float32", "0.0"),
        (float("inf"), "float32", "float('inf')"),
        (float("-inf"), "float32", "-float('inf')"),
        (float("nan"), "float64", "float('nan')"),
        (1e-4, "float64", "0.0001"),  # from 1e-4 on: positional
        (1e16, "float64", "1.0e+16"),  # from 1e16 on: scientific
    ],
)
def test_literal_reads_back(value: float, dtype: str, want: str) -> None:
    text = fmt.literal(value, dtype)
    assert text == want
    back = eval(text)  # the point of the function: the text is Python source
    if math.isnan(value):
        assert math.isnan(back)
    else:
        typed = np.float32 if dtype == "float32" else np.float64
        assert typed(back) == typed(value)


def test_literal_defaults_to_float32() -> None:
    assert fmt.literal(np.float32(0.43)) == "0.43"  # as float64 it would be 0.4300000071525574


def test_rounding_note() -> None:
    assert fmt.rounding_note([0.25, 0.75], 1.0) is False
    assert fmt.rounding_note([0.4, 0.4], 0.8) is False  # terms rounded to 4 decimals, not to whole numbers
    assert fmt.rounding_note([0.25, 0.75], 1.0, decimals=2) is False  # both sides at the same decimals
    assert fmt.rounding_note([0.33333, 0.33333, 0.33334], 1.0) is True  # 0.3333 × 3 shows 0.9999
    assert fmt.rounding_note([0.00004, 0.00004], 0.00008) is True  # shown terms 0 + 0, total 0.0001


def test_adds_up_accepts_a_float32_sum() -> None:
    """Terms summed one by one in float32 add up to their float32 total, rounding and all."""
    terms = np.random.default_rng(3).uniform(-1, 1, 50).astype(np.float32)
    total = np.float32(0)
    for t in terms:
        total = np.float32(total + t)
    assert float(total) != math.fsum(map(float, terms))  # the float32 sum really is rounded
    assert fmt.adds_up([float(t) for t in terms], float(total))
    assert fmt.adds_up([0.25, 0.75], 1.0)
    assert fmt.adds_up([], 0.0)


def test_adds_up_refuses_an_edited_total() -> None:
    assert not fmt.adds_up([0.25, 0.75], 1.001)
    assert not fmt.adds_up([0.25, 0.75], 0.999)
    assert not fmt.adds_up([], 1.0)


def test_adds_up_slack_is_four_roundings_per_term() -> None:
    """The slack is ``4 · n · eps · Σ|t|`` (plus ``tiny``): two terms of 1 allow 16 eps, not 18."""
    eps = 2.0**-23
    assert fmt.adds_up([1.0, 1.0], 2 + 15 * eps)
    assert fmt.adds_up([1.0, -1.0], 15 * eps)  # the slack counts |t|, not the sum
    assert not fmt.adds_up([1.0, 1.0], 2 + 18 * eps)
    assert fmt.adds_up([1.0, 1.0, 1.0], 3 + 32 * eps)  # three terms of 1 allow 36 eps
    assert not fmt.adds_up([1.0, 1.0, 1.0], 3 + 40 * eps)
    assert fmt.adds_up([1.0, 1.0], 2 + 1e-12, eps=2.0**-23)
    assert not fmt.adds_up([1.0, 1.0], 2 + 1e-12, eps=2.0**-52)  # float64 terms are held to float64's eps


def test_adds_up_allows_a_subnormal_difference() -> None:
    """Below the smallest normal number (``tiny``) a difference is rounding, whatever the terms."""
    assert fmt.adds_up([0.0], 2.0**-127)
    assert fmt.adds_up([0.0], 2.0**-126)  # the bound itself is inside
    assert not fmt.adds_up([0.0], 2.0**-125)
    assert not fmt.adds_up([0.0], 2.0**-127, tiny=0.0)
    assert fmt.adds_up([0.0], 2.0**-127, tiny=2.0**-126)


@pytest.mark.parametrize(
    ("terms", "total"),
    [([math.inf, 1.0], math.inf), ([1.0, 2.0], math.nan), ([math.nan], 0.0), ([1.0], -math.inf)],
)
def test_adds_up_leaves_nonfinite_sums_to_their_own_notes(terms: list[float], total: float) -> None:
    assert fmt.adds_up(terms, total)


def test_counted() -> None:
    assert [fmt.counted(n, "value") for n in (0, 1, 2, 1024)] == ["0 values", "1 value", "2 values", "1,024 values"]
    assert fmt.counted(1, "root cause") == "1 root cause" and fmt.counted(-1, "step") == "-1 steps"
