"""Report speed, measured side by side in one run (nothing here is asserted).

    PYTHONPATH=. python bench/bench_report.py [--repeat N]

Every row is a ratio of two commands timed in the same run, in fresh
interpreters.  Each round runs every command once, one after the other, and
a row's ratio is taken within a round (A and B ran moments apart, so a busy
machine slows both alike); the table prints the median of the ``--repeat``
rounds' ratios with their range, and the load average before and after,
because on a shared machine one round's ratio can be far off:

* cold ``attn-trace report`` (the tutorial, HTML + Markdown + figures) vs the
  import floor ``python -c "import torch, matplotlib.figure, jinja2, click"``:
  target <= 1.2;
* ``attn-trace report --from trace.json`` vs the same floor: target <= 0.6
  (no torch import);
* every committed report (each installed lesson in 2 languages: 20 reports, lesson ``model`` among them,
  since it joined ``all``) in one process (``report --lesson all --lang all``) vs one report: target <= 2.5;
* ``attn-trace report`` vs ``jupyter nbconvert --to html --execute`` of our
  own exported tutorial notebook: target <= 0.5 (needs the ``bench`` extra:
  ``pip install -e ".[bench]"``; the row says so when nbconvert is missing);
* a report of T=512, d=64 (``--inputs`` a 512 × 64 ``.npy``): target <= 3 s;
* and, for the record, ``attn-trace --help``.

Each row ends in ``ok`` or ``MISSED``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from verdict import verdict  # noqa: E402  (bench/ is on the path when a script in it runs)

from tracer.record import registry  # noqa: E402


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
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        todo = commands(sys.executable, tmp, env)
        large = todo.pop("large")
        rounds = []
        for _ in range(opts.repeat):
            rounds.append({key: timed(args, env) for key, args in todo.items()})
        big = statistics.median(timed(large, env) for _ in range(max(1, opts.repeat // 2)))
        size = sum(p.stat().st_size for p in (tmp / "big").iterdir())
    pairs = [
        ("cold report vs import floor", "report", "floor", 1.2),
        ("report --from trace.json vs import floor", "from", "floor", 0.6),
        (
            f"{2 * len(registry.names())} reports ({len(registry.names())} lessons, en+zh) in one process vs one",
            "all",
            "report",
            2.5,
        ),
    ]
    if "nbconvert" in todo:
        pairs.append(("report vs nbconvert --execute of the notebook", "report", "nbconvert", 0.5))
    width = max(len(r[0]) for r in pairs) + 2
    print(f"{opts.repeat} rounds; load average {load:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"{'measure':<{width}}{'A':>8}{'B':>8}{'A/B':>7}  {'range':<13}  target")
    for label, a, b, target in pairs:
        ratios = sorted(r[a] / r[b] for r in rounds)
        mid = statistics.median(ratios)
        ta, tb = (statistics.median(r[k] for r in rounds) for k in (a, b))
        said = verdict(mid <= target, f"<= {target}")
        if mid > target:
            said += f" by {mid - target:.3f} ({mid / target - 1:.1%})"
        spread = f"{ratios[0]:.3f}-{ratios[-1]:.3f}"
        print(f"{label:<{width}}{ta:>7.2f}s{tb:>7.2f}s{mid:>7.3f}  {spread:<13}  {said}")
    if "nbconvert" not in todo:
        print("report vs nbconvert: not measured (install the bench extra: pip install -e '.[bench]')")
    help_s = statistics.median(r["help"] for r in rounds)
    print(f"attn-trace --help: {help_s:.3f} s")
    print(f"report of T=512 d=64: {big:.2f} s (median), {size / 1e6:.2f} MB  {verdict(big <= 3, '<= 3 s')}")


if __name__ == "__main__":
    main()
