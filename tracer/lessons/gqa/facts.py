"""What lesson gqa's prose says about its example: heads, groups, who reads which group, the cache saving."""

from __future__ import annotations

from fractions import Fraction

from tracer.core.trace import Trace
from tracer.present.facts import formatted, join
from tracer.present.narrative import Narrative


def facts(trace: Trace, story: Narrative) -> tuple[dict[str, object], dict[str, str]]:
    """Heads, groups and their sizes; which heads read which group; the two repeat orders; the cache saving."""
    h, g, r, dh = (int(trace.meta[k]) for k in ("heads", "groups", "group_size", "head_dim"))
    lang = story.lang
    share = Fraction(g, h)
    values: dict[str, object] = {"H": h, "G": g, "r": r, "dh": dh, "dout": h * dh, "gdh": g * dh}
    values["share_frac"] = rf"\tfrac{{{share.numerator}}}{{{share.denominator}}}"
    comma = "、" if lang == "zh" else ", "  # a sequence, not a list of things: no "and"
    values["interleave"] = comma.join(str(k // r + 1) for k in range(h))
    values["tiled"] = comma.join(str(k % g + 1) for k in range(h))
    item = story.stage("heads").extra.get("say_reads_item", "")
    sep = story.stage("heads").extra.get("say_reads_sep", "")
    each = ({"heads": join(range(k * r + 1, k * r + r + 1), lang), "g": k + 1} for k in range(g))
    values["list"] = sep.join(formatted(item, e) for e in each)
    cases = {  # filled in this order: a later variant may quote an earlier one
        "reads": "own" if r == 1 else "one" if g == 1 else "some",
        "why": "own" if r == 1 else "one",
        "order": "same" if r == 1 or g == 1 else "differ",
        "share": "all" if g == h else "some",
        "cache": "same" if g == h else "some",
        "pair": "own" if r == 1 else "some",
    }
    return values, cases
