"""Benchmark: the forward-and-backward trace of lesson ``simple`` beside the forward trace alone.

Run: ``python bench/bench_backward.py`` (add ``--size 256x32`` for another shape).
Prints, in one run on this machine, for T=512, d=64 float32 inputs:

* the forward trace's time and the forward-and-backward trace's (medians of
  several runs, taken in turn so that a busy machine slows both alike), and
  their ratio (target: at most 3x);
* the peak memory of each above the torch import, each in a fresh
  subprocess, and their ratio (target: at most 2.5x);
* the work counts of the backward: steps added, ``exp`` entries added (0:
  the backward has no exp) and running-sum entries read out of memory order
  (0), the same counts ``tests/test_backward_work.py`` holds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verdict import verdict  # noqa: E402  (bench/ is on the path when a script in it runs)

MEMORY_PROBE = """
import sys, torch
sys.path.insert(0, {root!r})
import tracer
def hwm():
    with open("/proc/self/status") as f:
        return int(f.read().split("VmHWM:")[1].split()[0])
x = torch.rand({t}, {d}, generator=torch.Generator().manual_seed(0))
tracer.trace_lesson("simple", inputs=x[:2, :2], query=1, backward=True)  # warm up on a tiny input
base = hwm()
trace = tracer.trace_lesson("simple", inputs=x, query=1, backward={backward})
print(hwm() - base)
"""


def peak_kib(t: int, d: int, backward: bool) -> int:
    """Peak resident memory above the warm-up, in KiB, of a fresh process tracing T x d inputs."""
    probe = MEMORY_PROBE.format(root=str(ROOT), t=t, d=d, backward=backward)
    return int(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="512x64", help="TxD (default 512x64)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    t, d = (int(v) for v in args.size.lower().split("x"))

    import torch

    import tracer
    from tracer.core import exact, predict

    x = torch.rand(t, d, generator=torch.Generator().manual_seed(0))
    tracer.trace_lesson("simple", inputs=x[:2, :2], query=1, backward=True)
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.repeat):
        for backward in (False, True):
            t0 = time.perf_counter()
            tracer.trace_lesson("simple", inputs=x, query=1, backward=backward)
            times[backward].append(time.perf_counter() - t0)
    fwd, both = statistics.median(times[False]), statistics.median(times[True])
    with exact.counting() as exp_fwd:
        plain = tracer.trace_lesson("simple", inputs=x, query=1)
    with exact.counting() as exp_both, predict.counting() as scattered:
        traced = tracer.trace_lesson("simple", inputs=x, query=1, backward=True)
    steps = len(traced) - len(plain)
    del plain, traced
    mem_fwd, mem_both = peak_kib(t, d, False), peak_kib(t, d, True)

    rows = [
        ("forward trace", f"{fwd:.3f} s", ""),
        ("forward and backward trace", f"{both:.3f} s", ""),
        ("  ratio", f"{both / fwd:.2f}x", verdict(both <= 3 * fwd, "<= 3x")),
        ("peak memory, forward", f"{mem_fwd / 1024:.0f} MiB", ""),
        ("peak memory, forward and backward", f"{mem_both / 1024:.0f} MiB", ""),
        ("  ratio", f"{mem_both / mem_fwd:.2f}x", verdict(mem_both <= 2.5 * mem_fwd, "<= 2.5x")),
        ("backward steps", f"{steps:,}", ""),
        ("exp entries added by the backward", f"{exp_both.entries - exp_fwd.entries:,}", ""),
        ("running-sum entries read out of order", f"{scattered.scattered:,}", ""),
    ]
    print(f"attn-trace bench: backward pass of lesson simple, T={t}, d={d}, float32, {os.cpu_count()} cores")
    width = max(len(r[0]) for r in rows)
    for name, value, said in rows:
        print(f"  {name:<{width}}  {value:>14}  {said}")


if __name__ == "__main__":
    main()
