"""Benchmark ``diff``: measured side by side in one run, printed as times and ratios.

    PYTHONPATH=. python bench/bench_diff.py [--repeat 5]

1. In-process ``tracer.diff`` of two T=512, d=64 traces (71 million steps
   each; the second has one input changed, so the change flows into most
   steps and every node is compared value by value).  Target: under 1 s.
2. ``attn-trace diff`` of the tutorial's two trace files in a subprocess,
   against the CLI's import floor (``python -c "import tracer.cli"``); and the
   in-process diff of those two files, which should cost less than that floor.

Times are the best of ``--repeat`` runs (the first, cold, run is also shown
for the big diff).  Nothing here asserts a time: each row ends in ``ok`` or
``MISSED`` for people to read.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verdict import verdict  # noqa: E402  (bench/ is on the path when a script in it runs)

import tracer  # noqa: E402


def best(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(first run, best run) wall times of ``fn`` in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times[0], min(times)


def run(cmd: list[str], ok: tuple[int, ...]) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True)
    if done.returncode not in ok:
        raise SystemExit(f"{cmd} exited {done.returncode}: {done.stderr.decode()}")


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 64))
    big_a = tracer.trace_self_attention(x)
    x[3, 5] += 0.5
    big_b = tracer.trace_self_attention(x)
    cold, warm = best(lambda: tracer.diff(big_a, big_b), args.repeat)
    result = tracer.diff(big_a, big_b)
    t = result.totals
    print(f"T=512 d=64: {len(big_a):,} steps a trace, {t.differing:,} differ, roots {[r.id for r in result.roots]}")
    print(f"  tracer.diff in-process    best {warm:7.3f} s   first {cold:7.3f} s   {verdict(warm < 1, '< 1 s')}")

    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp, "a.json"), Path(tmp, "b.json")
        tutorial = tracer.trace_self_attention()
        tutorial.save(a)
        values = np.array(tutorial.tensor("x"), dtype=np.float64)
        values[0, 0] = 0.53
        tracer.trace_self_attention(values, tokens=tutorial.tokens).save(b)
        exe = sys.executable
        _, floor = best(lambda: run([exe, "-c", "import tracer.cli"], (0,)), args.repeat)
        _, cli_diff = best(lambda: run([exe, "cli.py", "diff", str(a), str(b)], (1,)), args.repeat)
        _, api = best(lambda: tracer.diff(a, b), args.repeat)
    print("tutorial (6 tokens), files:")
    print(f"  import floor (import tracer.cli) best {floor:7.3f} s")
    print(f"  attn-trace diff (CLI)     best {cli_diff:7.3f} s   = {cli_diff / floor:4.2f} x the import floor")
    ratio = f"{api / floor:4.2f} x the import floor"
    print(f"  tracer.diff in-process    best {api:7.3f} s   = {ratio}  {verdict(api < floor, '< 1 x')}")


if __name__ == "__main__":
    main()
