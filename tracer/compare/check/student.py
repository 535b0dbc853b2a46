"""Load the student's code, build it as the lesson does, and run it with its tensors recorded.

The student's code is code the user chose to run: it runs, and whatever goes
wrong in it (an import error, a constructor that wants other arguments, a
crash in ``forward``) becomes a :class:`StudentError`: one line for the
message, the traceback kept for ``--verbose``.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tracer.compare.check import deadline
from tracer.compare.check.model import Seen
from tracer.core.trace import Trace
from tracer.errors import InputError, TracerError
from tracer.message import Arg, Message


class StudentError(InputError):
    """The student's code could not be loaded, built or run; ``details`` holds the traceback.

    ``crash`` is the exception alone (``"RuntimeError: ..."``, or a message
    that adds the student's line), as another message quotes it; ``cause``
    is its English text.
    """

    def __init__(self, message: Message, details: str = "", cause: Arg = "") -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        self.crash: Arg = cause or message
        self.cause = str(self.crash)


@dataclass
class Run:
    """One run of the student's code: the tensors it made, what it returned, and the captured trace."""

    seen: list[Seen]
    output: Any
    error: StudentError | None = None
    trace: Trace | None = None


def validate(spec: str) -> tuple[Path, str]:
    """The file and the name of ``FILE.py:NAME``, or an :class:`InputError` naming what is wrong."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where.endswith(".py") or not name:
        raise InputError(Message("trouble.spec_form", spec=spec))
    path = Path(where)
    if not path.is_file():
        raise InputError(Message("trouble.no_file", file=where))
    return path, name


def load(spec: str, timeout: float | None = None) -> tuple[Any, str]:
    """The object ``NAME`` of ``FILE.py:NAME`` and the file's path (the import limited to ``timeout`` seconds)."""
    path, name = validate(spec)
    where = str(path)
    loader = importlib.util.spec_from_file_location(f"attn_trace_student_{path.stem}", path)
    if loader is None or loader.loader is None:
        raise InputError(Message("trouble.not_python", file=where))
    module = importlib.util.module_from_spec(loader)
    try:
        with deadline.limit(deadline.SECONDS if timeout is None else timeout, Message("trouble.importing", file=where)):
            loader.loader.exec_module(module)
    except (KeyboardInterrupt, InputError):
        raise
    except BaseException as e:  # the student's file: any failure, SystemExit included, is one line
        said = Message("trouble.import_failed", file=where, error=_one_line(e))
        raise StudentError(said, traceback.format_exc()) from None
    if not hasattr(module, name):
        raise InputError(Message("trouble.defines_no", file=where, name=name))
    return getattr(module, name), str(path)


def source_of(obj: Any) -> str | None:
    """The file an object was defined in, when Python knows it."""
    try:
        return inspect.getsourcefile(obj)
    except TypeError:
        return None


def construct(cls: Any, args: Sequence[Any], names: Sequence[str], seed: int) -> torch.nn.Module:
    """``cls(*args)`` under ``torch.manual_seed(seed)``, as the book builds its modules."""
    if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
        raise InputError(Message("trouble.not_module_class", name=name_of(cls), params=_shape(names)))
    try:
        inspect.signature(cls).bind(*args)
    except TypeError as e:
        said = Message("trouble.bad_arguments", name=name_of(cls), params=_shape(names), error=str(e))
        raise InputError(said) from None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        try:
            module = cls(*args)
        except (KeyboardInterrupt, deadline.Overtime):
            raise
        except BaseException as e:  # SystemExit too: the student's code, not ours
            said = Message("trouble.raised", who=f"{name_of(cls)}{_shape(names)}", error=_failure(e))
            raise StudentError(said, traceback.format_exc()) from None
    return module


Arguments = Callable[[torch.Tensor], tuple[tuple[Any, ...], dict[str, Any]]] | None
"""What ``fn`` is called with on the tokens ``x`` (:func:`.forwardargs.bind`); None: ``fn(x)``."""


def fitted(fn: Any, x: torch.Tensor) -> torch.Tensor:
    """``x`` as the module ``fn`` takes it: contiguous, in the dtype and on the device of its parameters.

    A slice of the lesson's tokens (the shorter run's ``x[..., :4, :]``, a
    generation's new tokens) is a view with the strides of the whole; code
    that calls ``.view`` on its input (GPT-2's ``Conv1D``) needs it laid out
    afresh, as its own callers' tensors are.  A module in half precision, or
    on another device, gets the tokens there.
    """
    first = next(iter(fn.parameters()), None) if isinstance(fn, torch.nn.Module) else None
    if first is not None and first.is_floating_point():
        x = x.to(dtype=first.dtype, device=first.device)
    return x.contiguous()


def _arguments(fn: Any, x: torch.Tensor, arguments: Arguments) -> tuple[tuple[Any, ...], dict[str, Any]]:
    x = fitted(fn, x)
    return arguments(x) if arguments is not None else ((x,), {})


def run(fn: Callable[..., Any], x: torch.Tensor, seed: int | None, arguments: Arguments = None) -> Run:
    """Call ``fn(x)`` (or with ``arguments(x)``) under torch capture; a crash is kept in the run, not raised."""
    from tracer.compare.check.captured import capture, seen

    args, kwargs = _arguments(fn, x, arguments)  # made before the capture: not the student's tensors
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        if seed is not None:
            torch.manual_seed(seed)
        try:
            out, trace, sites = capture(fn, *args, **kwargs)
        except (TracerError, KeyboardInterrupt, deadline.Overtime):  # ours, the keyboard's, the clock's
            raise
        except BaseException as e:  # SystemExit too: the student's code, not ours
            return Run([], None, raised(name_of(fn), e))
    return Run(seen(trace, sites), batch_first(out, arguments), None, trace)


def call(fn: Callable[..., Any], x: torch.Tensor, seed: int | None, arguments: Arguments = None) -> Run:
    """Call ``fn(x)`` (or with ``arguments(x)``) without capture (only its result is compared); a crash is kept."""
    args, kwargs = _arguments(fn, x, arguments)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        if seed is not None:
            torch.manual_seed(seed)
        try:
            out = fn(*args, **kwargs)
        except (KeyboardInterrupt, deadline.Overtime):
            raise
        except BaseException as e:  # SystemExit too: the student's code, not ours
            return Run([], None, raised(name_of(fn), e))
    return Run([], batch_first(out, arguments))


def batch_first(out: Any, arguments: Arguments) -> Any:
    """The result of a call whose tokens went in sequence first (:class:`.forwardargs.SequenceFirst`), batch first.

    A sequence-first module (labml's, ``nn.MultiheadAttention`` without
    ``batch_first``) takes ``(T, b, d)`` and returns ``(T, b, d)``: its result
    is read back as ``(b, T, d)``, the lesson's layout, so every run compares
    it as any other module's.  Any other call's result is handed back as it is.
    """
    if not getattr(arguments, "seq_first", False):
        return out
    first = returned(out)
    if not isinstance(first, torch.Tensor) or first.ndim != 3:
        return out
    back = first.transpose(0, 1)
    return (back, *out[1:]) if first is not out else back


def returned(out: Any) -> Any:
    """The result as its caller reads it: the first element of a tuple or list that starts with a tensor.

    Attention code often returns more than its output: Hugging Face's layers
    ``(attn_output, attn_weights)`` (the weights may be None), others
    ``(output, cache)``, a flash kernel ``(O, L)`` with its logsumexp.  Every
    caller takes the first element as the output, and so does the check; any
    other result is handed back as it is (and is then not a tensor).
    """
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        return out[0]
    return out


def output_array(out: Any, what: str) -> Any:
    """The returned tensor (:func:`returned`) as a float64 array (a non-tensor result is an error)."""
    out = returned(out)
    if not isinstance(out, torch.Tensor):
        raise InputError(Message("trouble.not_tensor", who=what, type=type(out).__name__))
    if not out.is_floating_point():
        raise InputError(Message("trouble.not_float_dtype", who=what, dtype=str(out.dtype)))
    return out.detach().to(torch.float64).cpu().numpy().copy()


def name_of(obj: Any) -> str:
    """What messages call the student's ``obj``: its qualified name, its name, or its type's name."""
    return str(getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__)


def _shape(names: Sequence[str]) -> str:
    return f"({', '.join(names)})"


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def _failure(e: BaseException) -> Arg:
    """The exception in one line, with the student's line that raised it (``… at attn.py:14``)."""
    where = crash_site(e)
    return Message("trouble.crash_at", error=_one_line(e), where=where) if where else _one_line(e)


def raised(who: Arg, e: BaseException) -> StudentError:
    """The error for the student's ``e`` raised in ``who`` (a name, or a message saying which call)."""
    return StudentError(Message("trouble.raised", who=who, error=_failure(e)), traceback.format_exc(), _one_line(e))


def crash_site(e: BaseException) -> str:
    """``file.py:LINE`` of the innermost frame of ``e``'s traceback in the user's code (not torch's, not ours)."""
    from tracer.record.capture.site import user_file

    frames = [f for f in traceback.extract_tb(e.__traceback__) if user_file(f.filename)]
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""


def clean_modules(prefix: str = "attn_trace_student_") -> None:
    """Forget loaded student modules (each check loads its file afresh)."""
    for key in [k for k in sys.modules if k.startswith(prefix)]:
        del sys.modules[key]
