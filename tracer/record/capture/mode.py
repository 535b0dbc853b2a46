"""The interposition: a ``TorchFunctionMode`` that lets torch compute and records what it computed.

Why a ``TorchFunctionMode`` rather than a ``TorchDispatchMode``: it sees the
calls the user wrote (``F.linear``, ``softmax``, ``dropout``,
``scaled_dot_product_attention``, ``x.T``) with their documented arguments,
before autograd and before torch lowers them to ATen kernels whose names and
decompositions change between releases (``addmm`` or ``mm`` for a linear
layer, ``_softmax``, ``native_dropout``, a fused attention kernel per
backend).  The ids follow the user's code, and the user's code is at this
level.  Inside ``__torch_function__`` the mode is off, so the calls torch
makes internally, and the recorder's own arithmetic, are not seen.

Every call runs first, exactly as it would without the mode; its result is
returned unchanged.  Writes through indexing (``t[i] = v``, ``t.copy_(v)``)
are seen as ``Tensor.__setitem__``/``copy_`` calls and kept pending until the
tensor is next used (:mod:`tracer.record.capture.writes`).  Recording only reads.  If recording an op fails, the op
is recorded as an opaque step instead and named in the warning.  Module
paths come from torch's global forward hooks
(``register_module_forward_pre_hook``/``register_module_forward_hook``).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from tracer.record.capture import opened, ops, writes
from tracer.record.capture.ops.common import Call, Handler, Unsupported, has_complex
from tracer.record.capture.session import Session
from tracer.record.capture.site import stored_name

SILENT = {"__get__", "__set__", "__setitem__", "register_buffer", "requires_grad_", "retain_grad"}
INITIALISERS = {"__init__", "reset_parameters", "_reset_parameters", "_fill_padding_idx_with_zero"}
"""Functions of ``torch.nn`` that make a module's weights (a slice they take is part of making it)."""


def key_of(func: Any) -> str:
    """The name handlers are looked up by (a property's own name for ``x.T``)."""
    name = str(getattr(func, "__name__", repr(func)))
    if name in ("__get__", "__set__"):
        owner = getattr(func, "__self__", None)
        return str(getattr(owner, "__name__", name)) if name == "__get__" else name
    return name


