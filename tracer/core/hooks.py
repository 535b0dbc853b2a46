"""Services a trace offers but cannot provide itself: rich display, saving to a file, and verification.

The trace sits at the bottom of the flow, so it may not import the layers
that know how to draw it (:mod:`tracer.present.display`) or how to write it
(:mod:`tracer.core.serialize`, which itself imports the trace), nor the
module that recomputes it (:mod:`tracer.core.verify`, which reads traces).  Instead the
package's top (``tracer/__init__.py``, which Python runs before any
submodule) registers one function per service here, and
``Trace._repr_mimebundle_``, ``Step._repr_mimebundle_``, both ``__repr__``
(:mod:`tracer.core.reprs`, which needs :mod:`tracer.core.portable`, itself
built on the trace), ``Trace.save`` and ``Trace.verify`` call through this
table.  The registered functions import their modules
lazily, so ``import tracer`` stays cheap.

    >>> from tracer.core import hooks
    >>> sorted(hooks.registered())
    ['check_text', 'display', 'repr', 'save', 'verify']

``check_text`` is the same arrangement for a student-check result
(:meth:`tracer.compare.check.result.CheckResult.explain`), whose text is
written by :mod:`tracer.present.checktext`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_SERVICES: dict[str, Callable[..., Any]] = {}


def register(name: str, fn: Callable[..., Any]) -> None:
    """Provide service ``name`` (``"display"``, ``"repr"``, ``"save"``, ``"verify"``, ...); the last one counts."""
    _SERVICES[name] = fn


def registered() -> tuple[str, ...]:
    """The names of the services provided so far."""
    return tuple(_SERVICES)


def call(name: str, *args: Any) -> Any:
    """Run service ``name``; a RuntimeError if no layer above has registered it."""
    try:
        fn = _SERVICES[name]
    except KeyError:
        raise RuntimeError(f"no {name!r} service is registered (import tracer first)") from None
    return fn(*args)
