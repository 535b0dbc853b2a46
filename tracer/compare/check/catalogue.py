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

from tracer.compare.check import cachemistakes as K
from tracer.compare.check import published as P
from tracer.compare.check import rotations as R
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
from tracer.compare.check.mistakes import MISTAKES

__all__ = ["BY_CODE", "CATALOGUE", "STRUCTURE", "Entry", "diagnose"]

CATALOGUE: tuple[Entry, ...] = (
    *MISTAKES,
    Entry(
        "rope_style_other",
        ("rope",),
        "Your code pairs the components the {used} way, while the check expects the {checked} pairing: both are "
        "RoPE, but with the same weights they are different models. If you meant the {used} convention, check "
        "again with --rope-style {used}.",
        "你的代码按 {used} 方式配对分量，而这次检查要求的是 {checked} 方式：两者都是旋转位置编码，但用同样的权重时"
        "是两个不同的模型。如果你本来就想用 {used} 约定，请加上 --rope-style {used} 再检查一次。",
        R.other_style,
    ),
    Entry(
        "rope_pairs_mixed",
        ("rope",),
        "The two conventions are mixed: the cos and sin tables are laid out for one pairing (repeat_interleave "
        "for neighbours, or cat for halves) but the partner of each component is taken by the other "
        "(rotate_half, or neighbours swapped), so components are turned by the angle of another pair.",
        "两种约定被混用了：cos 和 sin 表按一种配对方式排列（相邻配对用 repeat_interleave，前后两半用 torch.cat），"
        "而每个分量的搭档却按另一种方式选取（rotate_half，或交换相邻分量），所以分量转过的是另一对的角度。",
        R.pairs_mixed,
    ),
    Entry(
        "rope_direction",
        ("rope",),
        "The pairs are turned the wrong way: the sine's sign is flipped (x cos φ + y sin φ for the first member), "
        "a rotation by −mθ; rotate_half must return (−x2, x1), not (x2, −x1).",
        "分量对转反了方向：sin 的符号反了（第一个分量算成了 x cos φ + y sin φ），转过的是 −mθ；"
        "rotate_half 应当返回 (−x2, x1)，而不是 (x2, −x1)。",
        R.wrong_direction,
    ),
    Entry(
        "rope_theta_exponent",
        ("rope",),
        "The frequencies are base^(−i/d) instead of base^(−2i/d): the exponent lost its factor 2 "
        "(torch.arange(d // 2) / d where torch.arange(0, d, 2) / d is meant), so the slow pairs turn too fast.",
        "频率算成了 base^(−i/d)，而不是 base^(−2i/d)：指数少了因子 2"
        "（应当是 torch.arange(0, d, 2) / d，而不是 torch.arange(d // 2) / d），慢速的分量对转得太快了。",
        R.theta_exponent,
    ),
    Entry(
        "rope_positions",
        ("rope",),
        "The positions start at {start} instead of 0: the first token must not be turned at all "
        "(positions = torch.arange(T)); with the queries and keys both shifted the scores survive, "
        "but a KV cache that adds tokens later would not.",
        "位置从 {start} 而不是从 0 开始：第一个词元应当完全不转（positions = torch.arange(T)）；"
        "查询和键一起平移时注意力分数不变，但之后往键值缓存里追加词元时就会出错。",
        R.positions_off,
    ),
    Entry(
        "rope_values",
        ("rope", "context"),
        "RoPE is applied to the values {how_en} the queries and keys: a value carries what a token says, not where "
        "it is; only the queries and keys are rotated, so that their dot product depends on the distance.",
        "{how_zh}：值向量承载的是词元说了什么，而不是它在哪里；只有查询和键需要旋转，这样它们的点积才只取决于距离。",
        R.values_rotated,
    ),
)

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
        "Run again at other sizes ({sizes}), the code does not compute the lesson: {detail}. "
        "It uses fixed numbers where it should use its arguments (the constructor's, or the sizes of the tensors "
        "it is given).",
        "用另一组尺寸（{sizes_zh}）再运行一次时，代码算出的不是课程的结果：{detail_zh}。"
        "它用了写死的数字，而不是它的参数（构造函数的参数，或传入张量的尺寸）。",
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
        "没有随机失活（dropout）：训练模式下的注意力权重与评估模式下相同；"
        "应当在 softmax 之后对权重施加 nn.Dropout({p})。",
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
    Entry(
        "flash_no_rescale",
        ("context",),
        "The running sum and the accumulator are never rescaled: when a block raises the running max from m_old "
        "to m_new, what was added so far was measured against m_old; multiply both l and o by "
        "exp(m_old − m_new) before adding the new block.",
        "累加和与累加器都没有重新缩放：某一块把运行最大值从 m_old 抬到 m_new 时，之前加进来的各项都是相对 m_old 算的；"
        "加上新块之前，应当把 l 和 o 都乘以 exp(m_old − m_new)。",
        lambda c: None,  # tested on the results by flashcheck, which calls the function at three sizes
    ),
    Entry(
        "flash_sum_only",
        ("context",),
        "The running sum l is rescaled but the output accumulator o is not: when the running max rises, the old "
        "values keep too large a weight; multiply o by the same factor exp(m_old − m_new) as l.",
        "累加和 l 重新缩放了，输出的累加器 o 却没有：运行最大值上升时，旧的值向量保留了过大的权重；"
        "应当把 o 也乘以与 l 相同的重缩放因子 exp(m_old − m_new)。",
        lambda c: None,
    ),
    Entry(
        "flash_block_max",
        ("context",),
        "The exponentials are not taken against the running max: either a block's exponentials use that "
        "block's own max while the rescale uses the running one, or m is never updated after a block; "
        "use m_new = max(m, block max) in exp(s − m_new) and keep it as the new m.",
        "求指数时用的不是运行最大值：要么块内的指数用的是这一块自己的最大值，而重新缩放用的是运行最大值，"
        "要么每一块之后都没有更新 m；应当在 exp(s − m_new) 中使用 m_new = max(m, 块内最大值)，并把它存为新的 m。",
        lambda c: None,
    ),
    Entry(
        "flash_divide_inside",
        ("context",),
        "The accumulator is divided by the running sum inside the loop: o / l after each block mixes normalized "
        "and unnormalized terms (and dividing again at the end divides twice); keep o unnormalized in the loop "
        "and divide once, z = o / l, after the last block.",
        "在循环里就用累加和去除累加器：每一块之后做 o / l，会把已归一化和未归一化的项混在一起"
        "（最后再除一次就除了两次）；"
        "循环中应当让 o 保持未归一化，在最后一块之后只除一次：z = o / l。",
        lambda c: None,
    ),
    Entry(
        "flash_tail_dropped",
        ("context",),
        "The last, shorter block is dropped: with block_size = {block} only the first {kept} of {tokens} keys are "
        "visited (range(0, T − B + 1, B) or T // B blocks); loop over range(0, T, B) and cut the last block at T.",
        "最后那个较短的块被丢掉了：block_size = {block} 时，{tokens} 个键中只访问了前 {kept} 个"
        "（range(0, T − B + 1, B) 或 T // B 个块）；应当遍历 range(0, T, B)，并在 T 处截断最后一块。",
        lambda c: None,
    ),
)

BY_CODE = {e.code: e for e in (*CATALOGUE, *STRUCTURE)}

KVCACHE: tuple[Entry, ...] = tuple(Entry(code, ("generation",), en, zh, lambda c: None) for code, en, zh in K.MISTAKES)
"""Lesson kvcache's mistakes, tested by driving the generation (:mod:`.cachemistakes`), not on one run's tensors."""
BY_CODE.update({e.code: e for e in KVCACHE})


def diagnose(c: Context, stages: list[str]) -> Hit | None:
    """The first catalogue entry for one of ``stages`` that the student's tensors bear out."""
    for entry in CATALOGUE:
        if set(stages) & set(entry.stages):
            hit = entry.test(c)
            if hit is not None:
                return Hit(hit.seen, hit.steps, hit.detail, entry.code, hit.where)
    return None
