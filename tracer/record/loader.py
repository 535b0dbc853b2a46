"""Find the function a user names on the command line: ``module:function`` or ``path/to/file.py:function``.

Used by ``--pipeline`` (a teacher's traced pipeline) and ``--torch`` (ordinary
torch code to capture).  The named code is code the user chose to run; any
failure to import it is reported in one line (:class:`~tracer.errors.InputError`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tracer.errors import InputError
from tracer.message import Message


def split(spec: str, arg: str) -> tuple[str, str]:
    """``(where, function)`` of a spec, or a one-line error naming the argument ``arg`` that carried it."""
    where, sep, func = spec.rpartition(":")
    if not sep or not where or not func:
        raise InputError(Message("lessons.wants_module_function_or", spec=repr(spec)), arg=arg)
    return where, func


def module(where: str, what: str) -> ModuleType:
    """Import ``where``: a ``.py`` file by path, else a module from ``sys.path`` and the current folder."""
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise InputError(Message("lessons.file_does_not_exist", what=what, where=where))
            loader = importlib.util.spec_from_file_location(f"attn_trace_{what}_{path.stem}", path)
            assert loader is not None and loader.loader is not None
            mod = importlib.util.module_from_spec(loader)
            sys.modules[loader.name] = mod  # as an import does: dataclasses and pickling look the module up there
            try:
                loader.loader.exec_module(mod)
            except BaseException:
                sys.modules.pop(loader.name, None)
                raise
            return mod
        if "" not in sys.path:
            sys.path.insert(0, "")
        return importlib.import_module(where)
    except InputError:
        raise
    except KeyboardInterrupt:  # the person at the keyboard, not the user's code
        raise
    except BaseException as e:  # the user's code: any failure, SystemExit at import included, in one line
        raise InputError(Message("lessons.cannot_import", what=what, where=where, error=describe(e))) from None


def describe(e: BaseException) -> str:
    """An exception in one line: its type and the first line of its message."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}"[:300] if text else type(e).__name__


def short_name(where: str, func: str) -> str:
    """``file.function`` or ``module.function``: how a trace from this spec is named."""
    return f"{Path(where).stem if where.endswith('.py') else where.rsplit('.', 1)[-1]}.{func}"
