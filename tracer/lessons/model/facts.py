"""What lesson model's prose says about the model at hand: its sizes, which head reads which group, its weights.

Only numbers and the names of storage types (``Q4_1``, ``BF16``: capitals,
digits and ``_``, as the readers name them) reach the prose; the model's
name and other metadata strings, which come from whoever wrote the file,
never do.
"""

from __future__ import annotations

import re
from typing import Any

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.lessons.model import fetch
from tracer.present.facts import formatted, join
from tracer.present.narrative import Narrative


def model_of(trace: Trace) -> dict[str, Any]:
    """The trace's ``meta.model`` with its sizes checked (a trace file is data): one line when they do not fit."""
    m = trace.meta.get("model")
    if not isinstance(m, dict):
        m = {}
    try:
        sizes: dict[str, Any] = {k: int(m[k]) for k in ("heads", "kv_heads", "head_dim", "width")}
        sizes["rope_base"] = float(m["rope_base"])
    except (TypeError, KeyError, ValueError):
        raise InputError("the trace's meta.model does not give the model's sizes (heads, kv_heads, ...)") from None
    h, g = sizes["heads"], sizes["kv_heads"]
    if not 1 <= g <= h or h % g:
        raise InputError(f"the trace's meta.model states {h} query heads in {g} key/value groups")
    return {**m, **sizes}


def traced_head(trace: Trace) -> tuple[int, int]:
    """The traced head and layer ``meta`` names, checked against the model's sizes (a trace file is data)."""
    heads = model_of(trace)["heads"]
    head, layer = trace.meta.get("head"), trace.meta.get("layer")
    if not isinstance(head, int) or not 0 <= head < heads or not isinstance(layer, int) or layer < 0:
        raise InputError(f"the trace's meta names head {head!r} of layer {layer!r}, not one of its {heads} heads")
    return head, layer


def facts(trace: Trace, story: Narrative) -> tuple[dict[str, object], dict[str, str]]:
    """Width, heads, groups, head size, rotary base, the heads of each group, and which note on the weights."""
    m = model_of(trace)
    h, g, dh, d, base = m["heads"], m["kv_heads"], m["head_dim"], m["width"], m["rope_base"]
    r = h // g
    extra = story.stage("inputs").extra
    first, rest = extra.get("say_reads_first", ""), extra.get("say_reads_next", "")
    spans = [{"a": k * r, "b": k * r + r - 1, "g": k} for k in range(g)]
    reads = [formatted(first if k == 0 else rest, s) for k, s in enumerate(spans)]
    kinds = [str(k) for k in m.get("kinds", ()) if re.fullmatch(r"[A-Z0-9_]{1,8}", str(k))]
    values: dict[str, object] = {"d": d, "H": h, "G": g, "dh": dh, "base": f"{base:g}"}
    values |= {"reads": extra.get("say_reads_sep", ", ").join(reads), "kinds": join(kinds or ["?"], story.lang)}
    default = m.get("source") == fetch.model_path().name and kinds == ["F32", "Q4_1", "Q8_0"]  # what its note says
    cases = {
        "groups": "own" if r == 1 else "one" if g == 1 else "some",
        "weights": "default" if default else "other",
    }
    return values, cases
