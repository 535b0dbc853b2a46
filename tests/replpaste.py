"""Paste Python code into an interactive console line by line, as a reader pastes a README block into ``python``.

Run as a script (``python tests/replpaste.py BLOCKS.json``) it feeds each
block of the JSON list to a fresh :class:`code.InteractiveConsole`, one line
at a time and then one empty line (the Enter a reader presses after the
paste), and exits 1 with the console's own error text if any line was a
syntax error or raised.  The console compiles exactly as the REPL does, so a
statement that follows an indented block without a blank line fails here
as it fails there.
"""

from __future__ import annotations

import code
import json
import sys
from pathlib import Path


class Console(code.InteractiveConsole):
    """A console that keeps what it would print to stderr (tracebacks, syntax errors)."""

    def __init__(self) -> None:
        super().__init__({"__name__": "__console__"})
        self.errors: list[str] = []

    def write(self, data: str) -> None:
        self.errors.append(data)


def paste(source: str) -> str:
    """The error text a fresh console prints while ``source`` is pasted into it (empty when none)."""
    console = Console()
    for line in [*source.splitlines(), ""]:
        console.push(line)
    return "".join(console.errors)


def main(spec: str) -> int:
    sys.path.insert(0, "")  # the current folder, as in an interactive session
    for where, source in json.loads(Path(spec).read_text(encoding="utf-8")):
        said = paste(source)
        if said:
            print(f"{where}: pasted into the REPL:\n{said}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
