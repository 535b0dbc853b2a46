"""Benchmark loading a trace file at the node limit: the schema walk, compiled and not, side by side in one run.

    PYTHONPATH=. python bench/bench_load.py [--repeat 3]

A trace file may hold up to 20,000 nodes (``tracer.core.limits.MAX_NODES``).
Checking such a file against its JSON Schema with ``jsonschema`` took tens of
seconds; ``tracer.core.validate`` now runs the schema compiled by
``fastjsonschema`` and asks ``jsonschema`` only to word an error.  Rows:

1. ``serialize.load`` of a valid 20,000-node file, whole (read, digest,
   schema, cross-field rules, values).  Target: under 5 s.
2. The schema walk alone, compiled against ``jsonschema``'s (the old path),
   with the ratio.  Target: at least 5 times faster.

Times are the best of ``--repeat`` runs.  Nothing here asserts a time: each
row ends in ``ok`` or ``MISSED`` for people to read.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verdict import verdict  # noqa: E402  (bench/ is on the path when a script in it runs)

from tests.hostile import many_nodes, seal  # noqa: E402
from tracer.core import limits, serialize, validate  # noqa: E402


def best(fn: Callable[[], object], repeat: int) -> float:
    """The best wall time of ``repeat`` runs of ``fn``, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    per_copy = len(many_nodes(0)["nodes"])
    text = seal(many_nodes(limits.MAX_NODES // per_copy - 1))
    doc = json.loads(text)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "big.json")
        path.write_text(text, encoding="utf-8")
        load = best(lambda: serialize.load(path), args.repeat)
    size = len(text.encode()) / 1e6
    print(f"a valid trace file of {len(doc['nodes']):,} nodes ({size:.1f} MB):")
    print(f"  serialize.load, whole       best {load:7.3f} s   {verdict(load < 5, '< 5 s')}")
    fast = best(lambda: validate._fast()(doc), args.repeat)
    walk = best(lambda: next(iter(validate._validator().iter_errors(doc)), None), 1)
    ratio = walk / fast
    print(f"  schema, compiled            best {fast:7.3f} s")
    said = verdict(ratio >= 5, ">= 5 x")
    print(f"  schema, jsonschema's walk        {walk:7.3f} s   = {ratio:5.1f} x compiled  {said}")


if __name__ == "__main__":
    main()
