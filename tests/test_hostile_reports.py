"""Trace files are untrusted: hostile text from one never runs, loads or navigates in any report form.

Every payload of :mod:`tests.hostile` is written into every text field of an
edited trace file (node ``latex``, ``symbol`` and ``text``, tokens, the carried narrative,
free metadata) with a recomputed digest, as an attacker would.  ``report
--from`` then renders it as a full page, a fragment and Markdown, and each
output is checked twice: statically (no element or attribute that can run or
load anything) and in headless Chromium with a listener on 127.0.0.1 (no
script ran, no request reached it or left the page, no navigation).  The
fragment is pasted into a page with no CSP of its own; Markdown is shown as a
Markdown viewer would show it, with Python-Markdown (raw HTML passes) and
with the arithmatex math extension.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import markdown
import pytest
from click.testing import CliRunner

import tracer
from tests.chromium import EXE, Browser
from tests.hostile import PAYLOADS, fill, seal, spread
from tracer.cli import app
from tracer.core import serialize
from tracer.present import narrative
from tracer.present.render.env import mathml, md, mdprose
from tracer.present.render.sanitize import markdown_math
from tracer.present.views.model import Para

NEVER = {"iframe", "object", "embed", "base", "link", "form", "foreignobject", "annotation-xml", "frame"}
"""Elements no report form ever contains."""

SHIFTS = range(2)
"""Rotations of the corpus over the fields, so each payload lands in several places and latex forms."""


class Tags(HTMLParser):
    """Every start tag with its attributes, as an HTML parser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.css: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        if self.lasttag == "style":
            self.css.append(data)


TEXT_ONLY = ("alt", "title", "aria-label")
"""Attributes that are only ever read as text: a token quoted in an alt text is words, not a link."""


def dangers(page: str, scripts: int = 0) -> list[str]:
    """What in ``page`` could run, load or navigate: an empty list for a safe page.

    ``scripts`` is how many ``<script>`` elements the form has of its own (the navigator); the doors'
    data (``type="application/json"``) is not run, and a ``</script>`` in it would end it and be counted.
    """
    p = Tags()
    p.feed(page)
    found = []
    count = 0
    for tag, attrs in p.seen:
        if tag in NEVER:
            found.append(f"<{tag}>")
        if tag == "script" and attrs.get("type") != "application/json":  # a data block runs nothing
            count += 1
            if "src" in attrs:
                found.append("<script src>")
        if tag == "meta" and attrs.get("http-equiv", "").lower() not in ("", "content-security-policy"):
            found.append(f"<meta http-equiv={attrs['http-equiv']}>")
        for k, v in attrs.items():
            if k.startswith("on"):
                found.append(f"<{tag} {k}>")
            if k == "style" and ("url(" in v.lower() or "@import" in v.lower()):
                found.append(f"<{tag} style={v[:40]}>")
            if k in ("href", "src", "xlink:href", "action", "data", "srcdoc") and not v.startswith(
                ("data:image/", "#", "fig-")
            ):
                found.append(f"<{tag} {k}={v[:40]}>")
            if ("javascript:" in v.lower() or "127.0.0.1" in v) and k not in TEXT_ONLY:
                found.append(f"<{tag} {k}={v[:40]}>")
    if count > scripts:
        found.append(f"{count} scripts")
    css = " ".join(p.css).lower()
    if "url(" in css or "@import" in css:
        found.append("CSS that loads")
    return found


def viewers(text: str) -> dict[str, str]:
    """A Markdown report as two viewers show it: Python-Markdown as is, and with arithmatex math."""
    plain = markdown.markdown(text, extensions=["tables"])
    math = markdown.markdown(
        text, extensions=["tables", "pymdownx.arithmatex"], extension_configs={"pymdownx.arithmatex": {"generic": True}}
    )
    return {"md-plain": plain, "md-math": math}


# -- the filters, payload by payload (fast, precise) ----------------------------
@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_filters_neutralise_each_payload(name: str) -> None:
    from tests.hostile import latex_forms

    s = fill(PAYLOADS[name], "http://127.0.0.1:9")
    for latex in latex_forms(s):
        for display in (False, True):
            assert dangers(str(mathml(latex, display))) == [], (name, latex)
        for view in viewers(f"$${markdown_math(latex)}$$\n\n| a |\n|---|\n| ${markdown_math(latex)}$ |\n").values():
            assert dangers(view) == [], (name, latex, view)
    para = Para(f"{s} ${s}$ {s}", math=True)
    assert dangers(str(mathml(s))) == []
    for view in viewers(f"{mdprose(para)}\n\n{md(s)}\n").values():
        assert dangers(view) == [], (name, view)


