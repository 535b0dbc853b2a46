"""The one Jinja2 Environment, and the filters both formats share or need.

Autoescape is on for ``*.html.j2`` templates (named explicitly:
``select_autoescape()``'s defaults do not match ``.html.j2``) and off for
Markdown, which escapes with :func:`md` instead.  ``StrictUndefined`` turns a
misspelt variable into an error, and the string tables are installed as
``jinja2.ext.i18n`` new-style gettext callables, so ``{{ _("page.title") }}``
fails loudly on a missing key.
"""

from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache
from typing import Any

from jinja2 import BytecodeCache, Environment, FileSystemLoader, StrictUndefined, pass_context, select_autoescape
from jinja2.bccache import Bucket
from jinja2.runtime import Context
from markupsafe import Markup, escape

from tracer.present.render.mdmath import aligned
from tracer.present.render.sanitize import clean_mathml, markdown_math
from tracer.present.strings import Strings, templates_dir

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}#+!|$~])")
_SPANS = re.compile(r"(\$[^$]*\$|`[^`]*`)")
"""Inline spans of prose we write: ``$maths$`` and ```code```."""
_REF = re.compile(r"\[\^(\d+)\]")
"""A numbered footnote marker (:mod:`tracer.present.views.notes`)."""
_STICK = re.compile(r"[，。：；、！？）」』,.:;!?)\]]*")
"""Punctuation that must not begin a line: kept with the maths before it."""


class _Compiled(BytecodeCache):
    """Templates compiled once per process, kept in memory.

    Each page renders through an overlay of the shared environment that
    carries its own strings (:func:`render`); an overlay starts with a copy of
    the parent's template cache, which never fills, so without this every page
    compiled its three templates again (54 compilations for 18 pages).  The
    compiled code is looked up by template name and source checksum, so an
    edited template is compiled afresh; nothing is written to disk.
    """

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        """Fill ``bucket`` with the code compiled earlier for its template, if any."""
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        """Keep the code just compiled for ``bucket``'s template."""
        self._code[bucket.key] = bucket.bytecode_to_string()


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
        bytecode_cache=_Compiled(),  # shared by every overlay render() makes
    )
    env.filters["mathml"] = mathml
    env.filters["chunk"] = chunk
    env.filters["pieces"] = pieces
    env.filters["prose"] = _prose
    env.filters["plain"] = plain
    env.filters["md"] = md
    env.filters["mdprose"] = mdprose
    env.filters["aligned"] = aligned
    env.filters["mdcell"] = mdcell
    env.filters["mdcode"] = mdcode
    env.filters["mdfence"] = mdfence
    env.filters["mdmath"] = markdown_math
    env.filters["python"] = python
    env.filters["fence"] = fence
    return env


def render(template: str, strings: Strings, **context: Any) -> str:
    """Render ``template`` with ``strings`` installed as the gettext callables."""
    env = environment().overlay()
    env.install_gettext_callables(strings.gettext, strings.ngettext, newstyle=True)  # type: ignore[attr-defined]
    return env.get_template(template).render(**context)


_BARS = re.compile(r"\\([lr])(vert|Vert)(?![A-Za-z])")
"""``\\lvert``, ``\\rvert``, ``\\lVert``, ``\\rVert``: bars that open or close an absolute value or a norm."""
_FENCE = {("l", "vert"): r"\left|", ("r", "vert"): r"\right|", ("l", "Vert"): r"\left\|", ("r", "Vert"): r"\right\|"}


def fences(latex: str) -> str:
    """``\\lvert x \\rvert`` as ``\\left| x \\right|`` (and the double bars alike), pair by pair.

    latex2mathml writes ``\\lvert`` as a bare ``<mo>|</mo>``, which a browser
    spaces like a relation (``| x |``, wide gaps); ``\\left``/``\\right`` give
    a fenced row, drawn tight as in print.  Bars that do not pair up, or whose
    pair holds unbalanced braces, are left as they are.
    """
    marks = list(_BARS.finditer(latex))
    paired: set[int] = set()
    opened: list[re.Match[str]] = []
    for m in marks:
        if m.group(1) == "l":
            opened.append(m)
        elif opened and opened[-1].group(2) == m.group(2):
            o = opened.pop()
            inner = latex[o.end() : m.start()]
            if inner.count("{") == inner.count("}"):
                paired |= {o.start(), m.start()}
    out, last = [], 0
    for m in marks:
        if m.start() in paired:
            out += [latex[last : m.start()], _FENCE[m.group(1), m.group(2)]]
            last = m.end()
    return "".join(out) + latex[last:]


_SIGNED = re.compile(r"(<mrow>|</mo>|<math[^>]*>)<mo>−</mo><mo>∞</mo>")
"""A minus that opens a row or follows an operator (``= −∞``, ``(−∞)``): the sign of the ∞ after it."""


