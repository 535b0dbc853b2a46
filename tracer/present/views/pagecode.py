"""A notebook cell as the page shows it: plain PyTorch that runs when pasted, and what it prints there.

The notebook checks every result against the trace (``show("omega[2]",
attn_scores_2)`` prints torch's value beside the traced one and asserts they
agree).  A page is read, and pasted into a Python prompt, so it shows each
result once, the way PyTorch prints it:

* ``show("name", expr)`` becomes ``print(expr)``, and the page prints the
  traced value of ``name`` as ``print`` would (:mod:`tracer.present.torchprint`);
  a check of a transposed or permuted tensor (``queries.transpose(0, 1)``,
  which only matches the traced ids' axis order) prints the tensor itself,
  its traced value turned back; a batch of identical samples prints its
  first (``print(batch[0])``); a single number prints with 4 decimals;
* the notebook's fallback to the traced values (an ``if`` block that reads
  ``TRACED``) and comments about the traced ids are left out, and any other
  ``TRACED["x"]`` becomes the value itself, as a literal;
* the page's first block starts with the imports and the dtype, and turns
  gradients off where modules are built (so that printed tensors carry no
  ``grad_fn``), so the blocks run in order in a fresh interpreter.

``tests/test_page_code.py`` pastes every page's blocks into a fresh Python
and compares what it prints with the page.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from tracer.core import fmt
from tracer.core.trace import Trace
from tracer.present import torchprint

SHOW = re.compile(r'^(?P<pad>\s*)show\("(?P<name>[^"]+)", (?P<expr>.+?)\)(?P<rest>\s*#.*)?$')
"""A notebook check line: ``show("name", expr)`` and an optional comment."""
TURNED = re.compile(r"^(?P<base>[\w.]+)\.(?:transpose\((?P<a>\d+), (?P<b>\d+)\)|permute\((?P<perm>[\d, ]+)\))$")
"""A check of a tensor with its axes reordered to the traced ids' order."""
TRACED_VALUE = re.compile(r'TRACED\["([^"]+)"\]')
DEFAULT_MADE = re.compile(r"^\s*(\w+) = .*\btorch\.(?:ones|zeros|empty)\((?![^)]*dtype)")
"""A tensor made without a dtype: PyTorch's default, float32, whatever the trace's dtype."""
BOOLEAN = re.compile(r"^\s*(\w+) = (?:.*\.bool\(\)|(?P<a>~?\w+) [|&^] (?P<b>~?\w+))\s*(?:#.*)?$")
"""A boolean tensor made: ``x.bool()``, or ``a | b`` (``&``, ``^``) of two boolean tensors."""
INTEGER = re.compile(r"^torch\.arange\((?![^)]*dtype)[^)]*\)(?: *(?://|\+|-|\*) *\w+)*$")
"""An integer tensor: ``torch.arange(n)`` without a dtype, and whole-number arithmetic on it."""
PARAMETER = re.compile(r"\.(weight|bias)(?P<view>\.T)?$")
"""A layer's own parameter (``Parameter containing:``) or its transpose, a view that still requires grad."""


def _sum_line(trace: Trace, m: re.Match[str], checked: dict[str, str]) -> str:
    total = float(np.sum(np.asarray(trace[checked[m[1]]].value, dtype=np.float64)))
    return f"sum of the weights: {round(total, 4)}"


def _agree_line(trace: Trace, m: re.Match[str], checked: dict[str, str]) -> str:
    same = np.allclose(trace.tensor("causal.alpha"), trace.tensor("masked.alpha"), rtol=1e-5, atol=1e-8)
    return f"the two ways agree: {bool(same)}"


def _seen_line(trace: Trace, m: re.Match[str], checked: dict[str, str]) -> str:
    hide = np.asarray(trace.tensor(checked[m[1]]))
    return f"keys each query sees: {[int(n) for n in (hide == 0).sum(axis=-1)]}"


def _rows_line(trace: Trace, m: re.Match[str], checked: dict[str, str]) -> str:
    sums = np.asarray(trace.tensor(checked[m[1]]), dtype=np.float64).sum(axis=-1)
    return f"row sums: {[round(float(x), 4) for x in sums]}"


def _causal_rows_line(trace: Trace, m: re.Match[str], checked: dict[str, str]) -> str:
    # the two softmaxes are the same computation exactly where the two masks hide the same keys
    same = (np.asarray(trace.tensor("mask.hide")) == np.asarray(trace.tensor("mask.future"))).all(axis=-1)
    return f"rows equal to the causal lesson: {[i + 1 for i, s in enumerate(same) if s]}"


def _same_keys_line(trace: Trace, m: re.Match[str], checked: dict[str, str]) -> str:
    return f"the same keys as the repeated groups: {float(np.asarray(trace.tensor('check.kh'))) == 0}"


def _bound_line(trace: Trace, m: re.Match[str], checked: dict[str, str]) -> str:
    # lesson flash: the online softmax's context vectors beside the ordinary ones, within the bound the trace states
    node = trace.node("check.rev" if checked.get(m[1]) == "rev.z" else "check.flash")
    return f"within the bound: {float(node.value) <= float(node.attrs.get('bound', 0.0))}"


