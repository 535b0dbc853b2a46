"""Every code block of every page runs as shown, in order, in a fresh Python, and prints what the page says.

The blocks of a page are taken from its view model in reading order and run
in one new interpreter, one after the other in one namespace, as a student
pasting them would; what each block prints must be, line for line, the
output the page shows under it.  Nothing on the page may be defined only in
the notebook (``show``, ``TRACED``, ``dtype``): a missing name fails here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache

import pytest

import tracer
from tracer.lessons.simple import page as walkthrough
from tracer.present import narrative, overflow
from tracer.present.strings import LANGS
from tracer.present.views import lesson
from tracer.present.views.model import Code, Page

MARK = "\x1eblock\x1e"
RUNNER = f"""
import json, sys
blocks = json.load(sys.stdin)
space = {{"__name__": "__main__"}}
for source in blocks:
    print({MARK!r}, flush=True)
    exec(compile(source, "<page>", "exec"), space)
"""
"""Runs the blocks of stdin (a JSON list) in order in one namespace, a marker before each."""


def page(t: tracer.Trace, lang: str = "en") -> Page:
    if t.meta.get("lesson") == "simple":
        return walkthrough.build(t, lang, 4, overflow.scaled(t))
    return lesson.build(t, narrative.load(str(t.meta["lesson"]), lang))


def code_blocks(p: Page) -> list[Code]:
    return [b for s in p.sections for b in s.blocks if isinstance(b, Code)]


def run(blocks: list[Code]) -> list[list[str]]:
    """What each block printed, run in order in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps([b.source for b in blocks]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    parts = done.stdout.split(MARK + "\n")[1:]
    return [p.rstrip("\n").split("\n") if p.strip() else [] for p in parts]


@cache
def lesson_trace(name: str) -> tracer.Trace:
    return tracer.trace_lesson(name)


NUMBER = re.compile(r"-?\d+\.\d*(?:e[+-]\d+)?")


def _last_place(text: str) -> float:
    """One unit in the last printed digit of ``text`` (``0.4921`` -> 1e-4, ``5.2246e-18`` -> 1e-22)."""
    mantissa, _, exp = text.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (-decimals + (int(exp) if exp else 0))


def same(got: str, shown: str) -> bool:
    """The same text, numbers allowed one unit apart in their last digit.

    The page prints the traced loop form where PyTorch runs a library kernel
    (``torch.softmax``, BLAS), whose last bits depend on the CPU: a number
    that sits on a rounding boundary may print one digit apart.
    """
    if NUMBER.sub("#", got) != NUMBER.sub("#", shown):
        return False
    pairs = zip(NUMBER.findall(got), NUMBER.findall(shown), strict=True)
    return all(a == b or abs(float(a) - float(b)) <= 1.01 * _last_place(b) for a, b in pairs)


def _compare(blocks: list[Code]) -> tuple[int, int]:
    """Run the blocks; each prints what the page shows under it.

    Returns how many numbers differ in a last digit, and how many are printed.
    """
    assert blocks, "the page shows no code"
    off = total = 0
    for block, got in zip(blocks, run(blocks), strict=True):
        text, shown = "\n".join(got), "\n".join(block.output)
        assert same(text, shown), f"{block.anchor}:\n{text}\n---- page:\n{shown}"
        off += sum(a != b for a, b in zip(NUMBER.findall(text), NUMBER.findall(shown), strict=True))
        total += len(NUMBER.findall(shown))
    return off, total


PAGES = ["simple", "trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache"]
"""Every lesson page with code."""


@pytest.mark.parametrize("name", PAGES)
def test_each_page_s_code_runs_and_prints_what_the_page_shows(name: str) -> None:
    blocks = code_blocks(page(lesson_trace(name)))
    off, total = _compare(blocks)
    # where a library kernel ran (BLAS sums in its own order), a number on a rounding boundary may print one
    # digit apart: a few in a page, never most of them (gqa's 985 numbers: 0 to 4 apart, by CPU)
    assert off <= max(2, total // 100), (off, total)
    assert sum(len(b.output) for b in blocks) > 20  # every block's result is shown


def test_the_code_is_the_same_in_every_language() -> None:
    for name in ("simple", "causal"):
        sources = {lang: [b.source for b in code_blocks(page(lesson_trace(name), lang))] for lang in LANGS}
        assert sources["en"] == sources["zh"]


def test_other_inputs_and_float64_run_too() -> None:
    """Another text, another query and double precision: dtype suffixes and other shapes print as torch's."""
    from tracer.cli import build_trace

    t = build_trace("causal", None, None, "a b c d e", None, None, 5, "float64")
    _compare(code_blocks(page(t)))
    _compare(code_blocks(page(build_trace("simple", None, None, "the cat sat on the mat", 4, None, 3, "float32"))))


def test_each_result_is_printed_once_without_the_traced_copy() -> None:
    """No "torch :"/"traced:" pairs, no names the page never defines, 4-D tensors as nested brackets."""
    blocks = code_blocks(page(lesson_trace("multihead")))
    text = "\n".join(line for b in blocks for line in b.output)
    source = "\n".join(b.source for b in blocks)
    assert "traced:" not in text and "torch :" not in text
    assert "show(" not in source and "TRACED" not in source and source.startswith("import torch\n")
    assert (
        "print(queries[0])" in source and "[[[" in text
    )  # the heads of a sample, [h, i, c], nested as PyTorch nests them
    assert sum(len(b.output) for b in blocks) < 120  # the multihead page's boxes once held 184 flattened lines
