"""Figure -> SVG text that is byte-identical run after run and safe to inline.

* ``svg.fonttype = "none"``: text stays text, so the browser draws Chinese
  glyphs; layout is measured with the bundled DejaVu Sans only, so the files
  do not depend on which fonts a machine has, and a CJK-capable fallback
  list is written into the SVG for the browser;
* ``svg.hashsalt`` fixed per figure, ``metadata={"Date": None}``, and the
  ``<metadata>`` block dropped;
* every ``id`` (and every reference to it) prefixed with the figure's name, so
  several figures inlined into one page never share an id;
* links drawn with ``Artist.set_url`` open in the same page (no ``target``).
"""

from __future__ import annotations

import io
import logging
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

FONT_STACK = (
    "'DejaVu Sans', 'Noto Sans', 'Noto Sans CJK SC', 'Source Han Sans SC', 'PingFang SC', 'Microsoft YaHei', sans-serif"
)
XML_HEAD = '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n'

_ID = re.compile(r'\bid="([^"]+)"')


def rc(name: str) -> dict[str, Any]:
    """The matplotlib settings every report figure is drawn and saved with."""
    return {
        "svg.fonttype": "none",
        "svg.hashsalt": f"attn-trace-{name}",
        "font.family": ["DejaVu Sans"],
        "font.size": 9.0,
        "axes.titlesize": 10.0,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }


@contextmanager
def drawing(name: str) -> Iterator[None]:
    """Draw inside this context: fixed settings, and no chatter about glyphs DejaVu lacks."""
    import matplotlib

    log = logging.getLogger("matplotlib")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with matplotlib.rc_context(rc(name)), warnings.catch_warnings():  # type: ignore[arg-type]
            warnings.simplefilter("ignore")
            yield
    finally:
        log.setLevel(level)


def to_svg(fig: Any, name: str) -> str:
    """The figure as an ``<svg>`` element (no XML declaration, DOCTYPE or metadata), ids prefixed."""
    buf = io.StringIO()
    with drawing(name):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)
    text = text.replace(' target="_blank"', "")
    text = re.sub(r"font-family: [^;\"]+", "font-family: " + FONT_STACK, text)
    return prefix_ids(text, name).rstrip() + "\n"


def prefix_ids(text: str, prefix: str) -> str:
    """Rename every id defined in the SVG to ``prefix-id``, and every ``#id`` reference with it."""
    defined = set(_ID.findall(text))
    if not defined:
        return text

    def ref(m: re.Match[str]) -> str:
        target = m.group(2)
        return f"{m.group(1)}#{prefix}-{target}" if target in defined else m.group(0)

    text = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', text)
    return re.sub(r'(xlink:href="|href="|url\()#([^")]+)', ref, text)


def standalone(svg: str) -> str:
    """An SVG element as a file of its own."""
    return XML_HEAD + svg


def label(text: str, width: int = 18) -> str:
    """A token as a matplotlib label: ``$`` escaped (no mathtext), long labels cut."""
    short = text if len(text) <= width else text[: width - 1] + "…"
    return short.replace("$", r"\$")
