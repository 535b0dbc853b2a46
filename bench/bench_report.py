"""Report speed, measured side by side in one run (nothing here is asserted).

    PYTHONPATH=. python bench/bench_report.py [--repeat N]

* the default report command, cold (a fresh interpreter) and end to end
  (HTML, Markdown, every figure), as a ratio to a fresh interpreter that only
  does ``import torch, matplotlib.figure, jinja2, click``: target < 1.5;
* ``attn-trace --help``: target < 0.3 s (no torch or matplotlib import);
* a report of T=512, d=64 inputs: its time, and its size (target < 2 MB).

Each figure is the best of ``--repeat`` runs, the commands interleaved so
that a busy machine slows them alike.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(args: list[str], env: dict[str, str]) -> float:
    """Wall time of one subprocess run (it must succeed)."""
    start = time.perf_counter()
    subprocess.run(args, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.npy"
        subprocess.run(
            [
                py,
                "-c",
                f"import numpy as np; np.save({str(big)!r}, np.random.default_rng(0).random((512, 64)).round(2))",
            ],
            check=True,
        )
        out, big_out = Path(tmp) / "tutorial", Path(tmp) / "big"
        commands = {
            "baseline": [py, "-c", "import torch, matplotlib.figure, jinja2, click"],
            "report": [py, "cli.py", "report", "-o", str(out), "--force"],
            "help": [py, "cli.py", "--help"],
            "large": [py, "cli.py", "report", "--inputs", str(big), "-o", str(big_out), "--force"],
        }
        best = dict.fromkeys(commands, float("inf"))
        for _ in range(opts.repeat):
            for name, args in commands.items():
                best[name] = min(best[name], timed(args, env))
        size = sum(p.stat().st_size for p in big_out.iterdir())
    ratio = best["report"] / best["baseline"]
    rows = [
        ("import torch, matplotlib.figure, jinja2, click", f"{best['baseline']:.2f} s", ""),
        ("attn-trace report (tutorial, html + md)", f"{best['report']:.2f} s", f"ratio {ratio:.2f} (target < 1.5)"),
        ("attn-trace --help", f"{best['help']:.3f} s", "target < 0.3 s"),
        ("attn-trace report, T=512 d=64", f"{best['large']:.2f} s", f"{size / 1e6:.2f} MB (target < 2 MB)"),
    ]
    width = max(len(r[0]) for r in rows)
    for label, value, note in rows:
        print(f"{label:<{width}}  {value:>8}  {note}")


if __name__ == "__main__":
    main()
