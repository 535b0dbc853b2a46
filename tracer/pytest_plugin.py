"""pytest plugin: pin a trace in a snapshot file and diff against it.

Installed with the package through the ``pytest11`` entry point
(``attn_trace = "tracer.pytest_plugin"``); in a source tree load it with
``-p tracer.pytest_plugin``.  Loading it imports no torch and no numpy.

    def test_tutorial(trace_snapshot):
        trace_snapshot.check(tracer.trace_self_attention())

The snapshot lives beside the test module, in
``__trace_snapshots__/<module>/<test>.json`` (for ``tests/test_x.py`` that is
``tests/__trace_snapshots__/test_x/<test>.json``); a test in a class is
``<Class>.<test>``, and parametrized ids keep their brackets while any
character unsafe in a file name becomes ``_``.  A second ``check`` in the
same test writes ``<test>.2.json``, or pass ``name=``.

* a missing snapshot fails (the obtained trace is written) unless pytest runs
  with ``--trace-snapshot-update``, which writes it;
* a trace that differs beyond tolerance fails with the diff report and writes
  ``<name>.obtained.json`` beside the stored file; with
  ``--trace-snapshot-update`` it replaces the stored file instead;
* a matching trace passes and removes a stale ``.obtained.json``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tracer.core.trace import Trace

SNAPSHOT_DIR = "__trace_snapshots__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-\[\]]+")
_MAX_NAME = 120


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--trace-snapshot-update``."""
    group = parser.getgroup("attn-trace")
    group.addoption(
        "--trace-snapshot-update",
        action="store_true",
        default=False,
        help="Write trace snapshots that are missing or differ, instead of failing.",
    )


def safe_name(test: str) -> str:
    """A file-name-safe form of a test's name, at most 120 characters, distinct for distinct names.

    A name that is already safe is kept (``test_x[a-b]``); one that needed a
    character replaced gets a short hash of the original too
    (``test_x[a/b]`` -> ``test_x[a_b]-1f3a…``), so ``query/2`` and ``query 2``
    never share a snapshot file.
    """
    name = _UNSAFE.sub("_", test).strip(".") or "test"
    digest = hashlib.sha256(test.encode("utf-8")).hexdigest()[:12]
    if name != test or len(name) > _MAX_NAME:
        name = f"{name[: _MAX_NAME - 13]}-{digest}"
    return name


class TraceSnapshot:
    """The ``trace_snapshot`` fixture: :meth:`check` compares a trace with its stored snapshot."""

    def __init__(self, folder: Path, test: str, update: bool, root: Path | None = None) -> None:
        self.folder = folder
        self.root = root
        self.test = safe_name(test)
        self.update = update
        self._calls = 0

    def path(self, name: str | None = None) -> Path:
        """The snapshot file for the next :meth:`check` (or for ``name``)."""
        if name is not None:
            return self.folder / f"{self.test}.{safe_name(name)}.json"
        suffix = f".{self._calls + 1}" if self._calls else ""
        return self.folder / f"{self.test}{suffix}.json"

    def check(
        self, trace: Trace, rtol: float | None = None, atol: float | None = None, name: str | None = None
    ) -> None:
        """Fail unless ``trace`` equals the stored snapshot.

        By default every traced primitive must match bit for bit, and a
        library result (a BLAS matrix product, torch's softmax) must stay
        within the bound its check carries, whatever kernel ran on either
        machine: the two traces are compared exactly in their
        :func:`tracer.core.portable.canonical` form.  With ``rtol`` or
        ``atol`` given, every value is compared within that tolerance
        instead, as :func:`tracer.diff` does.
        """
        __tracebackhide__ = True
        from tracer.compare.differ import DEFAULT_ATOL, DEFAULT_RTOL, diff
        from tracer.core import portable
        from tracer.core.files import write_atomic
        from tracer.core.serialize import dumps, load
        from tracer.errors import TracerError

        path = self.path(name)
        self._calls += 1
        obtained = path.with_name(path.name[: -len(".json")] + ".obtained.json")
        shown, shown_obtained = self._show(path), self._show(obtained)
        if path.exists():
            try:
                if rtol is None and atol is None:
                    stored = portable.canonical(load(path))
                    result = diff(stored, portable.canonical(trace), rtol=0.0, atol=0.0)
                else:
                    result = diff(
                        path,
                        trace,
                        rtol=DEFAULT_RTOL if rtol is None else rtol,
                        atol=DEFAULT_ATOL if atol is None else atol,
                    )
            except TracerError as e:
                if not self.update:
                    pytest.fail(f"cannot read trace snapshot {shown}: {e}", pytrace=False)
            else:
                if result.equal:
                    obtained.unlink(missing_ok=True)
                    return
                if not self.update:
                    write_atomic(obtained, dumps(trace).encode("utf-8"))
                    result = replace(result, a_name=f"{shown} (stored)", b_name="the trace checked (obtained)")
                    pytest.fail(
                        f"trace differs from snapshot {shown}\n{result.text()}"
                        f"obtained trace written to {shown_obtained}; "
                        "rerun with --trace-snapshot-update to accept it",
                        pytrace=False,
                    )
        elif not self.update:
            write_atomic(obtained, dumps(trace).encode("utf-8"))
            pytest.fail(
                f"no trace snapshot {shown}; obtained trace written to {shown_obtained}; "
                "run with --trace-snapshot-update to store it",
                pytrace=False,
            )
        write_atomic(path, dumps(trace).encode("utf-8"))
        obtained.unlink(missing_ok=True)

    def _show(self, path: Path) -> str:
        """``path`` relative to the rootdir when it is inside it, for messages."""
        if self.root is not None and path.is_relative_to(self.root):
            return str(path.relative_to(self.root))
        return str(path)


@pytest.fixture
def trace_snapshot(request: pytest.FixtureRequest) -> TraceSnapshot:
    """Compare traces with snapshots stored beside the test module (see the module docs)."""
    module = Path(str(request.node.path))
    test = request.node.nodeid.split("::", 1)[-1].replace("::", ".")
    update = bool(request.config.getoption("trace_snapshot_update"))
    return TraceSnapshot(module.parent / SNAPSHOT_DIR / module.stem, test, update, request.config.rootpath)
