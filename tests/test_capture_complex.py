"""Capture of complex arithmetic: stored as real and imaginary parts, recorded as opaque steps, never cast.

Casting a complex tensor to a real dtype keeps its real part alone: a trace
that did so held values the code never computed, and ``verify`` then called
the next step "edited".  Complex values are stored as ``torch.view_as_real``
has them (one axis more, real part first), the complex calls are listed
opaque steps, and the attention after them is found and drawn per head.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from click.testing import CliRunner

import tracer
from tests import capture_corpus_complex as cc
from tracer.cli import app
from tracer.present import report
from tracer.present.captured import attentions


def _trace() -> tracer.Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Casting complex values to real discards the imaginary part" is an error
        return tracer.trace_torch(cc.meta_rope)


def test_complex_rope_is_captured_without_changing_the_output_and_verifies_clean() -> None:
    t = _trace()
    assert np.array_equal(t.tensor(t.meta["output"]), cc.meta_rope().detach().numpy())
    assert t.verify().ok, t.verify().summary()
    assert {"polar", "view_as_complex", "mul", "view_as_real"} <= set(t.meta["opaque"])


def test_complex_values_are_stored_as_real_and_imaginary_parts() -> None:
    t = _trace()
    torch.manual_seed(3)
    model = cc.ComplexRotary()
    cis = torch.view_as_real(model.cis).numpy()
    stored = [n for n in t.nodes if n.value.shape == cis.shape and np.array_equal(n.value, cis)]
    assert stored, "the complex frequencies are not stored as (real, imaginary) pairs"
    polar = [n for n in t.nodes if n.op == "opaque" and n.attrs.get("func", "").endswith("polar")]
    assert polar and polar[0].value.shape[-1] == 2  # (positions, pairs, 2)
    assert not np.array_equal(polar[0].value[..., 1], np.zeros_like(polar[0].value[..., 1]))  # sines kept


def test_the_attention_after_a_complex_rotation_is_drawn_per_head(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = _trace()
    found = attentions(t)
    assert len(found) == 1
    files = report.build(t, "en")
    heatmaps = [f for f in files if f.startswith("fig-") and f.endswith(("-h1.svg", "-h2.svg"))]
    assert len(heatmaps) >= 2 and not any(f.endswith("-h3.svg") for f in files), sorted(files)
    out = tmp_path / "t.json"
    res = CliRunner().invoke(app, ["trace", "--torch", "tests/capture_corpus_complex.py:meta_rope", "-o", str(out)])
    assert res.exit_code == 0 and "Traceback" not in res.output, res.output
    assert CliRunner().invoke(app, ["verify", str(out)]).exit_code == 0
