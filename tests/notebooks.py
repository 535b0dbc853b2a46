"""Running notebooks in tests: a private kernelspec for this interpreter, and the printed checks parsed back."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tracer

KERNEL = "attn-trace-test"


def make_kernelspec(folder: Path) -> None:
    """Write a kernelspec that runs ipykernel with this interpreter into ``folder/kernels``."""
    spec = folder / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"}))


def execute(path: Path) -> Any:
    """Run the notebook at ``path`` top to bottom with nbclient; the executed notebook."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name=KERNEL, timeout=120).execute()
    return nb


def kernel_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Make the private kernel findable (JUPYTER_PATH) for a module's tests; skip without nbclient."""
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    folder = tmp_path_factory.mktemp("jupyter")
    make_kernelspec(folder)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(folder))
        mp.setenv("JUPYTER_PLATFORM_DIRS", "1")
        yield


ROWS = r"(.*(?:\n {10}.*)*)"
"""A tensor as ``show`` prints it: its first row, then each further row on a line indented by 10."""
CHECK = re.compile(rf"^(\S+)\n  torch : {ROWS}\n  traced: {ROWS}\n  max \|torch - traced\| = (\S+)$", re.M)


def printed_checks(nb: Any) -> list[tuple[str, list[float], list[float], float]]:
    """(step id, torch numbers, traced numbers, max difference) for every check the notebook printed."""
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    out = []
    for name, ours, traced, diff in CHECK.findall(text):
        nums = [[float(v) for v in part.split()] for part in (ours, traced)]
        out.append((name, nums[0], nums[1], float(diff)))
    return out


def assert_matches(trace: tracer.Trace, nb: Any, decimals: int = 4) -> int:
    """Every printed traced value is the trace's, and torch's agrees with it; the number of checks."""
    checks = printed_checks(nb)
    for name, ours, traced, diff in checks:
        want = np.asarray(trace[name].value, dtype=np.float64).ravel()
        assert np.allclose(traced, want, atol=0.6 * 10**-decimals, equal_nan=True), name
        assert np.allclose(ours, traced, atol=1.1 * 10**-decimals, equal_nan=True), name
        assert diff <= 1e-5, name
    return len(checks)
