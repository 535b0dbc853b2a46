"""The catalogue's hypotheses for lesson ``rope``: queries and keys turned by the wrong rotation.

A correct rotation turns pair ``p`` of the token at position ``m = i − 1``
by ``m θ_p``, ``θ_p = base^(−2(p−1)/d)``, pairs as the checked convention
makes them (``half``: components ``p`` and ``p + d/2``, ``rotate_half``;
``interleaved``: ``2p − 1`` and ``2p``).  Each hypothesis rotates the
reference's own (unrotated) queries, keys or values another way, in
float64, and looks for the result among the student's tensors: the other
convention, cos and sin tables laid out for one convention used with the
other's pairing, the turn the wrong way (the sine's sign flipped), the
frequencies with ``−(p−1)/d`` for ``−2(p−1)/d``, positions starting
elsewhere than 0, and the values rotated too (or instead).
"""

from __future__ import annotations

import numpy as np

from tracer.compare.check.context import Context, Hit
from tracer.compare.check.resizeref import BASE, turn
from tracer.message import Message


def _tables(c: Context, d: int, start: int = 0, exponent: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of ``m θ_p`` for every token (rows) and pair (columns)."""
    base = float(c.trace.meta.get("rope", {}).get("base", BASE))
    theta = base ** (-exponent * np.arange(d // 2) / d)
    angle = (np.arange(c.tokens) + start)[:, None] * theta[None, :]
    return np.cos(angle), np.sin(angle)


def mixed(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, tables: str) -> np.ndarray:
    """``x·C + partner(x)·S`` with tables laid out for convention ``tables`` and the other's partners."""
    h = x.shape[1] // 2
    if tables == "interleaved":  # repeat_interleave'd tables (θ1, θ1, θ2, θ2) with rotate_half
        big_c, big_s = np.repeat(cos, 2, axis=1), np.repeat(sin, 2, axis=1)
        partner = np.concatenate((-x[:, h:], x[:, :h]), axis=1)
    else:  # cat'd tables (θ1, θ2, θ1, θ2) with neighbours turned: (-x2, x1, -x4, x3)
        big_c, big_s = np.concatenate((cos, cos), axis=1), np.concatenate((sin, sin), axis=1)
        partner = np.empty_like(x)
        partner[:, 0::2], partner[:, 1::2] = -x[:, 1::2], x[:, 0::2]
    out: np.ndarray = x * big_c + partner * big_s
    return out


def _style(c: Context) -> str:
    return c.spec.style or "half"


def _find(c: Context, rotate: object, detail: dict[str, str] | None = None) -> Hit | None:
    """A hit when the student holds the queries or the keys rotated by ``rotate`` (a function of q or k)."""
    assert callable(rotate)
    axes = c.ref("q_rot")[1]
    steps = (c.step("q_rot"), c.step("k_rot"))
    return c.first([rotate(c.ref("q")[0]), rotate(c.ref("k")[0])], axes, steps, detail)


def _applies(c: Context) -> bool:
    return c.spec.rotary


def other_style(c: Context) -> Hit | None:
    """The other convention's pairs: ``rotate_half`` where neighbours are meant, or neighbours for halves."""
    if not _applies(c) or c.spec.d_out < 4:  # one pair is paired alike by both
        return None
    style = _style(c)
    other = "interleaved" if style == "half" else "half"
    cos, sin = _tables(c, c.spec.d_out)
    return _find(c, lambda x: turn(x, cos, sin, other), {"used": other, "checked": style})


def pairs_mixed(c: Context) -> Hit | None:
    """cos/sin tables of one convention with the other's pairing (``repeat_interleave`` tables with ``rotate_half``)."""
    if not _applies(c) or c.spec.d_out < 4:
        return None
    cos, sin = _tables(c, c.spec.d_out)
    for tables in ("interleaved", "half"):
        hit = _find(c, lambda x, t=tables: mixed(x, cos, sin, t))
        if hit is not None:
            return hit
    return None


def wrong_direction(c: Context) -> Hit | None:
    """The sine's sign flipped: every pair turned by ``−m θ_p``."""
    if not _applies(c):
        return None
    cos, sin = _tables(c, c.spec.d_out)
    return _find(c, lambda x: turn(x, cos, -sin, _style(c)))


def theta_exponent(c: Context) -> Hit | None:
    """The frequencies ``base^(−(p−1)/d)``, the exponent without its factor 2 (``arange(d // 2) / d``)."""
    if not _applies(c) or c.spec.d_out < 4:  # with one pair θ_1 = 1 either way
        return None
    cos, sin = _tables(c, c.spec.d_out, exponent=1.0)
    return _find(c, lambda x: turn(x, cos, sin, _style(c)))


def positions_off(c: Context) -> Hit | None:
    """Positions starting at another index than 0 (``arange(1, T + 1)``), for the queries, the keys or both."""
    if not _applies(c):
        return None
    for start in (1, -1, *range(2, c.tokens + 1)):
        cos, sin = _tables(c, c.spec.d_out, start)
        hit = _find(c, lambda x, cs=cos, sn=sin: turn(x, cs, sn, _style(c)), {"start": str(start)})
        if hit is not None:
            return hit
    return None


def values_rotated(c: Context) -> Hit | None:
    """The values rotated as well as the queries and keys, or instead of them."""
    if not _applies(c):
        return None
    cos, sin = _tables(c, c.spec.d_out)
    v, axes = c.ref("v")
    hit = c.first([turn(v, cos, sin, _style(c))], axes, (c.step("v"), c.step("z")))
    if hit is None:
        return None
    q_rot, q_axes = c.ref("q_rot")
    too = c.holds(q_rot, q_axes) is not None
    how = Message("word.rope_values_too") if too else Message("word.rope_values_instead")
    return Hit(hit.seen, hit.steps, {"how": how})
