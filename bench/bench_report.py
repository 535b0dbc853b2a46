"""Report speed, measured side by side in one run (nothing here is asserted).

    PYTHONPATH=. python bench/bench_report.py [--repeat N]

Every row is a ratio of two commands timed in the same run, in fresh
interpreters, interleaved so that a busy machine slows them alike (best of
``--repeat`` runs each):

* cold ``attn-trace report`` (the tutorial, HTML + Markdown + figures) vs the
  import floor ``python -c "import torch, matplotlib.figure, jinja2, click"``:
  target <= 1.2;
* ``attn-trace report --from trace.json`` vs the same floor: target <= 0.6
  (no torch import);
* the 8 committed reports in one process (``report --lesson all --lang all``)
  vs one report: target <= 2.5;
* ``attn-trace report`` vs ``jupyter nbconvert --to html --execute`` of our
  own exported tutorial notebook: target <= 0.5 (needs the ``bench`` extra:
  ``pip install -e ".[bench]"``; the row says so when nbconvert is missing);
* and, for the record, ``attn-trace --help`` and a report of T=512, d=64.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(args: list[str], env: dict[str, str], cwd: Path = ROOT) -> float:
    """Wall time of one subprocess run (it must succeed)."""
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def commands(py: str, tmp: Path, env: dict[str, str]) -> dict[str, list[str]]:
    """The commands to time, after writing their inputs (a trace file, a notebook, large inputs) into ``tmp``."""
    cli = [py, str(ROOT / "cli.py")]
    big = tmp / "big.npy"
    make_big = f"import numpy as np; np.save({str(big)!r}, np.random.default_rng(0).random((512, 64)).round(2))"
    subprocess.run([py, "-c", make_big], check=True)
    subprocess.run([*cli, "trace", "-o", str(tmp / "trace.json")], env=env, check=True, capture_output=True)
    nb = tmp / "tutorial.ipynb"
    subprocess.run([*cli, "notebook", "-o", str(nb)], env=env, check=True, capture_output=True)
    out = {
        "floor": [py, "-c", "import torch, matplotlib.figure, jinja2, click"],
        "report": [*cli, "report", "-o", str(tmp / "one"), "--force"],
        "from": [*cli, "report", "--from", str(tmp / "trace.json"), "-o", str(tmp / "from"), "--force"],
        "all": [*cli, "report", "--lesson", "all", "--lang", "all", "-o", str(tmp / "all"), "--force"],
        "help": [*cli, "--help"],
        "large": [*cli, "report", "--inputs", str(big), "-o", str(tmp / "big"), "--force"],
    }
    if importlib.util.find_spec("nbconvert") is not None:
        convert = ["-m", "nbconvert", "--to", "html", "--execute", "--output-dir", str(tmp / "nb"), str(nb)]
        out["nbconvert"] = [py, *convert]
    return out


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        todo = commands(sys.executable, tmp, env)
        best = dict.fromkeys(todo, float("inf"))
        for _ in range(opts.repeat):
            for key, args in todo.items():
                best[key] = min(best[key], timed(args, env))
        size = sum(p.stat().st_size for p in (tmp / "big").iterdir())
    b = best
    rows = [
        ("cold report vs import floor", b["report"], b["floor"], 1.2),
        ("report --from trace.json vs import floor", b["from"], b["floor"], 0.6),
        ("8 reports in one process vs one report", b["all"], b["report"], 2.5),
    ]
    if "nbconvert" in b:
        rows.append(("report vs nbconvert --execute of the notebook", b["report"], b["nbconvert"], 0.5))
    width = max(len(r[0]) for r in rows) + 2
    print(f"{'measure':<{width}}{'A':>8}{'B':>8}{'A/B':>7}  target")
    for label, a, base, target in rows:
        verdict = "ok" if a / base <= target else f"missed by {a / base - target:.3f} ({a / base / target - 1:.1%})"
        print(f"{label:<{width}}{a:>7.2f}s{base:>7.2f}s{a / base:>7.3f}  <= {target}  {verdict}")
    if "nbconvert" not in b:
        print("report vs nbconvert: not measured (install the bench extra: pip install -e '.[bench]')")
    print(f"attn-trace --help: {b['help']:.3f} s; report of T=512 d=64: {b['large']:.2f} s, {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
