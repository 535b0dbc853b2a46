"""A capture session: which tensor is which node, and what each op is called.

:class:`Session` is the state behind ``tracer.capture``: the
:class:`~tracer.record.recorder.Recorder` the ops record through, a map from
every tensor seen to the :class:`~tracer.record.recorder.Var` holding its
value, the module stack (kept by torch's global forward hooks), and for each
recorded op the facts its final id is made from.  Ops record under
provisional names (``§12``); :mod:`tracer.record.capture.naming` gives the
final ones when the capture ends.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from tracer.record.capture import axes as ax
from tracer.record.capture import site as sites
from tracer.record.capture.site import Site, user_site, variable
from tracer.record.recorder import Arg, Recorder, Var


@dataclass
class Info:
    """What the final id of one recorded op (or leaf) is made from."""

    kind: str  # "op", "leaf" or "const"
    op: str  # short name of the op ("matmul", "div", "view" …) or, for a leaf, how it was made
    scope: str  # module path of the user module it ran in ("" at the top)
    site: Site | None = None
    group: int = 0  # which statement execution
    out_index: int | None = None  # position in a tuple result (``q, k, v = x.split(…)``)
    receiver: str | None = None  # in-place op: the node it overwrote
    source: str | None = None  # the only tensor operand, if there was one
    module_out: str | None = None  # a library module whose output this is
    hint: str = ""  # leaf: its name ("x", "ones"); const: the provisional name of its reader
    derived: bool = False  # a layout op or a cast: named after its operand when not named by the code
    opened: bool = False  # ran inside a torch function run opened up (``nn.MultiheadAttention``)
    call: tuple[int, int] | None = None  # (id of the innermost user module running, which call of it this is)
    attrs: dict[str, Any] = field(default_factory=dict)


class Session:
    """The recorder, the tensor map and the naming facts of one capture."""

    def __init__(self, dtype: torch.dtype = torch.float32) -> None:
        self.rec = Recorder(dtype)
        self.vars: dict[int, tuple[torch.Tensor, Var]] = {}
        self.info: dict[str, Info] = {}
        self.tensors: dict[str, torch.Tensor] = {}  # provisional name -> the tensor it holds
        self.made: dict[int, tuple[torch.Tensor, str]] = {}  # tensors made inside the call, and how
        self.made_storage: dict[int, str] = {}  # storage pointer -> how (nn.Parameter wraps a drawn tensor)
        self.made_names: dict[int, str] = {}  # tensor id -> the variable its factory's statement stores it in
        self.arg_names: dict[int, str] = {}
        self.stack: list[tuple[torch.nn.Module, str]] = []
        self._entered: list[int] = []  # the name counter when each running module began
        self.paths: dict[int, str] = {}  # id(module) -> dotted path under its root
        self.roots: list[torch.nn.Module] = []
        self.prefix: dict[int, str] = {}  # id(root) -> the name the code calls it by, for a library module
        self.opaque: list[str] = []
        self.pending: dict[int, Any] = {}  # id(tensor) -> its writes not yet recorded (:mod:`.writes`)
        self.stale: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # id(tensor) -> (it, a view changed in place)
        self.flush: Callable[[Session, torch.Tensor], None] | None = None  # records them: set by the first write
        self._count = 0
        self._group = 0
        self._last: Site | None = None
        self.dtype_seen: torch.dtype | None = None
        self.taken: list[tuple[str, str]] = []  # (node, axis) taken apart by unbind/indexing (:mod:`.selector`)
        self.opened: list[str] = []  # module paths of the torch functions being run opened up (:mod:`.opened`)
        self.calls: dict[int, int] = {}  # id(module) -> how many times its forward has begun

    # -- names ---------------------------------------------------------------
    def fresh(self) -> str:
        """A new provisional node name."""
        self._count += 1
        return f"§{self._count}"

    @property
    def scope(self) -> str:
        """Module path of the innermost running user module (torch's own modules do not count).

        Inside a torch function run opened up (``nn.MultiheadAttention``), the path of the module running it.
        """
        if self.opened:
            return self.opened[-1]
        for module, path in reversed(self.stack):
            if not type(module).__module__.startswith("torch.") and path:
                return path
        return ""

    @property
    def library_module(self) -> str | None:
        """Path of the innermost running module when it is one of torch's (``nn.Linear`` …)."""
        if self.stack and type(self.stack[-1][0]).__module__.startswith("torch."):
            return self.stack[-1][1] or None
        return None

    def stage_name(self, site: Site | None, op: str) -> str:
        """The report section an op belongs to: the first user module under the root, else its statement.

        The steps of a torch function run opened up (``nn.MultiheadAttention``) are one section, its module's.
        """
        if self.opened:
            return self.opened[-1].replace(".", "_")
        for module, path in self.stack[1:]:
            if not type(module).__module__.startswith("torch."):
                return path.replace(".", "_")
        if site is not None and site.code == "__init__":
            return "build"
        if site is not None and site.targets:
            return "_".join(site.targets)
        if site is not None and site.store:
            return site.store
        if site is not None and site.kind == "return":
            return "output" if site.code == "forward" else site.code
        return self.rec._stage if self.rec._stage not in ("inputs", "main") else "main"

    def begin(self, op: str, source: str | None = None) -> tuple[str, Info]:
        """A provisional name and naming facts for an op about to be recorded."""
        site = user_site(3)
        prev = self._last
        same = site is not None and prev is not None and (site.frame, site.start) == (prev.frame, prev.start)
        if not same or site is None or prev is None or site.lasti <= prev.lasti:  # lasti back: a loop ran it again
            self._group += 1
        self._last = site
        name = self.fresh()
        info = Info("op", op, self.scope, site, self._group, source=source, module_out=None, opened=bool(self.opened))
        user = [m for m, _ in self.stack if not type(m).__module__.startswith("torch.")]
        info.call = (id(user[-1]), self.calls[id(user[-1])]) if user else None
        if site is not None and site.element is not None and site.element >= 0 and site.kind == "assign":
            info.out_index = site.element  # the n-th value a generator gives ``q, k, v = (… for t in …)``
        self.info[name] = info
        self.rec._stage = self.stage_name(site, op)
        return name, info

    def undo(self, start: int) -> None:
        """Forget every node recorded after the first ``start`` (an op whose recording failed halfway).

        An op is recorded whole or not at all: a handler that raises after
        recording some of its steps (a sum whose check cannot be bounded)
        leaves none of them behind, and no tensor stays bound to one, so the
        op is recorded as one opaque step instead (:meth:`Mode._record`).
        """
        gone = {n.name for n in self.rec.since(start)}
        if not gone:
            return
        del self.rec._nodes[start:]
        self.vars = {k: (t, v) for k, (t, v) in self.vars.items() if v.name not in gone}
        for name in gone:
            self.tensors.pop(name, None)

    # -- tensors -------------------------------------------------------------
    def bind(self, t: torch.Tensor, var: Var) -> Var:
        """``t`` now holds ``var``'s values (an in-place op rebinds)."""
        self.vars[id(t)] = (t, var)
        self.tensors.setdefault(var.name, t)
        return var

    def known(self, t: torch.Tensor) -> Var | None:
        """The var of a tensor seen before, if any (writes into it through indexing recorded first)."""
        if (id(t) in self.pending or id(t) in self.stale) and self.flush is not None:
            self.flush(self, t)
        got = self.vars.get(id(t))
        return got[1] if got is not None and got[0] is t else None

    def var(self, t: torch.Tensor) -> Var:
        """The var holding ``t``: recorded earlier, or recorded now as a leaf."""
        got = self.known(t)
        if got is not None:
            return got
        return self.leaf(t, t.detach().clone())

    def leaf(self, t: torch.Tensor, value: torch.Tensor) -> Var:
        """Record ``value`` (what ``t`` held when the code first used it) as a leaf of the trace, bound to ``t``."""
        name = self.fresh()
        made = self.made.get(id(t))
        how = made[1] if made is not None and made[0] is t else self._storage_origin(t)
        named = self.made_names.get(id(t)) if made is not None and made[0] is t else None
        hint = self.arg_names.get(id(t)) or named or (how.split("(")[0].rsplit(".", 1)[-1] if how else None)
        hint = hint or variable(t) or "input"
        info = Info("leaf", how or "given", "", hint=hint)
        self.info[name] = info
        if value.is_complex():  # real and imaginary parts side by side, as ``torch.view_as_real`` has them
            value = torch.view_as_real(value.resolve_conj()).clone()
        names = ax.default(value.dim())
        if isinstance(t, torch.nn.Parameter) and t.dim() in (1, 2):
            names = ("c", "k")[2 - t.dim() :]
        attrs: dict[str, object] = {"made_by": how} if how else {}
        if not value.is_floating_point():  # token ids, indices: whole numbers, printed as such
            attrs["integer"] = True
        # a weight or buffer of a module, or an input of the code (the report's header tells them apart)
        attrs["param"] = isinstance(t, torch.nn.Parameter) or any(t is b for r in self.roots for b in r.buffers())
        old = self.rec._stage
        self.rec._stage = "inputs"
        dtype = value.dtype if value.is_floating_point() else self.rec.dtype
        saved, self.rec.dtype = self.rec.dtype, dtype
        try:
            v = self.rec.input(name, value, names, symbol=rf"\mathrm{{{name}}}", text=name, attrs=attrs)
        finally:
            self.rec.dtype, self.rec._stage = saved, old
        return self.bind(t, v)

    def _storage_origin(self, t: torch.Tensor) -> str | None:
        try:
            return self.made_storage.get(t.untyped_storage().data_ptr())
        except RuntimeError:
            return None

    def note_made(self, t: torch.Tensor, how: str, name: str = "") -> None:
        """Remember that ``t`` was made inside the call by ``how`` (a factory or an init draw), stored as ``name``."""
        self.made[id(t)] = (t, how)
        if name:
            self.made_names[id(t)] = name
        try:
            if t.untyped_storage().data_ptr():
                self.made_storage[t.untyped_storage().data_ptr()] = how
        except RuntimeError:
            pass

    def read(self, t: torch.Tensor, reader: Sequence[str], shape: Sequence[int]) -> Arg:
        """``t`` as an operand of a node with axes ``reader`` and ``shape``, broadcast from the right.

        An axis of size one that broadcasts against a longer one is read as
        entry ``"1"``.
        """
        v = self.var(t)
        lead = len(reader) - t.dim()
        if lead < 0:
            raise ValueError(f"a {t.dim()}-d operand does not broadcast to {len(reader)} axes")
        index = []
        for d in range(t.dim()):
            wide = t.shape[d] == 1 and int(shape[lead + d]) != 1
            index.append("1" if wide else reader[lead + d])
        return v(*index)

    # -- modules -------------------------------------------------------------
    def enter(self, module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        """A module's forward begins (torch's global forward pre-hook)."""
        if not self.stack and id(module) not in self.paths:
            self.roots.append(module)
            prefix = ""
            if type(module).__module__.startswith("torch."):  # a library module called on its own: name it
                site = user_site(2)  # after the call in the code (``sa_v2.W_query(inputs)``), its inputs too
                if site is not None and site.call[0] and not site.call[0].startswith(("torch.", "nn.", "F.")):
                    prefix = site.call[0]
                    for arg, name in zip(args, site.call[1], strict=False):
                        if isinstance(arg, torch.Tensor) and name:
                            self.arg_names.setdefault(id(arg), name)
            self.prefix[id(module)] = prefix
            for path, sub in module.named_modules(remove_duplicate=False):
                self.paths.setdefault(id(sub), ".".join(p for p in (prefix, path) if p))
            self.name_args(module.forward, args)
        self.stack.append((module, self.paths.get(id(module), "")))
        self._entered.append(self._count)
        self.calls[id(module)] = self.calls.get(id(module), 0) + 1
        if isinstance(module, torch.nn.MultiheadAttention):  # its forward's own steps are shown (:mod:`.opened`)
            self.opened.append(self.paths.get(id(module), "") or "mha")
            sites.OPENED.add(type(module).forward.__code__)

    def leave(self, module: torch.nn.Module, output: Any) -> None:
        """A module's forward ends (torch's global forward hook)."""
        start = self._count
        if self.stack and self.stack[-1][0] is module:
            self.stack.pop()
            start = self._entered.pop()
            if isinstance(module, torch.nn.MultiheadAttention) and self.opened:
                self.opened.pop()
                if not any(isinstance(m, torch.nn.MultiheadAttention) for m, _ in self.stack):
                    sites.OPENED.discard(type(module).forward.__code__)
        path = self.paths.get(id(module), "")
        if isinstance(output, torch.Tensor) and path and type(module).__module__.startswith("torch."):
            v = self.known(output)
            made_here = v is not None and v.name.startswith("§") and int(v.name[1:]) > start
            if v is not None and made_here and v.name in self.info:
                self.info[v.name].module_out = path

    def name_args(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> None:
        """Name the tensors passed to the captured call after the function's parameters (``x``)."""
        try:
            bound = inspect.signature(fn).bind_partial(*args, **(kwargs or {}))
        except (TypeError, ValueError):
            return
        for pname, value in bound.arguments.items():
            if isinstance(value, torch.Tensor):
                self.arg_names.setdefault(id(value), pname)
