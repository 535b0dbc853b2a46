"""Benchmark: an all-pairs trace of T=512, d=64, measured side by side with plain torch.

Run: ``python bench/bench_trace.py`` (add ``--size 256x32`` for another shape).
Prints, in one run on this machine:

* the traced pipeline's time and its ratio to the untraced torch computation
  of the same result (``X @ X.T``, ``softmax(dim=1)``, ``@ X``);
* peak memory above the torch import (measured in a fresh subprocess);
* save plus load time of the trace file, and its size on disk;
* the cost of looking up single steps by id.
* the trace time of lesson ``causal`` and of each later lesson on the same
  T x d inputs, with their ratio (target: within 2x of ``causal``).

Targets: trace < 0.5 s in float32 and < 1 s in float64 (the same inputs),
memory < 1 GiB, save + load < 2 s, file < 200 MB.  Times are medians of
several runs; each row says ``ok`` or ``MISSED``.  The exact ``exp``'s slow
path is counted too (entries sent to ``decimal`` one by one, of all the
entries), since a share is a figure no busy machine can move.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verdict import verdict  # noqa: E402  (bench/ is on the path when a script in it runs)

# Peak resident memory (VmHWM, KiB) of a fresh process: ru_maxrss would carry over the
# parent's peak through fork and exec on Linux, VmHWM starts anew with the process image.
MEMORY_PROBE = """
import sys, torch
sys.path.insert(0, {root!r})
import tracer
def hwm():
    with open("/proc/self/status") as f:
        return int(f.read().split("VmHWM:")[1].split()[0])
x = torch.rand({t}, {d}, generator=torch.Generator().manual_seed(0))
tracer.trace_self_attention(x[:2, :2], query=1)  # warm up the code paths on a tiny input
base = hwm()
trace = tracer.trace_self_attention(x, query=1)
print(hwm() - base)
"""


def median_time(fn: object, repeat: int) -> float:
    """Median wall time of ``fn()`` over ``repeat`` runs."""
    assert callable(fn)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="512x64", help="TxD (default 512x64)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    t, d = (int(v) for v in args.size.lower().split("x"))

    import torch

    import tracer
    from tracer.core import exact

    x = torch.rand(t, d, generator=torch.Generator().manual_seed(0))
    tracer.trace_self_attention(x[:2, :2], query=1)
    tracer.trace_self_attention(x[:2, :2], query=1, dtype=torch.float64)

    def plain() -> torch.Tensor:
        w = torch.softmax(x @ x.T, dim=1)
        return w @ x

    plain()
    t_plain = median_time(plain, args.repeat * 4)
    t_trace = median_time(lambda: tracer.trace_self_attention(x, query=1), args.repeat)
    t_trace64 = median_time(lambda: tracer.trace_self_attention(x, query=1, dtype=torch.float64), args.repeat)
    with exact.counting() as slow64:
        tracer.trace_self_attention(x, query=1, dtype=torch.float64)
    with exact.counting() as slow:
        trace = tracer.trace_self_attention(x, query=1)

    probe = MEMORY_PROBE.format(root=str(ROOT), t=t, d=d)
    mem_kib = int(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        t_save = median_time(lambda: trace.save(path), max(1, args.repeat // 2))
        size = path.stat().st_size
        t_load = median_time(lambda: tracer.load(path), max(1, args.repeat // 2))
        encodings = {n["name"]: n["value"]["encoding"] for n in json.loads(path.read_text())["nodes"]}

    probe_ids = [f"omega[{t},{t}].p[{d}]", f"omega[{t // 2},1].s[{d // 2 or 1}]", f"z[{t}].s[{t},{d}]", "alpha[1,1]"]
    t_lookup = median_time(lambda: [trace[i].value for i in probe_ids], 200) / len(probe_ids)

    rows = [
        ("steps recorded", f"{len(trace):,}", ""),
        ("untraced torch (same result)", f"{t_plain * 1e3:.2f} ms", ""),
        ("traced pipeline", f"{t_trace:.3f} s", verdict(t_trace < 0.5, "< 0.5 s")),
        ("  ratio traced / untraced", f"{t_trace / t_plain:,.0f}x", ""),
        ("traced pipeline, float64", f"{t_trace64:.3f} s", verdict(t_trace64 < 1, "< 1 s")),
        ("exp entries, exact slow path", f"{slow.slow:,} of {slow.entries:,}", _share(slow)),
        ("  the same, float64", f"{slow64.slow:,} of {slow64.entries:,}", _share(slow64)),
        ("peak memory above torch import", f"{mem_kib / 1024:.0f} MiB", verdict(mem_kib < 1024 * 1024, "< 1 GiB")),
        ("save", f"{t_save:.3f} s", ""),
        ("load", f"{t_load:.3f} s", ""),
        ("save + load", f"{t_save + t_load:.3f} s", verdict(t_save + t_load < 2, "< 2 s")),
        ("file size", f"{size / 1e6:.1f} MB", verdict(size < 200e6, "< 200 MB")),
        ("  derived tensors", ", ".join(k for k, v in encodings.items() if v == "derived")[:60] + "…", ""),
        ("look-up of one step by id", f"{t_lookup * 1e6:.1f} µs", ""),
    ]
    rows += lesson_rows(x, args.repeat)
    print(f"attn-trace bench: all-pairs trace, T={t}, d={d}, float32, {os.cpu_count()} cores")
    width = max(len(r[0]) for r in rows)
    for name, value, said in rows:
        print(f"  {name:<{width}}  {value:>14}  {said}")


def _share(tally: Any) -> str:
    return verdict(tally.slow <= 1e-4 * tally.entries, "<= 0.01%")


LESSONS = ("window", "gqa")
"""The lessons after chapter 3, each timed beside lesson ``causal`` on the same inputs (target: within 2x)."""
LESSONS += ("flash",)
LESSONS += ("rope",)
LESSONS += ("kvcache",)


def lesson_rows(x: object, repeat: int) -> list[tuple[str, str, str]]:
    """Trace time of lesson ``causal`` and of each lesson in :data:`LESSONS` on ``x``, and their ratios."""
    import tracer

    tracer.trace_lesson("causal", inputs=x[:2, :2])  # type: ignore[index]
    t_causal = median_time(lambda: tracer.trace_lesson("causal", inputs=x), repeat)
    rows = [("lesson causal (2-wide projections)", f"{t_causal:.3f} s", "")]
    for name in LESSONS:
        tracer.trace_lesson(name, inputs=x[:2, :2])  # type: ignore[index]
        took = median_time(lambda name=name: tracer.trace_lesson(name, inputs=x), repeat)
        rows.append((f"lesson {name}", f"{took:.3f} s", verdict(took < 2 * t_causal, "< 2x causal")))
        rows.append((f"  ratio {name} / causal", f"{took / t_causal:.2f}x", ""))
    return rows


if __name__ == "__main__":
    main()
