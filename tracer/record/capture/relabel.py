"""Axes named by what they index, once the whole computation is known.

Each op names its result's axes when it runs, from what it can see then:
``ones(T, T)`` does not know it will mask keys, a key-padding mask does not
know it will be viewed per head, a fused projection unflattened into
``(3, E)`` does not know its first axis will be taken apart into q, k and v.
When the capture ends this module looks again, across the whole trace:

- an axis that an elementwise or layout op passes on unchanged (its
  reference is the bare name of one of the reader's axes) is the same axis
  in both nodes, and so is an axis of a look-up's index tensor and the
  result's axis it became; such links make classes of axes (a union-find);
- an axis a sum of products made (scores ``i, j``, context ``i, d``,
  features ``c``) says what its class indexes; so does an axis of size one
  broadcast against a reader's axis (a mask ``(1, 1, T, T)`` is broadcast
  over batch and heads), an axis merged by a reshape into batch-times-heads
  ``n`` (its parts are batch ``b`` and heads ``h``), and the feature axis
  beside a q/k/v selector with no heads (``(3, E)``: ``E`` is features ``c``);
- a class with one such name takes it in every node; a class with none, or
  with two, keeps the names it has.

So the causal mask built from ``torch.ones(T, T)`` reads ``(i, j)``,
``nn.MultiheadAttention``'s key-padding mask ``(b, j)`` and its view per
head ``(b, h, i, j)``, the in-projection's unflattened ``(…, p, c)``, and T5's
relative positions ``arange[None, :] - arange[:, None]`` (and the buckets
made from them) ``(i, j)``, the query and key axes of the scores they bias.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from tracer.core.trace import Node, Ref
from tracer.record.capture import axes as ax

PASS = {"view", "reshape", "transpose", "permute", "unsqueeze", "squeeze", "expand", "getitem", "cat", "stack"}
PASS |= {"split", "chunk", "unbind", "flatten", "unflatten", "masked_fill", "add", "sub", "mul", "div", "where"}
PASS |= {"compare", "tril", "triu", "cast", "neg", "exp", "softmax", "logical", "not", "and", "or", "bool"}
PASS |= {"clamp", "abs", "log", "minimum", "maximum"}  # T5's buckets: clipped, or log-spaced, relative distances
"""Ops whose bare references pass an axis on unchanged (no products, no reductions)."""
BROADCAST = PASS - {"view", "reshape", "transpose", "permute", "unsqueeze", "squeeze", "getitem", "flatten"}
BROADCAST -= {"unflatten", "split", "chunk", "unbind", "cat", "stack"}
"""Ops that read an operand aligned from the right, as broadcasting does."""

PARTS = {"p", "s", "t"}
"""A sum's products and running sums: they read each operand under axes of their own (the summed one too)."""

RESHAPE = {"view", "reshape", "flatten", "unflatten"}
"""Reshapes: an axis they keep under another name (heads of one feature joined: ``h`` -> ``c``) is not linked."""

Key = tuple[str, int]


class _Classes:
    """Union-find over (node, axis position) that never puts two axes of one node in one class.

    ``pos[:, None] - pos[None, :]`` reads one axis twice: the first link in
    trace order wins, the one that would make the difference's two axes one
    is refused, so the rows stay queries and the columns keys.
    """

    def __init__(self) -> None:
        self.up: dict[Key, Key] = {}
        self.nodes: dict[Key, set[str]] = {}

    def find(self, k: Key) -> Key:
        if k not in self.up:
            self.up[k], self.nodes[k] = k, {k[0]}
        while self.up[k] != k:
            self.up[k] = self.up[self.up[k]]
            k = self.up[k]
        return k

    def join(self, a: Key, b: Key) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb and not self.nodes[ra] & self.nodes[rb]:
            self.up[ra] = rb
            self.nodes[rb] |= self.nodes.pop(ra)


