"""Text from a trace file cannot act on a terminal or run in a reader's browser (issue 24, items 3 and 4).

``explain``, ``verify`` and every status and error line show control and
format characters as escapes (``\\x1b``), the way ``diff`` shows them; the
Jupyter Markdown display keeps every string from the file inside its code
span, fence or escaped text.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracer
from tests.hostile import PAYLOADS, fill, seal
from tests.test_hostile_reports import dangers, viewers
from tracer.cli import app
from tracer.core import serialize

ESCAPES = [
    "\x1b[2K\x1b[1A",  # erase the line above, move up
    "\x1b[8m\x1b[30;40m",  # conceal, black on black
    "\x1b]0;pwned\x07",  # window title (OSC 0)
    "\x1b]52;c;ZWNobyBwd25lZA==\x07",  # clipboard (OSC 52)
    "\x9b2K",  # C1 CSI
    "\r\n  note: every value follows\n",  # a faked line of our own
    "\u202etxt.exe",  # bidi override
]
HOSTILE = "".join(ESCAPES)


def unsafe(text: str) -> list[str]:
    """Characters in ``text`` a terminal acts on or a reader cannot see (line breaks between lines excepted)."""
    bad = ("Cc", "Cf", "Zl", "Zp")
    return [c for line in text.split("\n") for c in line if c != "\t" and unicodedata.category(c) in bad]


def test_printable_escapes_what_the_terminal_acts_on_and_keeps_the_rest() -> None:
    from tracer.core.fmt import printable

    assert printable("omega[2,1] = 0.55×0.43 中文 ⋯") == "omega[2,1] = 0.55×0.43 中文 ⋯"
    assert printable("a\x1b[2Kb") == "a\\x1b[2Kb"
    assert printable("a\nb\tc\u202e\x9b") == "a\\nb\\tc\\u202e\\x9b"  # a tab from a file too
    assert unsafe(printable(HOSTILE)) == []


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    doc = serialize.to_dict(tracer.trace_lesson("simple"))
    for n in doc["nodes"]:
        n["text"] = f"x(2)·x(1){HOSTILE}"
        n["latex"] = rf"\omega_{{21}}{HOSTILE}"
    doc["meta"]["tokens"] = [f"t{k}{HOSTILE}" for k in range(len(doc["meta"]["tokens"]))]
    path = tmp_path_factory.mktemp("text") / f"evil{ESCAPES[0]}\n.json"
    path.write_text(seal(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["explain", "omega[2,1]"],
        ["explain", "omega"],
        ["explain", "x[2,1]"],
        ["explain", "alpha[2,1]"],
        ["steps", "omega[2,*]"],
        ["report", "--format", "md", "-o", "{dir}/r", "--force"],
    ],
)
def test_no_escape_from_a_file_reaches_the_terminal(edited: Path, args: list[str]) -> None:
    args = [a.replace("{dir}", str(edited.parent)) for a in args]
    r = CliRunner().invoke(app, [*args, "--from", str(edited)])
    assert r.exit_code in (0, 2), r.output
    assert unsafe(r.stdout) == [] and unsafe(r.stderr) == [], (r.stdout, r.stderr)


def test_verify_and_errors_keep_a_file_name_on_one_inert_line(edited: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["verify", str(edited)])
    assert unsafe(r.output) == [] and r.output.count("\n") == 1, r.output
    bad = tmp_path / "bad\x1b]0;t\x07\nError: all good.json"
    bad.write_text("{", encoding="utf-8")
    r = CliRunner().invoke(app, ["report", "--from", str(bad)])
    assert r.exit_code == 2 and unsafe(r.output) == [] and r.output.count("\n") == 1, r.output


def _hostile_trace(url: str) -> tracer.Trace:
    doc = serialize.to_dict(tracer.trace_lesson("simple"))
    breakouts = ["`` <img src=x onerror=alert(1)> ``", "```\n<img src=x onerror=alert(1)>\n```"]
    strings = [fill(p, url) for p in PAYLOADS.values()] + breakouts
    for k, n in enumerate(doc["nodes"]):
        n["text"] = strings[k % len(strings)] + "`"
        if n["op"] == "matmul":  # an op that is stored, not derived: any name loads
            n["op"] = strings[(k + 1) % len(strings)]
        if n["stage"] == "matrix":
            n["stage"] = "<img src=x onerror=alert(1)>|`"
    doc["meta"]["lesson"] = "`<img src=x onerror=alert(1)>`"
    return serialize.loads(seal(doc))


def _markdown_forms(t: tracer.Trace) -> list[str]:
    forms = [t._repr_mimebundle_()["text/markdown"]]
    for step in ("omega[2,1]", "omega", "x[2,1]", "alpha[2]", "mat.omega[2,1]", "mat.z"):
        forms.append(t[step]._repr_mimebundle_()["text/markdown"])
    return forms


def test_the_jupyter_markdown_display_keeps_file_text_inert() -> None:
    t = _hostile_trace("http://127.0.0.1:9")
    for text in _markdown_forms(t):
        for form, html in viewers(text).items():
            assert dangers(html) == [], (form, html)
        fenced = __import__("markdown").markdown(text, extensions=["tables", "fenced_code"])
        assert dangers(fenced) == [], fenced


def test_code_spans_and_fences_hold_whatever_they_are_given() -> None:
    from tracer.present.render.env import mdcode, mdfence

    assert mdcode("omega[2,1]") == "`omega[2,1]`"
    assert mdcode("a`b") == "``a`b``" and mdcode("`x`") == "`` `x` ``" and mdcode("a|b\nc") == "`a\\|b c`"
    assert mdfence("a ``` b\n```") == "````text\na ``` b ```\n````"
