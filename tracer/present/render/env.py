"""The one Jinja2 Environment, and the filters both formats share or need.

Autoescape is on for ``*.html.j2`` templates (named explicitly:
``select_autoescape()``'s defaults do not match ``.html.j2``) and off for
Markdown, which escapes with :func:`md` instead.  ``StrictUndefined`` turns a
misspelt variable into an error, and the string tables are installed as
``jinja2.ext.i18n`` new-style gettext callables, so ``{{ _("page.title") }}``
fails loudly on a missing key.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from tracer.present.render.sanitize import clean_mathml, markdown_math
from tracer.present.strings import Strings, templates_dir

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}#+!|$~])")
_SPANS = re.compile(r"(\$[^$]*\$|`[^`]*`)")
"""Inline spans of prose we write: ``$maths$`` and ```code```."""


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The shared environment (templates from the package's ``templates`` folder)."""
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2"), default_for_string=False, default=False),
        undefined=StrictUndefined,
        extensions=["jinja2.ext.i18n"],
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["mathml"] = mathml
    env.filters["prose"] = prose
    env.filters["md"] = md
    env.filters["mdprose"] = mdprose
    env.filters["mdmath"] = markdown_math
    return env


def render(template: str, strings: Strings, **context: Any) -> str:
    """Render ``template`` with ``strings`` installed as the gettext callables."""
    env = environment().overlay()
    env.install_gettext_callables(strings.gettext, strings.ngettext, newstyle=True)  # type: ignore[attr-defined]
    return env.get_template(template).render(**context)


@lru_cache(maxsize=4096)
def _convert(latex: str, display: bool) -> str:
    from latex2mathml.converter import convert

    mode = "block" if display else "inline"
    try:
        out = str(convert(latex, display=mode))
    except Exception:  # LaTeX from a file that latex2mathml cannot parse: show its source as text
        out = f'<math display="{mode}"><mtext>{escape(latex)}</mtext></math>'
    return clean_mathml(out)


def mathml(latex: str, display: bool = False) -> Markup:
    """LaTeX as MathML, which browsers render natively, through the MathML allow-list (it may come from a file)."""
    return Markup(_convert(latex, display))


def prose(para: Any) -> Markup:
    """A paragraph (or a caption) for HTML: escaped text, with ``$...$`` spans as MathML and ```...``` as code.

    Spans are read only when the paragraph allows math (text we write); plain
    strings (captions that may hold a token) are only escaped.
    """
    if isinstance(para, str):
        return escape(para)
    if not para.math:
        return escape(para.text)
    out = []
    for n, part in enumerate(_SPANS.split(para.text)):
        if n % 2 and part.startswith("$"):
            out.append(mathml(part[1:-1]))
        elif n % 2:
            out.append(Markup("<code>%s</code>") % part[1:-1])
        else:
            out.append(escape(part))
    return Markup("").join(out)


def md(text: str) -> str:
    """Text (a token, a sentence) for Markdown: literal everywhere, tables included.

    Markdown punctuation and ``$`` are backslash-escaped, ``<``, ``>`` and ``&``
    become entities, and line breaks become spaces, so a token such as
    ``<script>`` or ``a|b`` shows as written and cannot end a table cell.
    """
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return re.sub(r"[\r\n]+", " ", text)


def mdprose(para: Any) -> str:
    """A paragraph (or a caption) for Markdown: escaped text; ``$...$`` and ```...``` spans kept when it allows math."""
    if isinstance(para, str):
        return md(para)
    if not para.math:
        return md(para.text)
    out = []
    for n, part in enumerate(_SPANS.split(para.text)):
        if n % 2 and part.startswith("$"):
            out.append(f"${markdown_math(part[1:-1])}$")
        else:
            out.append(part if n % 2 else md(part))
    return "".join(out)
