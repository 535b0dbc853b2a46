"""The report's figures as matplotlib ``Figure`` objects, for slides and notebooks.

>>> import tracer
>>> t = tracer.trace_lesson("simple")
>>> fig = tracer.plot.heatmap(t, "alpha")          # doctest: +SKIP
>>> fig.savefig("alpha.pdf")                        # doctest: +SKIP

The same figures as the page (:mod:`tracer.present.figures` draws those as
hand-written SVG, without matplotlib, so reports stay fast), drawn in the
same colours: the Blues scale of the heatmaps with each number in white, ink
or black, whichever passes WCAG AA on its cell, the focus query outlined and
labelled in orange, the page's series colours.  Each function returns a new
``matplotlib.figure.Figure`` (no pyplot state, no window), to be changed the
matplotlib way (``fig.axes[0].set_title(...)``) and saved with
``fig.savefig``.  matplotlib is imported here and by ``attn-trace figures``
only; install it with ``pip install 'attn-trace[plot]'``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tracer.canvas import blank as _figure
from tracer.core import fmt
from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.present.figures import bars, marks
from tracer.present.figures.vectors import LABEL, OTHER
from tracer.present.strings import Strings

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FOCUS = "#c2410c"
SERIES = {"div.alpha": "div", "naive.alpha": "naive", "alpha": "stable", "torch.alpha": "torch"}
"""The four normalizations of the tutorial's figure, by node, and their legend keys (``norm.s_<key>``)."""


def _style(ax: Any) -> None:
    ax.tick_params(colors=marks.INK, labelsize=9)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_color(marks.RULE)


def _lead(trace: Trace, node: str, head: int, batch: int) -> tuple[np.ndarray, str]:
    """The (i, j) or (j, c) matrix of ``node`` for one head and batch entry, and a label for that head."""
    n = trace.node(node)
    value = np.asarray(n.value, dtype=np.float64)
    label = ""
    for axis in n.axes[:-2]:
        if axis == "h":
            if not 1 <= head <= value.shape[0]:
                raise InputError(f"{node} has {value.shape[0]} heads: head {head} is not one of them")
            value, label = value[head - 1], f" (head {head})"
        elif axis == "b":
            value = value[batch - 1]
        else:
            raise InputError(f"{node} has axes {n.axes}: a heatmap needs (i, j) last")
    return value, label


