"""The diagnosis catalogue: common mistakes, each a hypothesis tested against the student's tensors.

An entry predicts what the student's run would hold if they had made that
mistake (computed from the reference's own values, :mod:`variants`) and looks
for the prediction among the student's tensors.  Entries are tried in this
order, only those that apply to the stage of the first divergence; the first
one borne out is the diagnosis.  Each has one sentence in English and Chinese
(``{name}`` placeholders are filled from the hit's details) and names the
reference steps involved.  ``docs/check.md`` lists them.
"""

from __future__ import annotations

from tracer.compare.check import published as P
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
from tracer.compare.check.mistakes import MISTAKES

__all__ = ["BY_CODE", "CATALOGUE", "STRUCTURE", "Entry", "diagnose"]

CATALOGUE: tuple[Entry, ...] = MISTAKES

STRUCTURE: tuple[Entry, ...] = (
    Entry(
        "grouped_query",
        ("structure",),
        "The keys and values are narrower than the queries ({detail}): this is grouped-query attention, "
        "where several query heads share one key/value head; the lesson gives every head its own keys and values.",
        "键和值比查询窄（{detail}）：这是分组查询注意力，多个查询头共享一个键/值头；课程中每个头都有自己的键和值。",
        lambda c: None,
    ),
    Entry(
        "latent_kv",
        ("structure",),
        "The keys and values come from one shared low-rank latent ({down} maps {d_in} -> {r}, then {ups} map "
        "{r} -> {d_out}): this is latent attention, whose keys and values have rank at most {r}; the lesson "
        "projects the inputs to keys and to values directly, each with its own {d_in} -> {d_out} matrix.",
        "键和值来自一个共享的低秩潜在表示（{down} 把 {d_in} 维映射到 {r} 维，再由 {ups} 映射到 {d_out} 维）："
        "这是潜在注意力，其键和值的秩至多为 {r}；课程直接把输入分别投影为键和值，各用一个 {d_in} → {d_out} 的矩阵。",
        lambda c: None,
    ),
    Entry(
        "sizes_ignored",
        ("structure",),
        "Built a second time with other sizes ({sizes}), the module does not compute the lesson: {detail}. "
        "It uses fixed numbers where it should use its constructor's arguments.",
        "用另一组尺寸（{sizes_zh}）再构建一次时，模块算出的不是课程的结果：{detail_zh}。它用了写死的数字，而不是构造函数的参数。",
        lambda c: None,
    ),
)
"""Differences of structure, found outside the stage-by-stage comparison (they have no first divergence)."""

CATALOGUE = (
    *CATALOGUE,
    Entry(
        "mask_inverted",
        ("mask", "scaling", "weights"),
        'The mask hides the past and keeps the future: a boolean mask whose True means "masked" (torch.triu(…, '
        'diagonal=1).bool()) was passed to F.scaled_dot_product_attention, which reads True as "may attend"; '
        "pass ~mask, or is_causal=True.",
        "掩码遮住了过去、留下了未来：把 True 表示“遮住”的布尔掩码（torch.triu(…, diagonal=1).bool()）传给了 "
        "F.scaled_dot_product_attention，而它把 True 读作“可以关注”；应当传入 ~mask，或者使用 is_causal=True。",
        P.mask_inverted,
    ),
    Entry(
        "dropout_missing",
        ("dropout",),
        "There is no dropout: in training mode the attention weights are the same as in eval mode; "
        "apply nn.Dropout({p}) to the weights after the softmax.",
        "没有 dropout：训练模式下的注意力权重与评估模式下相同；应当在 softmax 之后对权重施加 nn.Dropout({p})。",
        P.dropout_missing,
    ),
    Entry(
        "returns_weights",
        ("context", "output"),
        "The code returns the attention weights instead of the context vectors: multiply the weights by the "
        "values (attn_weights @ values) and return that.",
        "代码返回的是注意力权重，而不是上下文向量：应当把权重乘以值向量（attn_weights @ values）再返回。",
        P.returns_weights,
    ),
    Entry(
        "scale_extra",
        ("weights", "context"),
        "The scores are divided by √d before the softmax: this lesson has no scaling (it comes with the "
        "trainable weights of the next lesson).",
        "在 softmax 之前把注意力分数除以了 √d：这一课没有缩放（缩放在下一课引入可训练权重时才出现）。",
        P.scale_extra,
    ),
    Entry(
        "context_transposed",
        ("context",),
        "The context vectors mix the inputs with the transposed weights (inputs.T @ attn_weights, or "
        "attn_weights.T @ inputs): each context vector must be attn_weights @ inputs, row i weighting the inputs "
        "by query i's weights.",
        "上下文向量用转置后的权重去混合输入（inputs.T @ attn_weights，或 attn_weights.T @ inputs）："
        "应当是 attn_weights @ inputs，第 i 行用第 i 个查询的权重加权输入。",
        P.context_transposed,
    ),
    Entry(
        "mask_window",
        ("mask", "scaling", "weights"),
        "This is sliding-window attention: besides the future, each token is kept from keys {w} or more tokens "
        "back; the lesson's causal mask hides only the future.",
        "这是滑动窗口注意力：除了未来的词元，每个词元还看不到 {w} 个或更多词元之前的键；课程的因果掩码只遮住未来。",
        P.mask_window,
    ),
)

BY_CODE = {e.code: e for e in (*CATALOGUE, *STRUCTURE)}


def diagnose(c: Context, stages: list[str]) -> Hit | None:
    """The first catalogue entry for one of ``stages`` that the student's tensors bear out."""
    for entry in CATALOGUE:
        if set(stages) & set(entry.stages):
            hit = entry.test(c)
            if hit is not None:
                return Hit(hit.seen, hit.steps, hit.detail, entry.code, hit.where)
    return None