def relabel(nodes: list[Node]) -> list[Node]:
    """``nodes`` with every axis named by what its class indexes (see the module doc)."""
    by = {n.name: n for n in nodes}
    classes = _Classes()
    for n in nodes:
        for ref, src in _reads(n, by):
            for p, e in enumerate(ref.index or ()):
                renamed = n.op in RESHAPE and src.axes[p] != e  # a reshape that said what the axis now is
                if e in n.axes and not renamed:
                    classes.join((src.name, p), (n.name, n.axes.index(e)))
        for a, b in _picked(n, by):
            classes.join(a, b)
    names = {n.name: list(n.axes) for n in nodes}
    roles: dict[Key, set[str]] = {}
    for k, name in _roles(nodes, by):
        roles.setdefault(classes.find(k), set()).add(name)
    for _round in range(3):  # later rounds read the names earlier ones gave (``n`` of a merged mask, then its view)
        seeds = _seeds(nodes, by, names)
        wanted: dict[Key, set[str]] = {}
        for k, name in seeds:
            wanted.setdefault(classes.find(k), set()).add(name)
        members: dict[Key, list[Key]] = {}
        for n in nodes:
            for p in range(len(n.axes)):
                members.setdefault(classes.find((n.name, p)), []).append((n.name, p))
        for root, keys in members.items():
            role = roles.get(root, set())
            got = role if len(role) == 1 else wanted.get(root, set())  # what the weights' axes do wins
            if len(got) != 1:
                continue
            (name,) = got
            for node, p in keys:
                names[node][p] = name
    return [_renamed(n, names[n.name]) for n in nodes]


def _reads(n: Node, by: dict[str, Node]) -> list[tuple[Ref, Node]]:
    """The operands ``n`` reads through index expressions, with their nodes, if ``n`` passes axes on."""
    if n.op not in PASS or n.name.rpartition(".")[2] in PARTS or n.name.startswith("check."):
        return []
    out = []
    for ref in n.args:
        src = by.get(ref.node)
        if src is not None and ref.index is not None and len(ref.index) == len(src.axes):
            out.append((ref, src))
    return out


def _picked(n: Node, by: dict[str, Node]) -> list[tuple[Key, Key]]:
    """A look-up's index tensor's axes, each linked to the result's axis it became (``table[buckets]``).

    ``weight[idx]`` has one axis per axis of ``idx``, where the looked-up
    axis was: they index what ``idx``'s own axes index.  T5's buckets are a
    (query, key) table, so the bias they look up per head is one too.
    """
    held, at = n.attrs.get("indices"), n.attrs.get("at")
    src = by.get(held) if n.op == "lookup" and isinstance(held, str) else None
    if src is None or not isinstance(at, int) or at < 0 or at + len(src.axes) > len(n.axes):
        return []
    if tuple(np.shape(src.value)) != tuple(np.shape(n.value))[at : at + len(src.axes)]:
        return []
    return [((src.name, p), (n.name, at + p)) for p in range(len(src.axes))]


def _seeds(nodes: list[Node], by: dict[str, Node], names: dict[str, list[str]]) -> list[tuple[Key, str]]:
    """(axis, name) pairs that say what an axis indexes (see the module doc)."""
    out: list[tuple[Key, str]] = []
    for n in nodes:
        mine = names[n.name]
        if n.op == "sum" and not n.name.startswith("check."):  # products' and reductions' own names
            out += [((n.name, p), a) for p, a in enumerate(mine)]
        if "p" in mine and "d" in mine and "h" not in mine:  # q/k/v without heads: each is a whole feature vector
            out.append(((n.name, mine.index("d")), "c"))
        for ref, src in _reads(n, by):
            index = list(ref.index or ())
            if n.op in BROADCAST:  # an axis of size one read as entry 1, broadcast against the reader's axis
                lead = len(n.axes) - len(index)
                for p, e in enumerate(index):
                    if e == "1" and src.value.shape[p] == 1 and lead + p >= 0 and n.value.shape[lead + p] != 1:
                        out.append(((src.name, p), mine[lead + p]))
            if n.op in ("reshape", "view") and "n" in mine:  # batch times heads, merged: batch, then heads
                old = n.axes[mine.index("n")]
                merged = [p for p, e in enumerate(index) if e not in n.axes and _only(e, n.axes) == old]
                if len(merged) == 2:
                    out += [((src.name, merged[0]), "b"), ((src.name, merged[1]), "h")]
    return out


