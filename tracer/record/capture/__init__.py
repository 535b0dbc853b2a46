"""Trace ordinary PyTorch code: every scalar of your own attention module, unchanged.

    >>> import torch, tracer
    >>> with tracer.capture(tokens="Your journey starts".split()) as cap:
    ...     x = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64]])
    ...     scores = x @ x.T
    ...     weights = torch.softmax(scores, dim=-1)
    >>> round(cap.trace["scores[2,1].p[3]"].value, 4)     # x(2)_3 × x(1)_3
    0.5874

Torch computes everything exactly as it would without the capture (a
``TorchFunctionMode`` lets each call run, then records what it returned;
see :mod:`tracer.record.capture.mode`), and each supported op is recorded
through the lessons' :class:`~tracer.record.recorder.Recorder` primitives,
so a captured trace has the same ids, files, diffs, explanations and
reports as a lesson's.  Ids follow the code (:mod:`.naming`, ``docs/capture.md``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import sys
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import torch

from tracer.core.trace import Node, Trace
from tracer.errors import InputError
from tracer.message import Message
from tracer.record.capture import axes as ax
from tracer.record.capture import site
from tracer.record.capture.mode import Mode
from tracer.record.capture.naming import final_names, pathname, steps
from tracer.record.capture.relabel import relabel
from tracer.record.capture.rename import rename
from tracer.record.capture.rows import token_axis
from tracer.record.capture.selector import rename_axes, selector_axes
from tracer.record.capture.session import Session
from tracer.record.inputs import DEFAULT_QUERY

__all__ = ["Capture", "capture", "trace_torch"]


class Capture:
    """A context manager that records the torch code run inside it; :attr:`trace` when it ends."""

    def __init__(self, tokens: Sequence[str] | None = None, name: str | None = None, query: int | None = None) -> None:
        self.tokens = list(tokens) if tokens is not None else None
        self.name = name or "capture"
        self.query = query
        self.session = Session()
        self.output: Any = None
        self._trace: Trace | None = None
        self._names: dict[str, str] = {}
        self._handles: list[Any] = []
        self._mode: Mode | None = None

    def __enter__(self) -> Capture:
        hooks = torch.nn.modules.module
        self._handles = [
            hooks.register_module_forward_pre_hook(lambda m, a: _quiet(self.session.enter, m, a)),
            hooks.register_module_forward_hook(lambda m, a, o: _quiet(self.session.leave, m, o)),
        ]
        self._outer = id(sys._getframe(1))  # the frame of the ``with``: what it stores is not a helper's result
        site.OUTER.add(self._outer)
        self._mode = Mode(self.session)
        self._mode.__enter__()  # type: ignore[no-untyped-call]
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._mode is not None:
            self._mode.__exit__(kind, error, tb)  # type: ignore[no-untyped-call]
        for h in self._handles:
            h.remove()
        self._handles = []
        site.OUTER.discard(getattr(self, "_outer", 0))
        site.OPENED.discard(torch.nn.MultiheadAttention.forward.__code__)  # left open if its forward raised
        self.session.opened.clear()
        if kind is None:
            self._trace = self._finish()
            if self.session.opaque:
                sys.stderr.write(f"attn-trace: recorded as opaque steps: {', '.join(self.session.opaque)}\n")

    @property
    def trace(self) -> Trace:
        """The captured trace (after the ``with`` block)."""
        if self._trace is None:
            raise InputError(Message("capture.capture_not_finished_use"))
        return self._trace

    @property
    def warnings(self) -> list[str]:
        """The torch functions recorded as opaque steps, once each."""
        return list(self.session.opaque)

    def node_of(self, t: torch.Tensor) -> str | None:
        """The id of the node holding tensor ``t`` as the captured code last saw it (None if never seen)."""
        v = self.session.known(t)
        if v is None:
            return None
        return re.sub(r"§[0-9]+", lambda m: self._names.get(m.group(0), m.group(0)), v.name)

    def sites(self) -> dict[str, str]:
        """Node id -> ``"file.py:LINE"`` of the user statement whose op made it (ops run in user code only).

        The line is read off the stack when the op runs, so a loop body or a
        module's ``forward`` points at the student's own line, not at torch.
        """
        out = {}
        for base, info in self.session.info.items():
            if info.site is not None and base in self._names:
                out[self._names[base]] = info.site.where
        return out

    def _finish(self) -> Trace:
        s = self.session
        for p in list(s.pending.values()):  # writes the code made last and never read back
            s.known(p.tensor)
        raw = s.rec.trace({}).nodes
        if not raw:
            raise InputError(Message("trouble.nothing_captured"))
        renames = selector_axes(list(raw), s.taken)
        raw = tuple(relabel([rename_axes(n, renames[n.name]) if n.name in renames else n for n in raw]))
        raw = tuple(_read_leaves(raw, s.known(self.output) if isinstance(self.output, torch.Tensor) else None))
        full = [n.name for n in raw]
        bases = {b for f in full for b in re.findall(r"§[0-9]+", f)}
        order = [b for b in s.info if b in bases]
        self._names = final_names(s, order, full)
        nodes = rename(list(raw), self._names, [pathname(p) for _, p in _modules(s) if p])
        stages = list(dict.fromkeys(n.stage for n in nodes))
        if self.output is not None and isinstance(self.output, torch.Tensor):
            out_name = self.node_of(self.output)
        else:
            out_name = None
        rows = _default_tokens(s, nodes, self.node_of)
        if self.tokens is not None and rows and len(self.tokens) != len(rows):
            raise InputError(Message("capture.token_labels_inputs_rows", n_tokens=len(self.tokens), n_rows=len(rows)))
        tokens = self.tokens if self.tokens is not None else rows
        query = self.query if self.query is not None else max(1, min(DEFAULT_QUERY, len(tokens)))
        if tokens and not 1 <= query <= len(tokens):
            raise InputError(Message("capture.must", n_tokens=len(tokens), query=query), arg="query")
        nodes = [_untokened(n, len(tokens)) for n in nodes]
        dtype = next((str(n.value.dtype) for n in nodes if n.op != "input"), "float32")
        meta = {
            "lesson": self.name,
            "captured": True,
            "source": {"kind": "torch", "name": self.name},
            "tokens": tokens,
            "query": query,
            "dtype": dtype,
            "stages": stages,
            "n_tokens": len(tokens),
            "dim": _width(s),
            "modules": {p or "(root)": type(m).__name__ for m, p in _modules(s)},
            "opaque": list(s.opaque),
            "functions": _functions(s, self._names, nodes),
            "steps": steps(s, self._names),
        }
        if out_name is not None:
            meta["output"] = out_name
        return Trace(nodes, meta)


def _read_leaves(nodes: Sequence[Node], output: Any) -> list[Node]:
    """The nodes without the leaves nothing reads (a prototype's weights ``copy.deepcopy`` read to copy them).

    Such a leaf is no input of any step; listing it would name an
    initialiser (``kaiming_uniform_``) as an input of the code.
    """
    read = {a.node for n in nodes for a in n.args}
    keep = getattr(output, "name", None)
    return [n for n in nodes if n.op != "input" or n.name in read or n.name == keep]


def _functions(s: Session, names: dict[str, str], nodes: Sequence[Node]) -> dict[str, list[str]]:
    """Stage -> [the function whose statement made it, the user function that called that one] (reports' titles).

    A helper's statements (the Annotated Transformer's ``attention()``, called
    from ``forward``) are titled with the helper's own name and its caller's.
    """
    stage = {n.name: n.stage for n in nodes}
    out: dict[str, list[str]] = {}
    for base, info in s.info.items():
        got = stage.get(names.get(base, ""))
        if got is not None and info.site is not None and info.site.func and got not in out:
            out[got] = [info.site.func, info.site.caller]
    return out


def _quiet(fn: Callable[..., None], *args: Any) -> None:
    """Run a module hook's bookkeeping; a failure there must not break the code being captured."""
    with torch.no_grad(), contextlib.suppress(Exception):
        fn(*args)


def _untokened(node: Node, tokens: int) -> Node:
    """An input whose rows are not the tokens does not call its first axis ``i`` (``i`` is one row per token)."""
    if node.op != "input" or node.axes[:1] != ("i",) or node.value.shape[0] == tokens:
        return node
    return dataclasses.replace(node, axes=(ax.fresh(node.axes, ("r",)), *node.axes[1:]))


def _modules(s: Session) -> list[tuple[torch.nn.Module, str]]:
    out = []
    for root in s.roots:
        for path, m in root.named_modules():
            out.append((m, path))
    return out


def _first_input(s: Session) -> torch.Tensor | None:
    """The tensor whose rows are the tokens: the input the code was given, not a weight, buffer or mask.

    In order of preference: a tensor passed to the captured function or to
    the root module's ``forward`` (named after its parameter; the first
    parameter, as ``x`` before ``memory`` in cross-attention); a leaf from
    outside the call; one made inside the call (``torch.rand``) that is not a
    parameter or buffer of the module (a causal-mask buffer of the context
    length would give the wrong token count and width), a (batch, tokens,
    features) one first (``F.multi_head_attention_forward`` called with weight
    matrices made by ``torch.randn`` before the input).
    """
    owned = {id(t) for root in s.roots for t in (*root.parameters(), *root.buffers())}
    read = [
        t
        for b, info in s.info.items()
        if info.kind == "leaf" and (t := s.tensors.get(b)) is not None and t.dim() >= 1
        if not isinstance(t, torch.nn.Parameter)
    ]
    leaves = [t for t in read if id(t) not in owned]
    place = {k: n for n, k in enumerate(s.arg_names)}  # the parameters' order, not the order of first use
    given = sorted((t for t in leaves if id(t) in s.arg_names), key=lambda t: place[id(t)])
    outside = [t for t in leaves if s.made.get(id(t)) is None and s._storage_origin(t) is None]
    batched = sorted(leaves, key=lambda t: t.dim() < 3)  # made inside: a batch of sequences before a plain matrix
    # last, a module that reads only its own state (a forward called with a position, over a preallocated cache)
    pools = [t for pool in (given, outside, batched, read) for t in pool]
    if not any(n.attrs.get("func") in EMBEDDINGS for n in s.rec._nodes):  # no token ids: positions are no rows
        pools.sort(key=lambda t: not t.is_floating_point())  # gpt-fast's ``input_pos`` beside the vectors
    return pools[0] if pools else None


EMBEDDINGS = ("embedding", "torch.nn.functional.embedding")
"""The look-ups that read token ids (an integer input read by one is the tokens)."""


def _width(s: Session) -> int:
    """The embedding size: the input's last axis, or for token ids the width of the vectors they look up.

    A trace's ``dim`` is at least 1 (the file format says so, and whatever
    ``trace`` writes ``load`` must accept): an input of whole numbers that no
    embedding reads (FlexAttention's boolean mask) gives the length of its
    rows, and code that reads no tensor of its own (only constants) gives 1.
    """
    t = _first_input(s)
    if t is None:
        return 1
    if t.is_floating_point():
        return int(t.shape[-1])
    for node in s.rec._nodes:  # token ids: the vectors an embedding looks up for them
        if node.attrs.get("func") in EMBEDDINGS and node.value.ndim:
            return int(node.value.shape[-1])
    return max(1, int(t.shape[-1]))  # whole numbers no embedding reads (a mask, a table of counts): their rows


def _default_tokens(s: Session, nodes: Sequence[Node], node_of: Callable[[torch.Tensor], str | None]) -> list[str]:
    """One label per row of the input (``t1``, ``t2`` …); code that reads no tensor has one row (as a trace must).

    The rows are the input's axis that becomes an attention's queries
    (:mod:`.rows`: sequence-first code too), else its second-to-last axis
    (token ids: their last).
    """
    t = _first_input(s)
    if t is None:
        return ["t1"]
    rows = int(t.shape[-2] if t.dim() >= 2 and t.is_floating_point() else t.shape[-1])  # token ids: (…, T)
    axis = token_axis(nodes, node_of(t) or "") if t.is_floating_point() else None
    if axis is not None and axis < t.dim():
        rows = int(t.shape[axis])
    return [f"t{n}" for n in range(1, rows + 1)]


def capture(tokens: Sequence[str] | None = None, name: str | None = None, query: int | None = None) -> Capture:
    """Record the torch code run in a ``with`` block: ``with tracer.capture() as cap: out = model(x)``.

    ``tokens`` label the rows of the inputs (the axis ``i``), ``query`` is the
    1-based row reports dwell on, ``name`` names the trace (reports, files).
    ``cap.trace`` is the :class:`~tracer.core.trace.Trace`; ops without a
    step-by-step form are opaque steps, listed in ``cap.warnings`` and once on
    stderr.
    """
    return Capture(tokens, name, query)


def trace_torch(
    fn: Callable[..., Any],
    *args: Any,
    tokens: Sequence[str] | None = None,
    name: str | None = None,
    query: int | None = None,
    **kwargs: Any,
) -> Trace:
    """Run ``fn(*args, **kwargs)`` captured and return its trace.

    Tensor arguments are named after ``fn``'s parameters; ``meta["output"]``
    names the node of the returned tensor.
    """
    with capture(tokens, name or getattr(fn, "__name__", None), query) as cap:
        cap.session.name_args(fn, args, kwargs)
        cap.output = fn(*args, **kwargs)
    return cap.trace
