"""The package's layers, read from the source: every import points down the flow, and none goes round in a circle.

Layers, bottom to top (``docs/architecture.md``)::

    base     tracer.errors, tracer.message, tracer.version
    core     tracer.core       the trace, ids, numbers, files
    record   tracer.record     torch: inputs, recorder, pipelines
    compare  tracer.compare    diffs of two traces
    present  tracer.present    views, figures, renderers, explain, notebooks
    lessons  tracer.lessons    one package per lesson: its pipeline, narratives, notebook cells
    top      tracer (the facade), tracer.api, tracer.cli, tracer.testing, tracer.pytest_plugin

The lessons sit above the engines they use, and nothing imports them: the
engines and the top layer reach a lesson through the registry
(``tracer.record.registry``, the entry point group ``attn_trace.lessons``),
as they reach a teacher's lesson from another package.

Every import counts: at module level, inside a function, and under ``if
TYPE_CHECKING:``.  An annotation-only import never runs, but it still says
the module needs the other one to be understood, so two modules that name
each other that way form a circle as real as any other (``Trace.verify`` once
imported ``verify`` lazily while ``verify`` imported ``Trace`` for its
annotations; the check missed it while it skipped such blocks).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tracer"
LAYERS = (
    ("base", ("tracer.errors", "tracer.message", "tracer.version")),
    ("core", ("tracer.core",)),
    ("record", ("tracer.record",)),
    ("compare", ("tracer.compare",)),
    ("present", ("tracer.present", "tracer.templates")),
    ("lessons", ("tracer.lessons",)),
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


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(imported tracer module, line) for each import in the file; ``from pkg import mod`` names the module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
    assert {"base", "core", "record", "compare", "present", "lessons", "top"} <= set(names)


def test_imports_point_down_the_layers() -> None:
    known = modules()
    wrong = []
    for name, path in known.items():
        for target, line in imports(name, path, known):
            if layer(target) > layer(name):
                rel = path.relative_to(ROOT)
                wrong.append(f"{rel}:{line}: {name} ({LAYERS[layer(name)][0]}) imports {target}")
    assert not wrong, "imports pointing up the layers:\n" + "\n".join(wrong)


def test_nothing_imports_a_lesson() -> None:
    """A lesson is reached through the registry only, never imported, not even by the top layer."""
    known = modules()
    wrong = []
    for name, path in known.items():
        if layer(name) == layer("tracer.lessons"):
            continue
        for target, line in imports(name, path, known):
            if layer(target) == layer("tracer.lessons"):
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {name} imports {target}")
    assert not wrong, "modules that import a lesson instead of asking the registry:\n" + "\n".join(wrong)


def circles(g: Mapping[str, set[str]]) -> list[list[str]]:
    """Every import circle a depth-first walk of ``g`` meets, each as the modules round it (first repeated last)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    found: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(g.get(m, ())):
            if state.get(t) == 1:
                found.append([*path[path.index(t) :], t])
            elif t not in state:
                visit(t, [*path, t])
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m, [m])
    return found


def test_no_import_circles() -> None:
    found = circles(graph())
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The walk finds imports in function bodies and in TYPE_CHECKING blocks."""
    f = tmp_path / "m.py"
    f.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tracer.api import run\n"
        "def f():\n    from tracer.present import display\n",
        encoding="utf-8",
    )
    found = sorted(t for t, _ in imports("tracer.core.m", f, modules()))
    assert found == ["tracer.api", "tracer.present.display"]
    assert layer("tracer.core.m") < layer("tracer.present.display")


def test_the_checker_sees_a_circle_through_an_annotation_and_a_lazy_import(tmp_path: Path) -> None:
    """The shape the trace and its verification once had: a function-level import one way, TYPE_CHECKING back."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def verify(self):\n    from tracer.core.b import check\n    return check(self)\n", encoding="utf-8")
    b.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tracer.core.a import Trace\n", encoding="utf-8"
    )
    known = {"tracer.core.a": a, "tracer.core.b": b}
    g = {name: {t for t, _ in imports(name, path, known)} for name, path in known.items()}
    assert circles(g) == [["tracer.core.a", "tracer.core.b", "tracer.core.a"]]


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


def test_the_wheel_ships_every_package_folder() -> None:
    """A folder of ``tracer/`` missing from pyproject's package list would be missing from an installed wheel."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(ROOT).parts) for p in PACKAGE.rglob("__init__.py")}
    assert folders - listed == set()


def documented_modules() -> dict[str, set[str]]:
    """Layer -> the modules the table "What each layer holds" of ``docs/architecture.md`` names (last part of each)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("## What each layer holds", 1)[1].split("\n## ", 1)[0]
    out: dict[str, set[str]] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] in dict(LAYERS):
            named = [n for n in cells[1].split("`")[1::2]]
            out[cells[0]] = {n.rstrip("/").rsplit("/", 1)[-1] for n in named}
    return out


