"""The fenced code blocks of the README and docs/*.md, and a runner that executes the Python ones.

A ```python block runs as written, after the blocks before it in the same
file (one namespace per file, as a reader pastes them into one session).  A
top-level expression whose comment is a Python literal (``len(t)  # 1689``)
must equal it; one whose comment is a repr (``t  # Trace(lesson=...)``) must
read like it, ``...`` standing for any text.  Other comments are prose.

A block may need a file a reader would have (a student's ``attn.py``): an
HTML comment just above it, ``<!-- docs-test: attn.py is tests/book_attention.py -->``,
copies that file of the checkout into the folder the blocks run in.

Run as a script (``python tests/docblocks.py BLOCKS.json``) it executes one
file's blocks in the current folder and exits 1 with the first failure.
"""

from __future__ import annotations

import ast
import io
import json
import linecache
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FENCE = re.compile(r"^```(\w*)\s*$")
SETUP = re.compile(r"^<!-- docs-test: (\S+) is (\S+) -->$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, the line its code starts on, its code, and files it needs."""

    lang: str
    line: int
    code: str
    files: tuple[tuple[str, str], ...] = ()


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order."""
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        files: list[tuple[str, str]] = []
        j = i - 1
        while j >= 0 and (s := SETUP.match(lines[j])):
            files.append((s[1], s[2]))
            j -= 1
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        out.append(Block(m[1], i + 2, "\n".join(lines[i + 1 : end]) + "\n", tuple(files)))
        i = end + 1
    return out


def commands(block: Block) -> list[tuple[str, list[str]]]:
    """A console block's ``$ command`` lines, each with the output lines shown under it."""
    out: list[tuple[str, list[str]]] = []
    for line in block.code.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out and line.strip():
            out[-1][1].append(line.rstrip())
    return out


def _comments(src: str) -> dict[int, str]:
    found: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            found[tok.start[0]] = tok.string[1:].strip()
    return found


def verify(value: Any, note: str) -> str | None:
    """Why ``value`` contradicts the comment ``note``, or None (also when the note is prose)."""
    if re.match(r"^[A-Z]\w*\(", note):
        pattern = ".*".join(map(re.escape, note.split("...")))
        return None if re.fullmatch(pattern, repr(value)) else f"{value!r} does not read {note}"
    try:
        expected = ast.literal_eval(note)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return None if value == expected else f"{value!r} != {expected!r}"


def run(src: str, namespace: dict[str, Any], where: str) -> None:
    """Execute ``src`` statement by statement, checking the expressions that carry a literal comment."""
    notes = _comments(src)
    lines = src.splitlines(keepends=True)
    linecache.cache[where] = (len(src), None, lines, where)  # as IPython does: code can read its own source
    for stmt in ast.parse(src).body:
        if isinstance(stmt, ast.Expr):
            value = eval(compile(ast.Expression(stmt.value), where, "eval"), namespace)
            note = notes.get(stmt.end_lineno or stmt.lineno)
            problem = verify(value, note) if note else None
            if problem:
                raise AssertionError(f"{where}:{stmt.lineno}: {problem}")
        else:
            exec(compile(ast.Module([stmt], []), where, "exec"), namespace)


def main(spec: str) -> int:
    """Run the blocks listed in the JSON file ``spec`` (``[[where, code], ...]``) in one namespace."""
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    sys.path.insert(0, "")  # the current folder, as in a REPL or a notebook
    for where, code in json.loads(Path(spec).read_text(encoding="utf-8")):
        offset = int(where.rsplit(":", 1)[1]) - 1
        run("\n" * offset + code, namespace, where.rsplit(":", 1)[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