def infinity(markup: str) -> str:
    """``∞`` set as the quantity it is (``<mi>``), and a minus right before it as its sign.

    latex2mathml writes ``\\infty`` as an operator, ``<mo>∞</mo>``, which a
    browser spaces as one: ``= − ∞`` on the board, and in a superscript
    (``ω^{−∞}_{511}``) a ``−∞`` so wide and loose that on paper it ran into
    the subscript below it.  As an identifier after a prefix minus it reads
    ``−∞``, tight, as in print.  A minus after an operand (``m − ∞``) stays
    the subtraction it is.
    """
    signed = _SIGNED.sub(r'\1<mrow><mo form="prefix">−</mo><mo>∞</mo></mrow>', markup)
    return signed.replace("<mo>∞</mo>", '<mi mathvariant="normal">∞</mi>')


@lru_cache(maxsize=4096)
def _convert(latex: str, display: bool) -> str:
    from latex2mathml.converter import convert

    mode = "block" if display else "inline"
    try:
        out = str(convert(fences(latex), display=mode))
    except Exception:  # LaTeX from a file that latex2mathml cannot parse: show its source as text
        out = f'<math display="{mode}"><mtext>{escape(latex)}</mtext></math>'
    return infinity(clean_mathml(out))


def mathml(latex: str, display: bool = False) -> Markup:
    """LaTeX as MathML, which browsers render natively, through the MathML allow-list (it may come from a file)."""
    return Markup(_convert(latex, display))


def chunk(latex: str, ids: tuple[str, ...] = ()) -> Markup:
    """One chunk of a worked equation (``= 0.2365``, ``+ 0.1305``) as display MathML, its numbers doors.

    A chunk that starts with ``+`` or ``-`` would have it laid out as a sign
    (no space after it): a medium space puts back the gap that the operator
    has in the whole line; the gap before it is the space between chunks.
    ``ids`` are the step ids of the numbers the chunk writes (:func:`doors`).
    """
    if latex[:1] in "+-":
        latex = latex[0] + r"\:" + latex[1:]
    out = mathml(latex, True)
    return Markup(doors(str(out), ids)) if ids else out


_NUMBER = re.compile(r'<mn>[^<]*</mn>|<mi mathvariant="normal">∞</mi>')
"""A number in MathML: digits, or the ∞ of a masked score (:func:`infinity`)."""


def doors(markup: str, ids: tuple[str, ...]) -> str:
    """Each number of a chunk's MathML marked with the step it shows (``data-id``), in order, as a door.

    The page's script makes each such number a control that opens its step's
    panel, as it does a table's cells.  The chunk's numbers and ``ids`` are
    paired in order; if their counts differ (a number the page writes in
    scientific notation is more than one ``<mn>``), none is marked rather
    than one wrongly.
    """
    found = _NUMBER.findall(markup)
    if len(found) != len(ids):
        return markup
    each = iter(ids)
    return _NUMBER.sub(lambda m: m.group(0).replace(">", f' class="door" data-id="{escape(next(each))}">', 1), markup)


_APART = re.compile(r",\s*\\qquad\s*")


def pieces(latex: str) -> list[str]:
    """A display formula cut where it lists formulas side by side (``a,\\qquad b``), commas kept.

    The page shows the pieces side by side when they fit and one under the
    other when they do not, so none runs off a phone's screen.
    """
    out, depth, start = [], 0, 0
    for n, ch in enumerate(latex):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        m = _APART.match(latex, n) if depth == 0 and ch == "," else None
        if m:
            out.append(latex[start:n] + ",")
            start = m.end()
    return [*out, latex[start:]]


_TAG = re.compile(r"(<[^>]*>)")
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})


def python(source: str) -> Markup:
    """Python source highlighted by Pygments: ``<span class="k">`` and the like, styled by report.css (no script).

    Pygments only chooses the spans; the text between them is escaped here,
    always the same way, because Pygments' releases escape differently
    (2.20 writes ``&quot;`` and ``&#39;``, 2.21 leaves quotes as they are)
    and a report must be the same bytes whichever release pip installed.
    A lesson's page in two languages shows the same code: each source is
    highlighted once per process (:func:`_highlighted`).
    """
    return Markup(_highlighted(source))


@lru_cache(maxsize=1024)
def _highlighted(source: str) -> str:
    """:func:`python`'s markup, as a string (remembered: the same source gives the same spans)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    parts = _TAG.split(highlight(source, PythonLexer(), HtmlFormatter(nowrap=True)).rstrip("\n"))
    return "".join(p if n % 2 else html.unescape(p).translate(_ESCAPES) for n, p in enumerate(parts))


def fence(text: str) -> str:
    """A Markdown code fence longer than any run of backticks in ``text`` (a token may hold some)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


@pass_context
def _prose(context: Context, para: Any) -> Markup:
    """The ``prose`` filter: :func:`prose`, footnote links named in the page's language."""
    return prose(para, lambda n: str(context.call(context.resolve("gettext"), "common.note_ref", n=n)))


def _linked(text: str, label: Any) -> Markup:
    """Escaped text whose numbered footnote markers are superscript links to their notes (and targets back)."""
    out = []
    for n, part in enumerate(_REF.split(text)):
        if n % 2:
            name = label(part) if label else part
            link = '<a href="#note-%s" id="note-ref-%s" role="doc-noteref" aria-label="%s">%s</a>'
            out.append(Markup(f'<sup class="fnref">{link}</sup>') % (part, part, name, part))
        else:
            out.append(escape(part))
    return Markup("").join(out)