class Mode(TorchFunctionMode):
    """Records every torch call made while it is active into a :class:`Session`."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.s = session

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if torch.compiler.is_compiling():  # torch compiling a graph (FlexAttention does, even when called eagerly)
            return func(*args, **kwargs)
        key = key_of(func)
        if key in opened.OPEN and opened.can_open(func):
            return opened.run(self, self.s, func, args, kwargs)
        rng = torch.get_rng_state() if key in ops.DRAWS else None
        if self._writes(key, args):
            if key == "__setitem__":
                self._safe(lambda: writes.written_back(self.s, args[0], args[1], args[2]))
            self._safe(lambda: writes.prepare(self.s, args[0]))
            out = func(*args, **kwargs)
            self._record(Call(key, func, args, kwargs, args[0]), writes.setitem)
            self._safe(lambda: writes.through_view(self.s, args[0]))
            return out
        if _inplace(key) and key not in ops.INITS and args and isinstance(args[0], torch.Tensor):
            self._safe(lambda: self.s.var(args[0]))  # snapshot what an in-place op overwrites
        out = func(*args, **kwargs)
        if key == "__getitem__" and self._initialising(args):  # ``self.weight[padding_idx].fill_(0)``
            self.s.note_made(out, "a slice of a weight being initialised")
            return out
        if key in ops.FACTORIES and isinstance(out, torch.Tensor):
            owner = "Tensor" if key.startswith("new_") else "torch"  # ``scores.new_full((T, T), -inf)``
            self.s.note_made(out, f"{owner}.{key}({', '.join(map(str, out.shape))})", stored_name(1))
            return out
        if key in ops.INITS:
            first = next((a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)
            if first is not None and self.s.known(first) is None:
                where = "nn.init." if "init" in str(getattr(func, "__module__", "")) else ""
                self.s.note_made(first, f"{where}{key}")
                return out
        if not _has_tensor(out) or key in SILENT or not _plain(args, kwargs, out):
            return out
        self._record(Call(key, func, args, kwargs, out, rng))
        if _inplace(key) and args and isinstance(args[0], torch.Tensor):
            self._safe(lambda: writes.through_view(self.s, args[0]))
        return out

    def _writes(self, key: str, args: tuple[Any, ...]) -> bool:
        """``t[i] = v``, or ``t.copy_(v)`` of a value the code computed (not a parameter's initialisation)."""
        if not args or not isinstance(args[0], torch.Tensor):
            return False
        if key == "__setitem__":
            return len(args) == 3
        if key != "copy_" or len(args) < 2 or not isinstance(args[1], torch.Tensor):
            return False
        return self.s.known(args[1]) is not None or self.s.known(args[0]) is not None

    def _initialising(self, args: tuple[Any, ...]) -> bool:
        """A slice of a new parameter taken by a torch module's initialisation, under ``no_grad``.

        ``nn.Embedding(…, padding_idx=p)`` zeroes its row ``p`` after drawing it:
        that is part of how the weight is made, as the draw is, not a step of
        the code; the weight is recorded when the code first uses it, zeros
        included.
        """
        if torch.is_grad_enabled() or not args or not isinstance(args[0], torch.nn.Parameter):
            return False
        if self.s.known(args[0]) is not None:
            return False
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_name in INITIALISERS and str(frame.f_globals.get("__name__", "")).startswith("torch.nn"):
                return True
            frame = frame.f_back  # type: ignore[assignment]
        return False

    def _record(self, call: Call, handler: Handler | None = None) -> None:
        handler = handler or ops.HANDLERS.get(call.key)
        start = len(self.s.rec)
        with torch.no_grad():
            try:
                if handler is None:
                    raise Unsupported("no decomposition")
                if has_complex(call):  # complex arithmetic is not decomposed: its parts are stored side by side
                    raise Unsupported("complex numbers")
                handler(self.s, call)
            except Exception as e:
                why = str(e) if isinstance(e, Unsupported) else f"{type(e).__name__}: {e}"
                self.s.undo(start)  # nothing half-recorded stays behind
                try:
                    ops.opaque(self.s, call, why)
                except Exception:  # recording must never break the code it watches: listed, and left out
                    if call.key not in self.s.opaque:
                        self.s.opaque.append(call.key)

    def _safe(self, fn: Any) -> None:
        # a snapshot that fails leaves the op to be recorded opaquely
        with torch.no_grad(), contextlib.suppress(Exception):
            fn()


def _plain(args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> bool:
    """Only ordinary tensors with data are recorded: not the wrapped tensors of a ``vmap``/``grad`` transform
    (FlexAttention's ``create_block_mask`` runs the mask function under ``vmap``), not meta or fake tensors.

    Torch's own transforms call back into the mode with these; they are its internals, not the user's steps.
    """
    for a in (*args, *kwargs.values(), *(out if isinstance(out, tuple | list) else (out,))):
        for t in a if isinstance(a, tuple | list) else (a,):
            if not isinstance(t, torch.Tensor):
                continue
            if t.device.type != "cpu" or torch._C._functorch.is_functorch_wrapped_tensor(t) or t.is_sparse:
                return False
            if type(t) not in (torch.Tensor, torch.nn.Parameter, torch.nn.parameter.Buffer):
                return False
    return True


def _has_tensor(out: Any) -> bool:
    if isinstance(out, torch.Tensor):
        return True
    return isinstance(out, tuple | list) and any(isinstance(t, torch.Tensor) for t in out)


def _inplace(key: str) -> bool:
    """``add_``, ``masked_fill_``, ``__iadd__``: ops that overwrite their first operand."""
    if key.startswith("__"):
        return key.startswith("__i") and key not in ("__index__", "__int__", "__invert__", "__init__", "__iter__")
    return key.endswith("_")