PRINTS: dict[re.Pattern[str], Callable[[Trace, re.Match[str], dict[str, str]], str]] = {
    re.compile(r'^print\("keys each query sees:", \(~(\w+)\)\.sum\(dim=-1\)\.tolist\(\)\)$'): _seen_line,
    re.compile(r'^print\("row sums:", \[round\(s, 4\) for s in (\w+)\.sum\(dim=-1\)\.tolist\(\)\]\)$'): _rows_line,
    re.compile(r'^print\("rows equal to the causal lesson:", \[.*\]\)$'): _causal_rows_line,
    re.compile(r'^print\("the same keys as the repeated groups:", torch\.equal\(\w+, \w+\)\)$'): _same_keys_line,
    re.compile(r'^print\("sum of the weights:", round\((\w+)\.sum\(\)\.item\(\), 4\)\)$'): _sum_line,
    re.compile(r'^print\("the two ways agree:", torch\.allclose\(\w+, \w+\)\)$'): _agree_line,
    re.compile(
        r'^print\("within the bound:", \((\w+) - ordinary\)\.abs\(\)\.max\(\)\.item\(\) <= [\d.e+-]+\)$'
    ): _bound_line,
}
"""The lessons' own ``print`` lines and what they print, from the trace and the steps checked so far."""


def setup(trace: Trace, cells: list[str]) -> str:
    """The lines the page's first block starts with: torch, the dtype, and no gradients where modules are built."""
    out = f"import torch\ndtype = torch.{trace.dtype}\n"
    if any("torch.nn." in c for c in cells):
        out += "torch.set_grad_enabled(False)  # only the numbers: no gradients are recorded\n"
    # no blank line: the first block holds the tokens, and a Markdown reader without fenced code blocks
    # keeps a block free of blank lines as one code span, escaped (tests/test_hostile_reports.py)
    return out


def _printed(trace: Trace, name: str, expr: str, dtype: str) -> tuple[str, list[str], bool]:
    """The page's ``print`` of a check, what it prints, and whether it prints one sample of identical ones."""
    step = trace[name]
    value = np.asarray(step.value, dtype=np.float64)
    if value.ndim == 0 and step.node.attrs.get("integer"):  # a count prints as the page shows it
        return f"print({expr})", [str(int(value))], False
    if value.ndim == 0:
        return f'print(f"{{{expr}:.{fmt.DECIMALS}f}}")', [f"{float(value):.{fmt.DECIMALS}f}"], False
    axes = list(step.node.axes[len(step.index) :])
    turned = TURNED.match(expr)
    if turned:
        perm = [int(p) for p in turned["perm"].split(",")] if turned["perm"] else None
        if perm is None:
            a, b = int(turned["a"]), int(turned["b"])
            perm = list(range(value.ndim))
            perm[a], perm[b] = b, a
        back = [int(i) for i in np.argsort(perm)]
        value, axes = np.transpose(value, back), [axes[i] for i in back]
        expr = turned["base"]
    one = axes[:1] == ["b"] and value.shape[0] > 1 and bool(np.all(value == value[:1]))
    if one:  # a batch of copies: its first sample says it all
        value, expr = value[0], f"{expr}[0]"
    own = PARAMETER.search(expr)
    text = torchprint.tensor(value, dtype, parameter=bool(own and not own["view"]), requires_grad=bool(own))
    return f"print({expr})", text.split("\n"), one


def page_form(trace: Trace, source: str) -> tuple[str, tuple[str, ...]]:
    """(source, printed lines) of a notebook cell as the page shows it."""
    out: list[str] = []
    printed: list[str] = []
    skip_deeper_than: int | None = None
    checked: dict[str, str] = {}  # expression -> the step its check compared it with
    said_one = False
    made: dict[str, str] = {}  # variable -> its dtype, where it is not the trace's
    for line in source.rstrip("\n").split("\n"):
        pad = len(line) - len(line.lstrip())
        if skip_deeper_than is not None:
            if line.strip() and pad > skip_deeper_than:
                continue
            skip_deeper_than = None
        stripped = line.strip()
        if stripped.startswith("if ") and "TRACED[" in stripped:
            skip_deeper_than = pad  # the notebook's fallback to the traced values
            continue
        if stripped.startswith("#") and "traced" in stripped.lower():
            continue  # about the traced ids: the notebook's concern
        shown = SHOW.match(line)
        if shown:
            dtype = made.get(shown["expr"], "int64" if INTEGER.match(shown["expr"]) else trace.dtype)
            code, lines, one = _printed(trace, shown["name"], shown["expr"], dtype)
            rest = shown["rest"] or ""
            if one and not said_one:
                rest, said_one = rest or "  # the samples of the batch are the same: the first is printed", True
            out.append(shown["pad"] + code + rest)
            printed += lines
            checked[shown["expr"]] = shown["name"]
            continue
        default = DEFAULT_MADE.match(line)
        if default:
            made[default[1]] = "float32"
        boolean = BOOLEAN.match(line)
        if boolean and all(made.get((boolean[k] or "").lstrip("~")) == "bool" for k in ("a", "b") if boolean[k]):
            made[boolean[1]] = "bool"
        line = TRACED_VALUE.sub(lambda m: fmt_literal(trace, m[1]), line)
        if stripped.startswith("print("):
            printed.append(_known(trace, stripped, checked))
        out.append(line)
    return "\n".join(out), tuple(printed)


def fmt_literal(trace: Trace, name: str) -> str:
    """The traced value of ``name`` as a Python literal (what ``TRACED[name]`` holds in the notebook)."""
    from tracer.present.notebook.code import traced  # a leaf module (see tracer.present.views.code)

    return traced(trace, name)


def _known(trace: Trace, line: str, checked: dict[str, str]) -> str:
    for pattern, say in PRINTS.items():
        m = pattern.match(line)
        if m:
            return say(trace, m, checked)
    raise ValueError(f"the page cannot tell what this line prints: {line}")
