"""Hand-written SVG for the simple charts: measuring text, placing marks, colours, ticks.

The heatmaps and bar charts are drawn here without matplotlib: they are a
few rectangles and labels, and writing them ourselves makes them fast (no
font loading, no layout engine), byte-identical by construction (every
number goes through :func:`n`) and sized in CSS pixels, so that text keeps
a readable size on a phone.  One user unit is one CSS pixel at the
figure's natural width; the report's CSS only ever scales a figure down.

Text is measured with DejaVu Sans advance widths (the first font of
:data:`~tracer.present.figures.svg.FONT_STACK`) rounded up, and CJK glyphs
as one em, so that a label never runs into its neighbour whichever font of
the stack the browser picks.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from html import escape

from tracer.present.figures.svg import FONT_STACK

SIZE = 12.0
"""Font size of every label, in CSS pixels (at least 11 once a phone scales the figure)."""

INK = "#0f172a"
MUTED = "#475569"
RULE = "#94a3b8"

# DejaVu Sans advance widths in em, for the characters labels are made of
_NARROW = {c: 0.318 for c in ".,:;!|il'()[] "} | {"j": 0.278, "f": 0.352, "t": 0.392, "r": 0.411, "-": 0.361}
_WIDE = {c: 0.85 for c in "mwMW"} | {c: 0.75 for c in "ABCDGHKNOQRUVXY"}
_BLUES = (
    (0.968627, 0.984314, 1.0),
    (0.870588, 0.921569, 0.968627),
    (0.776471, 0.858824, 0.937255),
    (0.619608, 0.792157, 0.882353),
    (0.419608, 0.682353, 0.839216),
    (0.258824, 0.572549, 0.776471),
    (0.129412, 0.443137, 0.709804),
    (0.031373, 0.317647, 0.611765),
    (0.031373, 0.188235, 0.419608),
)
"""ColorBrewer's Blues, the nine stops matplotlib's ``Blues`` colormap interpolates."""


def n(v: float) -> str:
    """A coordinate as SVG text: two decimals at most, no trailing zeros, no ``-0``."""
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def width(text: str, size: float = SIZE) -> float:
    """The advance width of ``text`` at ``size`` px, rounded up to be safe."""
    em = 0.0
    for c in text:
        if unicodedata.east_asian_width(c) in "WF":
            em += 1.0
        elif c.isdigit():
            em += 0.636
        else:
            em += _NARROW.get(c, _WIDE.get(c, 0.62 if c.isupper() else 0.6))
    return math.ceil(em * size)


def text(
    x: float,
    y: float,
    s: str,
    anchor: str = "start",
    fill: str = INK,
    size: float = SIZE,
    rotate: float = 0.0,
    weight: str = "",
) -> str:
    """A ``<text>`` element; ``y`` is the baseline, ``rotate`` turns it about its anchor point."""
    extra = f' transform="rotate({n(rotate)} {n(x)} {n(y)})"' if rotate else ""
    bold = f' font-weight="{weight}"' if weight else ""
    return (
        f'<text x="{n(x)}" y="{n(y)}" text-anchor="{anchor}" font-size="{n(size)}" fill="{fill}"{bold}{extra}>'
        f"{escape(s)}</text>"
    )


def rect(x: float, y: float, w: float, h: float, fill: str, extra: str = "") -> str:
    """A filled rectangle."""
    return f'<rect x="{n(x)}" y="{n(y)}" width="{n(w)}" height="{n(h)}" fill="{fill}"{extra}/>'


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = RULE, w: float = 1.0) -> str:
    """A straight line."""
    return f'<line x1="{n(x1)}" y1="{n(y1)}" x2="{n(x2)}" y2="{n(y2)}" stroke="{stroke}" stroke-width="{n(w)}"/>'


PAPER = '<rect width="100%" height="100%" fill="#ffffff"/>'
"""Every figure's own white ground: its dark labels stay legible on a dark page (a browser's forced dark mode
darkens the page behind a transparent figure, but not the figure's drawing)."""


def svg(name: str, w: float, h: float, body: Sequence[str], label: str = "", role: str = "img") -> str:
    """The whole ``<svg>`` element, natural size ``w`` x ``h`` CSS px (``role`` ``group`` when it holds links)."""
    title = f"<title>{escape(label)}</title>" if label else ""
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{escape(name)}-svg" width="{n(w)}" height="{n(h)}" '
        f'viewBox="0 0 {n(w)} {n(h)}" font-family="{escape(FONT_STACK)}" role="{role}">'
    )
    return head + title + "\n" + PAPER + "\n" + "\n".join(body) + "\n</svg>\n"


def blues(v: float) -> str:
    """Colour of ``v`` in [0, 1] on the Blues scale, quantized to 256 levels as matplotlib does."""
    v = min(max(v, 0.0), 1.0)
    x = min(int(v * 256), 255) / 255 * (len(_BLUES) - 1)
    i = min(int(x), len(_BLUES) - 2)
    f = x - i
    rgb = [a + (b - a) * f for a, b in zip(_BLUES[i], _BLUES[i + 1], strict=True)]
    return "#" + "".join(f"{round(c * 255):02x}" for c in rgb)


def dark(v: float) -> bool:
    """True when a cell of colour ``blues(v)`` needs white text."""
    return v > 0.5


def luminance(colour: str) -> float:
    """The relative luminance of ``#rrggbb`` (WCAG 2: linearized sRGB, weighted 0.2126, 0.7152, 0.0722)."""
    channels = [int(colour[k : k + 2], 16) / 255 for k in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    """The WCAG contrast ratio of two colours, from 1 (the same) to 21 (black on white)."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


AA = 4.5
"""WCAG AA's least contrast for text of ordinary size."""


def ink_on(fill: str) -> str:
    """The text colour for a cell of colour ``fill``: white, else the page's ink, else black, whichever passes AA.

    White and the page's dark ink cannot both fail on the same colour by
    much, but on mid blues (relative luminance near 0.18) both stay just
    under 4.5:1; pure black, with white, always leaves one of them above
    4.58:1.
    """
    for ink in ("#ffffff", INK):
        if contrast(ink, fill) >= AA:
            return ink
    return "#000000"


def ticks(lo: float, hi: float, most: int = 6) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else [0.0]
    raw = (hi - lo) / max(most - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step + 1e-9) * step
    out = []
    k = 0
    while first + k * step <= hi + step * 1e-9:
        out.append(round(first + k * step, 12))
        k += 1
    if out[0] > lo + step * 1e-9:
        out.insert(0, round(out[0] - step, 12))
    if out[-1] < hi - step * 1e-9:
        out.append(round(out[-1] + step, 12))
    return out


def tick_text(v: float, step: float) -> str:
    """A tick label with as many decimals as the step needs."""
    places = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    s = f"{v:.{places}f}"
    return "0" if s.strip("-0.") == "" else s.replace("-", "−")


_SUP = str.maketrans("0123456789()", "⁰¹²³⁴⁵⁶⁷⁸⁹⁽⁾")
_SUB = str.maketrans("0123456789()", "₀₁₂₃₄₅₆₇₈₉₍₎")


def sup(text: str) -> str:
    """Digits and brackets raised (``"z" + sup("(2)")`` reads z⁽²⁾): symbols in figure text, which has no MathML."""
    return text.translate(_SUP)


def sub(text: str) -> str:
    """Digits and brackets lowered (``z₁``), like :func:`sup`."""
    return text.translate(_SUB)


def cut(label: str, most: int) -> str:
    """A label cut to ``most`` characters with an ellipsis."""
    return label if len(label) <= most else label[: most - 1] + "…"
