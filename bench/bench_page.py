"""A page's weight and first paint with its doors, side by side with the same page without them (nothing asserted).

    PYTHONPATH=. python bench/bench_page.py [--repeat N]

Every number on a page is a door to its panel, whose data (one JSON block)
the page carries and parses only when the first panel opens.  This bench
writes the reports of T=64 and T=512 random inputs (d=64, ``--inputs`` a
``.npy``), and for each measures in headless Chromium, in the same run:

* the page's size, and how much of it is the doors' data;
* time to first contentful paint of the page, and of the same page with the
  data block and the script's door code removed (the page before doors): the
  ratio should stay near 1 (target <= 1.25), since the data is not parsed
  until a number is opened;
* the time from pressing the first number to its panel being drawn (parsing
  the data included).

Each round loads every page once, one after the other; the table prints the
medians of ``--repeat`` rounds and the range of the ratio.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verdict import verdict  # noqa: E402  (bench/ is on the path when a script in it runs)

from tests.chromium import EXE, Browser  # noqa: E402

DATA = re.compile(r'<script type="application/json" id="attn-trace-doors">.*?</script>\n?', re.S)
PAINT = (
    "new Promise(r => { const f = () => { const p = performance.getEntriesByName('first-contentful-paint')[0];"
    " p ? r(p.startTime) : setTimeout(f, 20); }; f(); })"
)
OPEN = (
    "(() => { const t = performance.now(); document.querySelector('td button.door').click();"
    " return performance.now() - t; })()"
)


def write(t: int, tmp: Path, env: dict[str, str]) -> Path:
    """The report of ``t`` random tokens of 64 components; its ``index.html``."""
    npy = tmp / f"t{t}.npy"
    make = f"import numpy as np; np.save({str(npy)!r}, np.random.default_rng(0).random(({t}, 64)).round(2))"
    subprocess.run([sys.executable, "-c", make], check=True)
    out = tmp / f"t{t}"
    cli = [sys.executable, str(ROOT / "cli.py"), "report", "--inputs", str(npy), "-o", str(out), "--force"]
    subprocess.run([*cli, "--format", "html"], env=env, check=True, capture_output=True)
    return out / "index.html"


def bare(page: Path) -> Path:
    """The same page without the doors' data (the script finds none and does nothing)."""
    out = page.with_name("bare.html")
    out.write_text(DATA.sub("", page.read_text(encoding="utf-8")), encoding="utf-8")
    return out


def main() -> None:
    """Write the pages, load each ``--repeat`` times and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()
    if EXE is None:  # make bench runs every bench: this one says why it measured nothing
        print("page weight and first paint: not measured (Chromium is not installed)")
        return
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        pages = {t: write(t, tmp, env) for t in (64, 512)}
        plain = {t: bare(p) for t, p in pages.items()}
        b = Browser()
        rounds: list[dict[str, float]] = []
        try:
            for _ in range(opts.repeat):
                r: dict[str, float] = {}
                for t in pages:
                    b.open(plain[t].as_uri())
                    r[f"bare{t}"] = float(b.js(PAINT))
                    b.open(pages[t].as_uri())
                    r[f"doors{t}"] = float(b.js(PAINT))
                    r[f"open{t}"] = float(b.js(OPEN))
                rounds.append(r)
        finally:
            b.close()
        sizes = {t: (p.stat().st_size, p.stat().st_size - plain[t].stat().st_size) for t, p in pages.items()}
    print(f"{opts.repeat} rounds; load average {load:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"{'page':<8}{'size':>9}{'data':>9}{'paint':>9}{'bare':>9}{'ratio':>7}  {'range':<13}{'open':>8}  target")
    for t, (size, data) in sizes.items():
        ratios = sorted(r[f"doors{t}"] / r[f"bare{t}"] for r in rounds)
        mid = statistics.median(ratios)
        paint, without, first = (statistics.median(r[f"{k}{t}"] for r in rounds) for k in ("doors", "bare", "open"))
        spread = f"{ratios[0]:.2f}-{ratios[-1]:.2f}"
        print(
            f"T={t:<6}{size / 1e6:>7.2f}MB{data / 1e6:>7.2f}MB{paint:>7.0f}ms{without:>7.0f}ms{mid:>7.2f}  "
            f"{spread:<13}{first:>6.0f}ms  {verdict(mid <= 1.25, 'paint ratio <= 1.25')}"
        )


if __name__ == "__main__":
    main()
