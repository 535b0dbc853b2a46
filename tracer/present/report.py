"""Reports: a trace in, the files of its walk-through out (as bytes, nothing written here).

:func:`build` returns ``{relative path: bytes}`` so the caller can check
everything (existing files, permissions) before writing anything; the CLI
writes each file atomically.  The same trace gives byte-identical files.

Folder names (:func:`slug`) are stable: ``tutorial`` for the tutorial's
example, ``<file stem>`` for an inputs file, ``text-<hash>`` for ``--text``
and ``inputs-<hash>`` for anything else; ``-q<N>`` is added when the focus
query is not the default (2, or what the lesson's focus rule picks) and
``-float64`` for double precision, ``-backward`` for a trace with its
backward pass (its page has a backward section).  A lesson's folders take its name (its
``folder`` when it names one) for its default example (``causal``) and as a
prefix otherwise (``causal-words``); the tutorial's lesson names ``""``, so
its folders are the plain names.
"""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.present import narrative
from tracer.present.facts import fill
from tracer.present.narrative import Narrative
from tracer.record import registry
from tracer.record.lesson import page_part

FORMATS = ("html", "md")


def plain_name(text: str, empty: str) -> str:
    """``text`` as one safe folder-name part: lower-case letters, digits and ``-`` only, at most 60 characters.

    Names in a trace file come from whoever wrote the file; a ``/``, a ``..``
    or an absolute path in ``meta.lesson`` must not choose where a report is
    written (``docs/security.md``), so every part of a folder name passes
    through here.  ``empty`` stands in when nothing is left.
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60].strip("-") or empty


def folder_prefix(trace: Trace) -> str:
    """What a trace's report folders start with: its lesson's ``folder``, else the lesson's name made plain."""
    registered = registry.of(trace)
    chosen = getattr(registered, "folder", None)
    if isinstance(chosen, str):
        return plain_name(chosen, "") if chosen else ""
    return plain_name(str(trace.meta.get("lesson", "")), "lesson")


def slug(trace: Trace) -> str:
    """The folder name of a trace's reports (see the module docstring); never a path, only one plain name."""
    src = trace.meta.get("source") or {}
    kind = src.get("kind")
    lesson = folder_prefix(trace)
    if kind == "tutorial":
        base = lesson or "tutorial"
    elif kind == "file" and src.get("name"):
        base = plain_name(str(src["name"]).rsplit(".", 1)[0], "inputs")
    elif kind == "text":
        key = json.dumps([src.get("text"), src.get("dim"), src.get("seed")], ensure_ascii=False)
        base = "text-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]
    else:
        first = trace.tensor("x") if any(n.name == "x" for n in trace.nodes) else trace.nodes[0].value
        h = hashlib.sha256(np.ascontiguousarray(first).tobytes())
        h.update(json.dumps(trace.tokens, ensure_ascii=False).encode("utf-8"))
        base = "inputs-" + h.hexdigest()[:10]
    if lesson and kind != "tutorial":
        base = f"{lesson}-{base}"
    variant = trace.meta.get("variant")
    if isinstance(variant, str) and variant:  # a lesson's own options other than its defaults
        base += "-" + plain_name(variant, "variant")
    default_q = trace.meta.get("default_query", 2 if len(trace.tokens) >= 2 else 1)  # a lesson's focus rule
    if trace.query != default_q:
        base += f"-q{trace.query}"
    if trace.dtype != "float32":
        base += f"-{trace.dtype}"
    if isinstance(trace.meta.get("backward"), dict):  # its page has a backward section: not the forward's folder
        base += "-backward"
    return base


def build(
    trace: Trace,
    lang: str = "en",
    formats: tuple[str, ...] = FORMATS,
    decimals: int = 4,
    fragment: bool = False,
    story: Narrative | None = None,
) -> dict[str, bytes]:
    """Every file of the report: ``index.html`` (or ``fragment.html``), ``index.md`` and its figures.

    The page is told by ``story`` (default: :func:`narrative_of`): through
    the lesson's own page part when it names one and no other story is
    given (the tutorial's lesson: its walk-through), else as the generic
    stage report; both are finished by the one page builder.
    """
    from tracer.core import portable
    from tracer.present.figures.svg import standalone
    from tracer.present.render.html import render_html
    from tracer.present.render.markdown import render_markdown
    from tracer.present.views import lesson

    trace = portable.shown(trace)  # library results print as their loop forms: the same on every machine
    own = page_part(registered, "page") if story is None and (registered := registry.of(trace)) else None
    told = story or narrative_of(trace, lang)
    page = (own or lesson.build)(trace, told, decimals)
    files: dict[str, bytes] = {}
    if "html" in formats:
        name = "fragment.html" if fragment else "index.html"
        files[name] = render_html(page, fragment).encode("utf-8")
    if "md" in formats:
        files["index.md"] = render_markdown(page).encode("utf-8")
        for fig in page.figures:
            files[f"{fig.name}.svg"] = standalone(fig.svg).encode("utf-8")
    return files


def is_report_file(name: str) -> bool:
    """Whether ``name`` is a file a report writes (the rest of a folder is someone else's)."""
    return (
        name in ("index.html", "index.md", "fragment.html") or re.fullmatch(r"fig-[A-Za-z0-9-]+\.svg", name) is not None
    )


def narrative_of(trace: Trace, lang: str) -> Narrative:
    """A trace's narrative in ``lang``: the one it carries (``meta["narrative"]``), else its lesson's file
    (a captured trace without one: the generic narrative of :mod:`tracer.present.captured`)."""
    name = str(trace.meta.get("lesson", ""))
    carried = trace.meta.get("narrative")
    if isinstance(carried, dict):
        if lang not in carried:
            raise InputError(f"pipeline {name!r} has no {lang!r} narrative (it has {', '.join(sorted(carried))})")
        return narrative.from_dict(carried[lang], name, lang)
    if trace.meta.get("captured"):
        from tracer.present import captured

        return captured.narrative(trace, lang)
    return fill(trace, narrative.load(name, lang))  # the example's sizes and counts, read from the trace
