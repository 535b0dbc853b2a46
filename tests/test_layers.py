"""The package's layers, read from the source: every import points down the flow, and none goes round in a circle.

Layers, bottom to top (``docs/architecture.md``)::

    base     tracer.errors, tracer.version
    core     tracer.core       the trace, ids, numbers, files
    record   tracer.record     torch: inputs, recorder, pipelines
    compare  tracer.compare    diffs of two traces
    present  tracer.present    views, figures, renderers, explain, notebooks
    top      tracer (the facade), tracer.api, tracer.cli, tracer.testing, tracer.pytest_plugin

Every import counts, at module level or inside a function; only imports
under ``if TYPE_CHECKING:`` (annotations, never run) are left out.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tracer"
LAYERS = (
    ("base", ("tracer.errors", "tracer.version")),
    ("core", ("tracer.core",)),
    ("record", ("tracer.record",)),
    ("compare", ("tracer.compare",)),
    ("present", ("tracer.present", "tracer.templates")),
    ("top", ("tracer",)),
)


def layer(module: str) -> int:
    """The layer a dotted module name sits in (the longest matching prefix wins)."""
    best, found = -1, 0
    for rank, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), rank
    assert best >= 0, module
    return found


def modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """Like ast.walk, skipping the bodies of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child):
            yield from (n for o in child.orelse for n in [o, *_walk(o)])
            continue
        yield child
        yield from _walk(child)


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(imported tracer module, line) for each import in the file; ``from pkg import mod`` names the module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for t in targets:
            if t == "tracer" or t.startswith("tracer."):
                yield t, node.lineno


def graph() -> dict[str, set[str]]:
    """Module -> the tracer modules it imports."""
    known = modules()
    return {name: {t for t, _ in imports(name, path, known)} - {name} for name, path in known.items()}


def test_every_module_has_a_layer() -> None:
    names = [LAYERS[layer(m)][0] for m in modules()]
    assert {"base", "core", "record", "compare", "present", "top"} <= set(names)


def test_imports_point_down_the_layers() -> None:
    known = modules()
    wrong = []
    for name, path in known.items():
        for target, line in imports(name, path, known):
            if layer(target) > layer(name):
                rel = path.relative_to(ROOT)
                wrong.append(f"{rel}:{line}: {name} ({LAYERS[layer(name)][0]}) imports {target}")
    assert not wrong, "imports pointing up the layers:\n" + "\n".join(wrong)


def test_no_import_circles() -> None:
    g = graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    circles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(g.get(m, ())):
            if state.get(t) == 1:
                circles.append([*path[path.index(t) :], t])
            elif t not in state:
                visit(t, [*path, t])
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m, [m])
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The walk finds imports in function bodies and skips TYPE_CHECKING blocks."""
    f = tmp_path / "m.py"
    f.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tracer.api import run\n"
        "def f():\n    from tracer.present import display\n",
        encoding="utf-8",
    )
    found = [t for t, _ in imports("tracer.core.m", f, modules())]
    assert found == ["tracer.present.display"]
    assert layer("tracer.core.m") < layer("tracer.present.display")


@pytest.mark.parametrize(
    ("statement", "banned"),
    [
        ("import tracer", ("numpy", "torch", "matplotlib", "jinja2", "click")),
        ("import tracer.core.trace, tracer.core.serialize", ("torch", "matplotlib", "jinja2", "click")),
        ("import tracer.compare.differ, tracer.compare.diffreport", ("torch", "matplotlib", "jinja2", "click")),
        ("import tracer.present.explain", ("torch", "matplotlib", "jinja2", "click")),
    ],
)
def test_lower_layers_import_nothing_heavy(statement: str, banned: tuple[str, ...]) -> None:
    code = f"import sys; {statement}; print(sorted(m for m in {banned!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
