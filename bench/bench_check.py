"""Benchmark: checking a lesson-sized student implementation vs tracing the same lesson.

Run: ``python bench/bench_check.py`` (``--repeat N`` for more runs).
For each lesson with a module (trainable, causal, multihead) it times, as
whole commands in fresh processes (torch import included, as a user sees it):

* ``attn-trace trace --lesson L -o FILE``;
* ``attn-trace check tests/check_corpus/<the book's class>.py:NAME --lesson L``;

and prints the medians and their ratio; then the same work in one warm process
(the lesson's trace and its JSON text, against the whole check), which is
steadier on a busy machine.  The class row checks a generated class of
``--class-size`` submissions (100 by default: the book's class, and three
buggy variants of it in turn) in one command with ``-j 2``: target 100
submissions in at most 60 s on 2 cores (``MISSED`` when over).
``--class-only`` prints only that row.  Target (issue: check a student's
code): check < 1.5x trace for the same lesson.  A check runs the lesson's
pipeline once (with the student's weights) plus the student's module three
times (eval, training mode, a shorter sequence); a trace also writes its file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "simple": "simple_matrix.py:self_attention",
    "trainable": "trainable_linear.py:SelfAttention_v2",
    "causal": "causal_book.py:CausalAttention",
    "multihead": "multihead_book.py:MultiHeadAttention",
}
D_OUT = {
    "multihead": 8
}  # the check builds lesson multihead with d_out = 8 (docs/check.md); the trace is timed both ways


def timed(cmd: list[str], repeat: int) -> float:
    """Median wall time of running ``cmd`` (which may exit 0 or 1)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True)
        times.append(time.perf_counter() - t0)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.decode().strip()}")
    return statistics.median(times)


def warm(lesson: str, spec: str, repeat: int, **options: int) -> tuple[float, float]:
    """Median in-process times of (trace + serialize, check) after one warm-up run of each."""
    sys.path.insert(0, str(ROOT))
    from tracer import api
    from tracer.compare.check import check
    from tracer.compare.check.student import load
    from tracer.core.serialize import dumps

    def trace() -> None:
        dumps(api.trace_lesson(lesson, **options))

    def run() -> None:
        obj, source = load(str(ROOT / "tests" / "check_corpus" / spec))
        check(obj, lesson, source)

    out = []
    for fn in (trace, run):
        fn()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        out.append(statistics.median(times))
    return out[0], out[1]


CLASS_TARGET = 60.0
"""Seconds for a class of 100 submissions on 2 cores (issue: check a whole class)."""

BUGS = (
    ("", ""),
    ("-torch.inf)", "0.0)"),  # mask_zero
    ("keys.shape[-1] ** 0.5", "keys.shape[-1]"),  # scale_wrong
    ("dim=-1", "dim=1"),  # softmax_dim
)


def write_class(folder: Path, size: int) -> None:
    """``size`` submissions: the book's causal class, and buggy variants of it in turn."""
    book = (ROOT / "tests" / "check_corpus" / "causal_book.py").read_text(encoding="utf-8")
    for n in range(size):
        old, new = BUGS[n % len(BUGS)]
        (folder / f"student_{n:03d}.py").write_text(book.replace(old, new) if old else book, encoding="utf-8")


def class_row(size: int, jobs: int) -> None:
    """Time one ``attn-trace check 'DIR:CausalAttention'`` over a generated class, and say whether it met the target."""
    py = [sys.executable, "-m", "tracer"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "class"
        folder.mkdir()
        write_class(folder, size)
        out = str(Path(tmp) / "class.json")
        cmd = [*py, "check", f"{folder}:CausalAttention", "--lesson", "causal", "-j", str(jobs), "--format", "json"]
        seconds = timed([*cmd, "-o", out, "--force"], 1)
        import json

        summary = json.loads(Path(out).read_text(encoding="utf-8"))["summary"]
    target = CLASS_TARGET * size / 100
    mark = "" if seconds <= target else "  MISSED"
    print(
        f"class of {size} (-j {jobs}): {seconds:.1f} s, {seconds / size * 1e3:.0f} ms per submission, "
        f"target {target:.0f} s ({seconds / target:.2f} of it){mark}; "
        f"{summary['match']} match, {summary['differs']} differ, {summary['trouble'] + summary['no_verdict']} other"
    )


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--class-size", type=int, default=100)
    parser.add_argument("--class-only", action="store_true")
    args = parser.parse_args()
    class_row(args.class_size, 2)
    if args.class_only:
        return
    py = [sys.executable, "-m", "tracer"]
    print(f"{'lesson':<22} {'trace s':>8} {'check s':>8} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for lesson, spec in CASES.items():
            out = str(Path(tmp) / f"{lesson}.json")
            check = timed([*py, "check", f"tests/check_corpus/{spec}", "--lesson", lesson], args.repeat)
            for extra in ([], ["--d-out", str(D_OUT[lesson])]) if lesson in D_OUT else ([],):
                trace = timed([*py, "trace", "--lesson", lesson, *extra, "-o", out, "--force"], args.repeat)
                label = f"{lesson} {' '.join(extra)}".strip()
                print(f"{label:<22} {trace:>8.3f} {check:>8.3f} {check / trace:>6.2f}")
    print(f"\nin one warm process (median of {args.repeat * 4})")
    print(f"{'lesson':<22} {'trace ms':>8} {'check ms':>8} {'ratio':>6}")
    for lesson, spec in CASES.items():
        for options in ({}, {"d_out": D_OUT[lesson]}) if lesson in D_OUT else ({},):
            trace, check = warm(lesson, spec, args.repeat * 4, **options)
            label = f"{lesson} {' '.join(f'--d-out {v}' for v in options.values())}".strip()
            print(f"{label:<22} {trace * 1e3:>8.1f} {check * 1e3:>8.1f} {check / trace:>6.2f}")


if __name__ == "__main__":
    main()