def _roles(nodes: list[Node], by: dict[str, Node]) -> list[tuple[Key, str]]:
    """What the weights' axes index, from the product that applies them to the values (these names win).

    Attention's weights meet the values in one sum of products, whatever the
    layout: the axis summed there is the keys (``j``), an axis only the
    weights keep is the queries (``i``), an axis both operands keep is a
    batch (or heads).  So labml's ``einsum('ijbh,jbhd->ibhd')`` over a
    sequence-first softmax, d2l's additive attention (scores from ``tanh``,
    no product of queries and keys at all) and an RNN decoder's one query
    over the encoder's outputs read ``(…, i, j)`` as every attention does,
    whatever positions or names their inputs had.  A shared axis is what
    the values call it when that is heads (d2l's ``transpose_qkv`` merges
    batch and heads for the whole computation, and its softmax's reshapes
    lose them), else a batch where some other guess called it ``i`` or ``j``.
    """
    out: list[tuple[Key, str]] = []
    for n in nodes:
        prods = by.get(f"{n.name}.p")
        if n.op != "sum" or n.name.startswith("check.") or prods is None or len(prods.args) != 2:
            continue
        over = [a for a in prods.axes if a not in n.axes]
        sides = [(by.get(r.node), tuple(r.index or ())) for r in prods.args]
        for (w, idx), (vals, other) in (sides, sides[::-1]):
            if w is None or len(over) != 1 or len(idx) != len(w.axes) or not _weights(w, by):
                continue
            for p, e in enumerate(idx):
                if e == over[0]:
                    out.append(((w.name, p), "j"))
                elif e in n.axes and e not in other:
                    out.append(((w.name, p), "i"))
                elif e in n.axes and vals is not None and len(other) == len(vals.axes):
                    held = vals.axes[other.index(e)]  # what the values call it: d2l's merged batch·heads are heads
                    if held in ("h", "n") or w.axes[p] in ("i", "j"):
                        out.append(((w.name, p), held if held in ("h", "n") else "b"))
    return out


def _weights(node: Node, by: dict[str, Node]) -> bool:
    """Whether ``node`` is a softmax's result, or one read through casts and reshapes (d2l's, split back)."""
    for _hop in range(4):
        if node.op == "softmax":
            return True
        src = by.get(node.args[0].node) if node.op in ("cast", "view", "reshape") and node.args else None
        if src is None:
            return False
        node = src
    return False


def _only(expr: str, axes: tuple[str, ...]) -> str:
    """The one axis of ``axes`` that ``expr`` mentions, else ``""``."""
    found = [a for a in axes if re.search(_WORD.format(re.escape(a)), expr)]
    return found[0] if len(found) == 1 else ""


_WORD = r"(?<![A-Za-z0-9_]){}(?![A-Za-z0-9_])"


def _renamed(node: Node, want: list[str]) -> Node:
    """``node`` with axes ``want`` (an axis that would repeat a new name gets a fresh one), refs and templates too."""
    if tuple(want) == node.axes:
        return node
    changed = {p for p, (a, b) in enumerate(zip(node.axes, want, strict=True)) if a != b}
    final = list(want)
    for p, a in enumerate(final):
        if p not in changed and any(final[q] == a for q in changed):
            size_one = bool(np.shape(node.value)[p] == 1)
            final[p] = ax.fresh([*final, *node.axes], ("u", "e") if size_one else ("e", "m"))
    if len(set(final)) != len(final):
        return node
    table = {a: b for a, b in zip(node.axes, final, strict=True) if a != b}
    pattern = re.compile("|".join(_WORD.format(re.escape(a)) for a in table))

    def sub(text: str) -> str:
        return pattern.sub(lambda m: table[m.group(0)], text)

    def placeholders(text: str) -> str:
        return re.sub(r"<([^<>]*)>", lambda m: f"<{sub(m.group(1))}>", text)

    args = tuple(Ref(r.node, None if r.index is None else tuple(sub(e) for e in r.index)) for r in node.args)
    return replace(node, axes=tuple(final), args=args, text=placeholders(node.text), latex=placeholders(node.latex))