def prose(para: Any, label: Any = None) -> Markup:
    """A paragraph (or a caption) for HTML: escaped text, with ``$...$`` spans as MathML and ```...``` as code.

    Spans are read only when the paragraph allows math (text we write); plain
    strings (captions that may hold a token) are only escaped.  In text we
    write, a numbered footnote marker ``[^3]`` becomes a link to note 3,
    named ``label(3)`` for a screen reader.
    """
    if isinstance(para, str):
        return escape(para)
    if not para.math:
        return escape(para.text)
    out = []
    parts = _SPANS.split(para.text)
    for n, part in enumerate(parts):
        if n % 2 and part.startswith("$"):
            glued = _STICK.match(parts[n + 1]) if n + 1 < len(parts) else None
            stick = glued.group(0) if glued else ""
            if stick:  # punctuation right after maths stays on its line: a line never starts with "：" or ","
                parts[n + 1] = parts[n + 1][len(stick) :]
                out.append(Markup('<span class="glue">%s%s</span>') % (mathml(part[1:-1]), stick))
            else:
                out.append(mathml(part[1:-1]))
        elif n % 2:
            out.append(Markup("<code>%s</code>") % part[1:-1])
        else:
            out.append(_linked(part, label))
    return Markup("").join(out)


_SYMBOLS = {"cdot": "·", "times": "×", "infty": "∞", "sqrt": "√", "sum": "Σ", "le": "≤", "ge": "≥"}


def _plain_latex(latex: str) -> str:
    """Simple LaTeX as plain text: ``x^{(2)}`` as ``x(2)``, ``\\alpha`` as ``α``, other commands left out."""

    def word(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in _SYMBOLS:
            return _SYMBOLS[name]
        try:
            return unicodedata.lookup(f"GREEK {'CAPITAL' if name[0].isupper() else 'SMALL'} LETTER {name.upper()}")
        except KeyError:
            return ""

    return re.sub(r"[\^_{}]", "", re.sub(r"\\([A-Za-z]+)", word, latex))


def plain(para: Any) -> str:
    """A paragraph or title as plain text, where HTML allows no markup (``<title>``): maths in simple text form."""
    if isinstance(para, str):
        return para
    if not para.math:
        return str(para.text)
    return "".join(
        (_plain_latex(part[1:-1]) if part.startswith("$") else part[1:-1]) if n % 2 else _REF.sub("", part)
        for n, part in enumerate(_SPANS.split(para.text))
    )


def md(text: str) -> str:
    """Text (a token, a sentence) for Markdown: literal everywhere, tables included.

    Markdown punctuation and ``$`` are backslash-escaped, ``<``, ``>`` and ``&``
    become entities, and line breaks become spaces, so a token such as
    ``<script>`` or ``a|b`` shows as written and cannot end a table cell.
    """
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return re.sub(r"[\r\n]+", " ", text)


def mdcode(text: str) -> str:
    """Text (an id, a lesson's name, an op) as one Markdown code span that nothing inside can end.

    The span is delimited by one backtick more than the longest run of
    backticks inside (CommonMark; Python-Markdown reads the same), padded with
    a space when the text starts or ends with one; line breaks fold to spaces
    (a span is one line) and ``|`` is written ``\\|`` (a table row ends at any
    bare pipe, code spans included).  Inside a code span ``<img ...>`` is text.
    """
    text = re.sub(r"[\r\n]+", " ", text).replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def mdfence(text: str) -> str:
    """Text as a fenced Markdown code block (```` ```text ````), one line, whose closing fence nothing inside can forge.

    The fence is longer than any run of backticks in the text, and line
    breaks fold to spaces, so the text can neither close the block nor, for a
    viewer without fenced blocks, the code span it reads instead.
    """
    text = re.sub(r"[\r\n]+", " ", text)
    fence = "`" * max(3, max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    return f"{fence}text\n{text}\n{fence}"


def mdcell(latex: str) -> str:
    """LaTeX for a Markdown table cell: a ``|`` (``|x|``, ``\\|``) is escaped so that it cannot end the cell."""
    return latex.replace("|", "\\|")


def mdprose(para: Any, cell: bool = False) -> str:
    """A paragraph (or a caption) for Markdown: escaped text; ``$...$`` and ```...``` spans kept when it allows math.

    In a table ``cell``, a ``|`` inside those spans is escaped too (:func:`mdcell`): a
    table row ends at any bare ``|``, maths and code included.
    """
    if isinstance(para, str):
        return md(para)
    if not para.math:
        return md(para.text)
    out = []
    for n, part in enumerate(_SPANS.split(para.text)):
        if n % 2:
            span = f"${markdown_math(part[1:-1])}$" if part.startswith("$") else part
            out.append(mdcell(span) if cell else span)
        else:  # a numbered footnote marker stays a Markdown footnote reference, [^3]
            out.append("".join(f"[^{p}]" if k % 2 else md(p) for k, p in enumerate(_REF.split(part))))
    return "".join(out)