def code_modules() -> dict[str, set[str]]:
    """Layer -> the modules and sub-packages directly in its folders (``tracer`` for the package's own ``__init__``)."""
    base = {"errors", "message", "version"}
    folders = {"core": "core", "record": "record", "compare": "compare", "present": "present"}

    def inside(folder: Path) -> set[str]:
        files = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
        return files | {p.parent.name for p in folder.glob("*/__init__.py")}

    out = {layer: inside(PACKAGE / folder) for layer, folder in folders.items()}
    out["base"] = base
    out["top"] = (inside(PACKAGE) - base - set(folders) - {"lessons"}) | {"tracer", "__main__"}
    return out


def test_the_architecture_table_names_every_module_of_each_layer() -> None:
    """``docs/architecture.md`` lists each layer's modules: a module added or gone without the table fails here."""
    documented = documented_modules()
    for layer, modules in code_modules().items():
        assert documented.get(layer) == modules, (layer, modules ^ documented.get(layer, set()))


LESSON_NAMES = frozenset(("simple", "trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache"))
LESSON_NAME_LITERALS = 11
"""String constants equal to a lesson name outside ``tracer/lessons/`` (193 before the lessons had folders, 149 after,
18 once each lesson's check description moved into its folder and the pages, notebooks and command line asked the
lessons instead, 11 once lesson rope's mistakes came from its folder).

Each is a place an engine knows a lesson by name (``spec.name == "rope"``);
the number may only fall.  Lower it when a change removes some."""


def lesson_name_literals() -> dict[str, int]:
    """File -> how many AST string constants in it are a built-in lesson's name, outside ``tracer/lessons/``."""
    out: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if (PACKAGE / "lessons") in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        n = sum(1 for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in LESSON_NAMES)
        if n:
            out[str(path.relative_to(ROOT))] = n
    return out


def test_the_engines_name_lessons_no_more_often_than_before() -> None:
    found = lesson_name_literals()
    worst = ", ".join(f"{f} {n}" for f, n in sorted(found.items(), key=lambda kv: -kv[1])[:5])
    total = sum(found.values())
    assert total <= LESSON_NAME_LITERALS, f"{total} lesson names outside the lessons: {worst}"


def test_the_count_sees_a_lesson_name_and_only_a_name(tmp_path: Path) -> None:
    """The count reads constants, so a name in a docstring sentence or a comment does not count, ``"rope"`` does."""
    tree = ast.parse('"""Lesson rope."""\nx = "rope"  # simple\ny = spec.name == "flash"\nz = "ropes"\n')
    hits = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in LESSON_NAMES]
    assert hits == ["rope", "flash"]


CHECK = ("tracer/compare/check/", "tracer/checking.py", "tracer/cli/check.py")
"""The check, which still knows its lessons by name until they carry their own check description (a ceiling above)."""

ALLOWED = {
    "tracer/api.py": 1,  # DEFAULT_LESSON: the lesson traced when none is named (the CLI's --lesson default too)
    "tracer/core/validate.py": 1,  # a file saying lesson "simple" must hold the nodes its walk-through reads
    "tracer/record/blocks/masks.py": 1,  # "causal": the causal mask's softmax node, a word and not the lesson
    "tracer/record/capture/ops/attention.py": 1,  # "causal": torch's is_causal as a node attribute
    "tracer/present/attention_parts.py": 1,  # "causal": the part of a captured attention that node is
    "tracer/present/captured.py": 1,  # "causal": the same part, named among the parts of sums
}
"""Every lesson-name constant the engines may hold outside the check, and why: nothing else, and no more."""


def test_no_engine_outside_the_check_names_a_lesson() -> None:
    """Pages, notebooks, figures, the command line and recording ask a lesson (its page parts, its options).

    A new ``"rope"`` anywhere below ``tracer/`` but outside the lessons and
    the check fails here, even when another one went away elsewhere.
    """
    found = {f: n for f, n in lesson_name_literals().items() if not f.startswith(CHECK)}
    assert found == ALLOWED


def test_the_one_default_lesson_is_the_api_constant() -> None:
    """The allowed name in ``tracer/api.py`` is the value of ``DEFAULT_LESSON``, and the CLI uses that constant."""
    tree = ast.parse((PACKAGE / "api.py").read_text(encoding="utf-8"))
    named = [
        node.targets[0].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and node.value.value in LESSON_NAMES
        and isinstance(node.targets[0], ast.Name)
    ]
    assert named == ["DEFAULT_LESSON"]
    assert "DEFAULT_LESSON" in (PACKAGE / "cli" / "options.py").read_text(encoding="utf-8")