def heatmap(trace: Trace, node: str = "alpha", head: int = 1, batch: int = 1, lang: str = "en") -> Figure:
    """The (i, j) matrix ``node`` shaded on the report's Blues scale, each cell numbered, the focus query outlined."""
    m, head_label = _lead(trace, node, head, batch)
    if m.ndim != 2:
        raise InputError(f"{node} is not a matrix of query rows and key columns")
    s = Strings(lang)
    r, c = m.shape
    fig = _figure(1.2 + 0.62 * c, 1.0 + 0.42 * r)
    ax = fig.add_subplot()
    finite = m[np.isfinite(m)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    span = hi - lo if hi > lo else 1.0
    colours = np.array(
        [[_rgb(marks.blues((v - lo) / span)) if np.isfinite(v) else _rgb("#e2e8f0") for v in row] for row in m]
    )
    ax.imshow(colours, aspect="auto", interpolation="nearest")
    tokens = trace.tokens[: max(r, c)]
    for i in range(r):
        for j in range(c):
            v = float(m[i, j])
            fill = marks.blues((v - lo) / span) if np.isfinite(v) else "#e2e8f0"
            ax.text(j, i, fmt.num(v), ha="center", va="center", fontsize=8, color=marks.ink_on(fill))
    q = trace.query - 1
    if q < r:
        ax.add_patch(_outline(q, c))
    ax.tick_params(length=0, labelsize=9, colors=marks.INK)
    ax.set_xticks(range(c), tokens[:c], rotation=45, ha="right")
    ax.set_yticks(range(r), tokens[:r])
    for k, tick in enumerate(ax.get_yticklabels()):
        tick.set_color(FOCUS if k == q else marks.INK)
    ax.set_xlabel(s("figures.key"), color=marks.MUTED)
    ax.set_ylabel(s("figures.query"), color=marks.MUTED)
    if head_label:
        ax.set_title(s("lesson.head", h=head), fontsize=10, color=marks.INK, loc="left")
    for spine in ax.spines.values():
        spine.set_visible(False)
    return fig


def _outline(row: int, cols: int) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((-0.5, row - 0.5), cols, 1, fill=False, edgecolor=FOCUS, linewidth=2)


def _rgb(colour: str) -> tuple[float, float, float]:
    return (int(colour[1:3], 16) / 255, int(colour[3:5], 16) / 255, int(colour[5:7], 16) / 255)


def contributions(trace: Trace, step: str, lang: str = "en") -> Figure:
    """How a context vector (``"z[2]"``, a head's ``"wrap.z[1,1,2]"``) is built: each token's share, per component.

    The step is one query's row of a weighted sum whose terms the trace holds
    (``z.t``); positive shares stack up, negative ones down, and a black
    mark shows the total of each component.
    """
    row = trace[step]
    terms_name = f"{row.node.name}.t"
    try:
        terms = np.asarray(trace.node(terms_name).value[row.index], dtype=np.float64)
    except Exception:
        raise InputError(f"{step} is not a row of a weighted sum with recorded terms ({terms_name})") from None
    z = np.asarray(row.value, dtype=np.float64)
    if terms.ndim != 2 or z.ndim != 1:
        raise InputError(f"{step} is not one query's context vector: name a row such as z[2]")
    s = Strings(lang)
    fig = _figure(1.6 + 0.9 * z.shape[0], 3.0)
    ax = fig.add_subplot()
    _style(ax)
    up, down = np.zeros(z.shape[0]), np.zeros(z.shape[0])
    for j, share in enumerate(terms):
        colour = bars.PALETTE[j % len(bars.PALETTE)]
        base = np.where(share >= 0, up, down)
        ax.bar(range(z.shape[0]), share, bottom=base, color=colour, width=0.6, label=trace.tokens[j])
        up, down = up + np.maximum(share, 0), down + np.minimum(share, 0)
    total = s("lesson.bars_total", q=marks.sup(f"({row.index[-1] + 1})"))  # z⁽²⁾, as the report labels it
    ax.scatter(range(z.shape[0]), z, marker="_", s=600, color=marks.INK, linewidths=2, zorder=3, label=total)
    ax.axhline(0, color=marks.RULE, linewidth=0.8)
    ax.set_xticks(range(z.shape[0]), [s("lesson.bars_comp", c=c + 1) for c in range(z.shape[0])])
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def vectors(trace: Trace, lang: str = "en") -> Figure:
    """The input embeddings as arrows from the origin (3-D for three components, else components 1 and 2)."""
    x = np.asarray(trace.tensor("x"), dtype=np.float64)
    while x.ndim > 2:  # a batch: its first sample
        x = x[0]
    q, d = trace.query - 1, x.shape[1]
    fig = _figure(4.2, 3.8)
    three = d == 3
    ax: Any = fig.add_subplot(projection="3d") if three else fig.add_subplot()
    inks = []
    for j, v in enumerate(x):
        colour, width = (FOCUS, 2.2) if j == q else (OTHER, 1.2)
        inks.append(LABEL[colour])  # a label a shade darker than its arrow: 4.5:1 on the grey panes, as in the report
        point = v[:3] if three else v[:2]
        if three:
            ax.quiver(0, 0, 0, *point, color=colour, linewidth=width, arrow_length_ratio=0.08)
        else:
            ax.annotate("", point, (0, 0), arrowprops={"arrowstyle": "->", "color": colour, "linewidth": width})
    if three:
        top = max(float(x.max()), 0.0) * 1.1 or 1.0
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_zlim(0, top)
        ax.view_init(elev=30, azim=-60)
        ax.set_box_aspect(None, zoom=0.88)  # room for the axis titles: at full size "component 3" fell off the right
        ax.set_zlabel(Strings(lang)("figures.axis", k=3), fontsize=8)
    else:
        _style(ax)
        top = float(np.abs(x[:, :2]).max()) or 1.0
        ax.set_xlim(min(0.0, float(x[:, 0].min())) - 0.05, max(top, float(x[:, 0].max())) + 0.15)
        ax.set_ylim(min(0.0, float(x[:, 1].min())) - 0.05, max(top, float(x[:, 1].max())) + 0.15)
    s = Strings(lang)
    ax.set_xlabel(s("figures.axis", k=1), fontsize=8)
    ax.set_ylabel(s("figures.axis", k=2), fontsize=8)
    _tip_labels(fig, ax, x[:, :3] if three else x[:, :2], trace.tokens, inks)
    return fig


def _tip_labels(fig: Figure, ax: Any, tips: np.ndarray, tokens: list[str], inks: list[str]) -> None:
    """Each token's name at its arrow's tip, moved up or down a line at a time until it touches no other name.

    Two embeddings that point almost the same way ("journey" and "starts"
    in the tutorial) have tips a few pixels apart on the page, and their
    names would print over each other.  The tips are placed in the figure's
    own 2-D coordinates (projected, for 3-D axes, with the view drawn once),
    and a name that would overlap one placed before it is tried 9 points
    higher, then lower, then 18 points ..., in token order: deterministic.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas: Any = FigureCanvasAgg(fig)  # a canvas to measure text on; savefig picks each format's own
    canvas.draw()  # the 3-D projection and the layout, as they will be saved
    renderer = canvas.get_renderer()
    if tips.shape[1] == 3:
        from mpl_toolkits.mplot3d import proj3d  # type: ignore[import-untyped]

        xs, ys, _ = proj3d.proj_transform(tips[:, 0], tips[:, 1], tips[:, 2], ax.get_proj())
        flat = list(zip(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float), strict=True))
    else:
        flat = [(float(a), float(b)) for a, b in tips]
    placed: list[Any] = []
    for (px, py), token, ink in zip(flat, tokens, inks, strict=True):
        for k in range(41):
            dy = 9 * ((k + 1) // 2) * (1 if k % 2 else -1)  # 0, +9, -9, +18, -18 ... points
            text = ax.annotate(f" {token}", (px, py), xytext=(0, dy), textcoords="offset points", color=ink, fontsize=8)
            box = text.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed):
                placed.append(box)
                break
            text.remove()


def normalizations(trace: Trace, lang: str = "en") -> Figure:
    """The tutorial's four normalizations of the focus query's scores, one group of bars per token."""
    s, q = Strings(lang), trace.query
    fig = _figure(1.2 + 0.55 * len(trace.tokens), 3.0)
    ax = fig.add_subplot()
    _style(ax)
    t = len(trace.tokens)
    for k, (node, key) in enumerate(SERIES.items()):
        values = np.asarray(trace.tensor(node)[q - 1], dtype=np.float64)
        ax.bar(np.arange(t) + (k - 1.5) * 0.2, values, width=0.2, color=bars.SERIES[k], label=s(f"norm.s_{key}"))
    ax.set_xticks(range(t), trace.tokens)
    ax.get_xticklabels()[q - 1].set_color(FOCUS)
    ax.set_ylabel(s("norm.ylabel"), color=marks.MUTED)
    ax.legend(fontsize=8, frameon=False, ncols=2, loc="lower left", bbox_to_anchor=(0.0, 1.0))
    return fig


def idea(trace: Trace, lang: str = "en") -> Figure:
    """The picture of the lesson's idea that its page opens with (the causal triangle, the cache growing ...).

    The lesson draws it from the trace (its ``idea`` page part); this is the
    same drawing as the page's SVG, as a matplotlib figure for slides.
    """
    from tracer.canvas import drawn
    from tracer.present.views.idea import picture

    picture_ = picture(trace, Strings(lang))
    if picture_ is None:
        raise InputError(f"lesson {trace.meta.get('lesson', '?')!r} draws no picture of its idea")
    return drawn(picture_.scene)


def _with_idea(trace: Trace, lang: str, figures: dict[str, Callable[[], Figure]]) -> dict[str, Callable[[], Figure]]:
    """``figures`` with the picture of the idea first, when the trace's lesson draws one."""
    from tracer.present.views.idea import NAME
    from tracer.record import registry
    from tracer.record.lesson import page_part

    registered = registry.of(trace)
    if registered is None or page_part(registered, "idea") is None:
        return figures
    return {NAME: lambda: idea(trace, lang), **figures}


def walkthrough_figures(trace: Trace, lang: str = "en") -> dict[str, Callable[[], Figure]]:
    """The figures of the walk-through page (:func:`tracer.lessons.simple.page.page`), by file name."""
    q = trace.query
    return {
        "fig-inputs": lambda: vectors(trace, lang),
        "fig-weights": lambda: normalizations(trace, lang),
        "fig-context": lambda: contributions(trace, f"z[{q}]", lang),
        "fig-omega": lambda: heatmap(trace, "omega", lang=lang),
        "fig-alpha": lambda: heatmap(trace, "alpha", lang=lang),
    }


def report_figures(trace: Trace, lang: str = "en") -> dict[str, Callable[[], Figure]]:
    """Every figure of the trace's report, by the report's file name (``fig-alpha``), each made when called."""
    from tracer.present.report import narrative_of
    from tracer.present.views import backward
    from tracer.record import registry
    from tracer.record.lesson import page_part

    registered = registry.of(trace)
    own = page_part(registered, "figures") if registered is not None else None
    if own is not None:  # a lesson with a page of its own draws that page's figures
        figures: dict[str, Callable[[], Figure]] = own(trace, lang)
        return _with_idea(trace, lang, figures | _backward_figures(trace, lang))
    q = trace.query
    story = narrative_of(trace, lang)
    out: dict[str, Callable[[], Figure]] = {}
    for stage in backward.forward(trace.stages, trace):
        told = story.stage(stage)
        for name in told.heatmap:
            for h, suffix in _heads(trace, name):
                out[f"fig-{_anchor(name)}{suffix}"] = _bind(heatmap, trace, name, h, lang)
        for name in told.bars:
            for h, suffix in _heads(trace, name):
                lead = [str(h) if a == "h" else "1" for a in trace.node(name).axes[:-2] if a in ("h", "b")]
                row = min(q, trace.node(name).sizes.get("i", q))  # a cache step's one new query: its only row
                step = f"{name}[{','.join([*lead, str(row)])}]"
                out[f"fig-{_anchor(name)}{suffix}"] = _bind(contributions, trace, step, None, lang)
    return _with_idea(trace, lang, out | _backward_figures(trace, lang))


def _backward_figures(trace: Trace, lang: str) -> dict[str, Callable[[], Figure]]:
    """The backward section's heatmaps (the weights P, then their scores' gradient dS), as its page names them."""
    from tracer.present.report import narrative_of
    from tracer.present.views import backward
    from tracer.present.views.lessonctx import LessonCtx

    if not backward.stages(trace):
        return {}

    ctx = LessonCtx(trace, Strings(lang), 4, story=narrative_of(trace, lang))
    out: dict[str, Callable[[], Figure]] = {}
    for prefix, name in backward.figures(ctx):
        for h, suffix in _heads(trace, name):
            out[f"fig-{prefix}{_anchor(name)}{suffix}"] = _bind(heatmap, trace, name, h, lang)
    return out


def _heads(trace: Trace, name: str) -> list[tuple[int, str]]:
    node = trace.node(name)
    if "h" not in node.axes:
        return [(1, "")]
    return [(h + 1, f"-h{h + 1}") for h in range(node.sizes["h"])]


def _anchor(name: str) -> str:
    from tracer.present.views.nodes import anchor

    return anchor(name)


def _bind(draw: Callable[..., Figure], trace: Trace, what: str, head: int | None, lang: str) -> Callable[[], Figure]:
    if head is None:
        return lambda: draw(trace, what, lang=lang)
    return lambda: draw(trace, what, head=head, lang=lang)
