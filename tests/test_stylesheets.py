"""The page's stylesheets parse whole: a stray brace makes a browser drop the rule after it, silently.

report.css and doors.css are joined into one ``<style>`` on every page
(:func:`tracer.present.render.html.render_html`); a ``}`` too many at the end
of the first once swallowed the door buttons' own rule, so every number was
drawn as a grey browser button.  Comments and strings aside, every brace
opens before it closes and every one is closed.
"""

from __future__ import annotations

import re

import pytest

from tracer.present.render.html import asset

SHEETS = ("report.css", "doors.css", "display.css")


def _depths(css: str) -> list[int]:
    """The nesting depth after each ``{`` or ``}`` of ``css``, comments and quoted strings left out."""
    bare = re.sub(r"/\*.*?\*/|\"[^\"]*\"|'[^']*'", "", css, flags=re.S)
    depth, out = 0, []
    for ch in bare:
        if ch in "{}":
            depth += 1 if ch == "{" else -1
            out.append(depth)
    return out


@pytest.mark.parametrize("name", SHEETS)
def test_every_brace_is_balanced(name: str) -> None:
    depths = _depths(asset(name))
    assert depths and min(depths) >= 0, f"{name}: a '}}' closes nothing"
    assert depths[-1] == 0, f"{name}: a '{{' is never closed"


def test_the_check_finds_a_stray_brace() -> None:
    assert min(_depths("a { b: c; }\n}\n")) < 0
    assert _depths("/* } */ a { content: '}'; }") == [1, 0]
