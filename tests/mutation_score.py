"""Per-module mutation score from mutmut's results: ``python -m tests.mutation_score``.

mutmut keeps one ``mutants/<source>.meta`` file per mutated source file, a JSON
object whose ``exit_code_by_key`` maps each mutant's name to the exit code of
its test run (``null`` while it has not run).  ``mutmut results`` lists the
survivors one per line; this prints what ``docs/testing.md`` reports instead:
for each module, how many mutants were killed among those that ran, so a
module below the target stands out.

The exit codes are read as mutmut 3.7 reads them: 1 and 3 are a test failure
or a pytest internal error (killed), 0 is a survivor, 36 and the CPU-limit
signals are timeouts, -9 and -11 a run killed by the system (out of memory)
or crashed, 33 means no selected test reaches the mutant.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

KILLED = frozenset({1, 3})
SURVIVED = frozenset({0})
TIMEOUT = frozenset({36, 24, -24, 152, 255})
NO_TESTS = frozenset({33, 5})
CRASHED = frozenset({-9, -11})  # the test run was killed (out of memory) or crashed: it did not pass


def kind(code: int | None) -> str:
    """The verdict an exit code stands for: killed, survived, timeout, crashed, no tests, not run or other."""
    if code is None:
        return "not run"
    if code in KILLED:
        return "killed"
    if code in SURVIVED:
        return "survived"
    if code in TIMEOUT:
        return "timeout"
    if code in NO_TESTS:
        return "no tests"
    if code in CRASHED:
        return "crashed"
    return "other"


@dataclass
class Module:
    """The verdicts of one mutated source file."""

    path: str
    counts: Counter[str] = field(default_factory=Counter)
    survivors: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """How many mutants mutmut made of this file."""
        return sum(self.counts.values())

    @property
    def ran(self) -> int:
        """Mutants with a verdict (everything but ``not run``)."""
        return self.total - self.counts["not run"]

    @property
    def score(self) -> float | None:
        """Killed mutants over those that ran; a timeout or a crash counts as killed: no test run passed."""
        if not self.ran:
            return None
        return (self.counts["killed"] + self.counts["timeout"] + self.counts["crashed"]) / self.ran


def read(root: Path) -> list[Module]:
    """Every ``*.meta`` file under ``root`` (a ``mutants/`` folder), one :class:`Module` each, sorted by path."""
    modules = []
    for meta in sorted(root.rglob("*.py.meta")):
        verdicts: dict[str, int | None] = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        if not verdicts:
            continue
        module = Module(str(meta.relative_to(root).with_suffix("")))
        for name, code in verdicts.items():
            module.counts[kind(code)] += 1
            if kind(code) == "survived":
                module.survivors.append(name)
        module.survivors.sort()
        modules.append(module)
    return modules


def percent(score: float | None) -> str:
    """``92.6%``, or a dash when nothing ran."""
    return "–" if score is None else f"{100 * score:.1f}%"


def table(modules: Iterable[Module]) -> str:
    """A Markdown table: mutants, killed, timeouts, survivors, not run and the score of each module, then a total."""
    header = "| module | mutants | killed | timeout | crashed | survived | no tests | other | not run | score |"
    rows = [header, "|---|---|---|---|---|---|---|---|---|---|"]
    total = Module("all")
    for m in modules:
        total.counts.update(m.counts)
        rows.append(_row(f"`{m.path}`", m))
    rows.append(_row("all", total))
    return "\n".join(rows)


def _row(label: str, m: Module) -> str:
    c = m.counts
    cells = [m.total, c["killed"], c["timeout"], c["crashed"], c["survived"], c["no tests"], c["other"], c["not run"]]
    return f"| {label} | " + " | ".join(f"{n:,}" for n in cells) + f" | {percent(m.score)} |"


def main(argv: list[str] | None = None) -> int:
    """Print the table for ``mutants/`` (or the folder given); ``--survivors`` lists them too.

    Exits 1 when a module that ran is under ``--target`` (90 by default), so a
    script can tell.
    """
    parser = argparse.ArgumentParser(prog="python -m tests.mutation_score", description=__doc__.split("\n")[0])
    parser.add_argument("root", nargs="?", default="mutants", type=Path, help="mutmut's folder (default: mutants)")
    parser.add_argument("--survivors", action="store_true", help="list each module's survivors after the table")
    parser.add_argument("--target", type=float, default=90.0, help="percent every module must reach (default: 90)")
    args = parser.parse_args(argv)
    modules = read(args.root)
    if not modules:
        parser.error(f"no mutmut results under {args.root}/ (run `make mutate` first)")
    print(table(modules))
    if args.survivors:
        for m in modules:
            print(f"\n{m.path}: {len(m.survivors)} survived")
            print("\n".join(f"  {name}" for name in m.survivors))
    low = [m.path for m in modules if m.score is not None and 100 * m.score < args.target]
    if low:
        print(f"\nunder {args.target:g}%: " + ", ".join(low))
    return 1 if low else 0


if __name__ == "__main__":
    raise SystemExit(main())