def test_mathml_keeps_formulas_and_drops_the_rest() -> None:
    out = str(mathml(r"\omega_{21} = \frac{a}{b} + \text{<script>x()</script><b>bold</b>}", True))
    assert out.startswith('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">')
    assert "<mfrac>" in out and "<msub>" in out
    assert "script" not in out and "x()" not in out and "<b>" not in out and "bold" in out


def test_unparsable_latex_shows_as_text() -> None:
    out = str(mathml(r"<img src=x onerror=alert(1)> {", False))
    assert "<img" not in out and "&lt;img" in out and "<mtext>" in out


def test_markdown_math_is_the_same_math_without_html() -> None:
    assert markdown_math(r"a < b > c") == r"a \lt  b \gt  c"
    assert markdown_math("![x](u) $y$\nz") == r"!{}[x]{}(u) \$y\$ z"
    assert markdown_math(r"\sum_{m=1}^{3} e^{\omega_{2m}}") == r"\sum_{m=1}^{3} e^{\omega_{2m}}"


# -- whole reports through the CLI, in Chromium --------------------------------
class Listener:
    """An HTTP server on 127.0.0.1 that records every request it receives."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(b"<script>document.title='reached'</script>")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    ls = Listener()
    try:
        yield ls
    finally:
        ls.close()


def _docs() -> dict[str, dict[str, Any]]:
    simple = serialize.to_dict(tracer.trace_lesson("simple"))
    trainable = serialize.to_dict(tracer.trace_lesson("trainable"))
    trainable["meta"]["narrative"] = {g: narrative.load("trainable", g).to_dict() for g in ("en", "zh")}
    return {"simple": simple, "trainable": trainable}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory, listener: Listener) -> dict[str, dict[str, str]]:
    """Per edited trace: {form: HTML text} for the full page, the fragment and both Markdown viewers."""
    strings = [fill(p, listener.url) for p in PAYLOADS.values()]
    runner = CliRunner()
    out: dict[str, dict[str, str]] = {}
    for lesson, doc in _docs().items():
        for shift in SHIFTS:
            key = f"{lesson}-{shift}"
            folder = tmp_path_factory.mktemp(key)
            src = folder / "evil.json"
            src.write_text(seal(spread(doc, strings, shift)), encoding="utf-8")
            for extra in ([], ["--fragment", "--format", "html"]):
                res = runner.invoke(app, ["report", "--from", str(src), "-o", str(folder / "r"), "--force", *extra])
                assert res.exit_code == 0, res.output
            r = folder / "r"
            md_text = (r / "index.md").read_text(encoding="utf-8")
            forms = {"full": (r / "index.html").read_text(encoding="utf-8")}
            bodies = {"fragment": (r / "fragment.html").read_text(encoding="utf-8"), **viewers(md_text)}
            forms.update({k: f"<!doctype html><html><body>{v}</body></html>" for k, v in bodies.items()})
            for form, page in forms.items():
                (folder / f"{form}.html").write_text(page, encoding="utf-8")
            out[key] = {form: str(folder / f"{form}.html") for form in forms}
    return out


OWN = {"full": 1, "fragment": 0, "md-plain": 0, "md-math": 0}
"""Scripts each form has of its own."""


@pytest.mark.parametrize("form", sorted(OWN))
def test_no_dangerous_markup_in_any_form(outputs: dict[str, dict[str, str]], form: str) -> None:
    for key, files in outputs.items():
        page = Path(files[form]).read_text(encoding="utf-8")
        assert dangers(page, OWN[form]) == [], (key, form)


@pytest.mark.browser
@pytest.mark.skipif(EXE is None, reason="chromium is not installed")
def test_nothing_runs_loads_or_navigates_in_chromium(outputs: dict[str, dict[str, str]], listener: Listener) -> None:
    b = Browser()
    try:
        for key, files in outputs.items():
            for form, path in files.items():
                url = Path(path).as_uri()
                b.open(url)
                b.js("new Promise(r => setTimeout(r, 300))")  # a 0-second refresh would have fired by now
                where = (key, form)
                assert b.js("document.documentElement.getAttribute('data-pwned')") is None, where
                assert b.js("location.href") == url, where
                navigated = [e for e in b.events if e.get("method") == "Page.frameRequestedNavigation"]
                assert navigated == [], where
                own = Path(path).parent.as_uri() + "/fig-"  # a Markdown report's figures, beside it
                remote = [u for u in b.requests() if u != url and not u.startswith(("data:", own))]
                assert remote == [], where
                assert listener.hits == [], where
    finally:
        b.close()
    assert listener.hits == []
