"""The catalogue's first mistakes: layout, bias, scores, scaling, softmax, masks, dropout, heads, windows, groups.

Each :class:`~.entry.Entry` predicts what the student's run would hold if
they had made that mistake; :mod:`.catalogue` puts these first, then the
mistakes found in published code, and tries them in that order.
"""

from __future__ import annotations

from tracer.compare.check import groups as G
from tracer.compare.check import hypotheses as H
from tracer.compare.check import published as P
from tracer.compare.check import windows as W
from tracer.compare.check.entry import Entry

MISTAKES: tuple[Entry, ...] = (
    Entry(
        "output_layout",
        ("context", "output", "merge"),
        "The result holds the right values but has shape {shape} where the lesson's has {lesson}: "
        "it is transposed, reshaped or has an extra axis, so the next layer would read it wrongly.",
        "结果的数值是对的，但形状是 {shape}，而课程中是 {lesson}：它被转置、改变了形状或多了一个维度，下一层会读错它。",
        P.layout,
    ),
    Entry(
        "bias_used",
        ("projections", "heads"),
        "The query, key and value projections add a bias ({param}) that the lesson does not have: "
        "nn.Linear has bias=True by default, so pass bias=qkv_bias.",
        "查询、键、值的投影加上了课程中没有的偏置（{param}）：nn.Linear 默认 bias=True，应当传入 bias=qkv_bias。",
        H.bias,
    ),
    Entry(
        "scores_transposed",
        ("scores", "scaling", "mask", "weights"),
        "The score table is transposed: queries and keys are swapped (keys @ queries.T), "
        "so row i holds the scores of key i rather than those of query i.",
        "注意力分数表被转置了：查询和键互换了位置（keys @ queries.T），"
        "第 i 行是第 i 个键的分数，而不是第 i 个查询的分数。",
        H.transposed,
    ),
    Entry(
        "scale_wrong",
        ("scaling", "mask", "weights"),
        "The scores are divided by {divisor} = {value} instead of √d_k, the square root of one key's size.",
        "注意力分数除以了 {divisor} = {value}，而不是 √d_k（单个键向量维度的平方根）。",
        H.scale_wrong,
    ),
    Entry(
        "scale_inverted",
        ("scaling", "mask", "weights"),
        "The scores are multiplied by √d_k instead of divided by it, so the softmax gets sharper "
        "as the keys grow instead of staying calm.",
        "注意力分数乘以了 √d_k，而不是除以 √d_k；键的维度越大，softmax 反而越尖锐。",
        H.scale_inverted,
    ),
    Entry(
        "scale_missing",
        ("scaling", "mask", "weights"),
        "The scores are not divided by √d_k before the softmax; with larger keys the softmax "
        "becomes nearly one-hot and its gradients vanish.",
        "在 softmax 之前没有把注意力分数除以 √d_k；键的维度越大，softmax 越接近独热分布，梯度也随之消失。",
        H.scale_missing,
    ),
    Entry(
        "softmax_dim",
        ("weights",),
        "The softmax runs over the wrong axis: each query's weights must sum to 1 over the keys "
        "(the last axis, dim=-1), but yours sum to 1 over another axis.",
        "softmax 作用在了错误的维度上：每个查询的权重应当在键的维度（最后一维，"
        "dim=-1）上归一化为 1，而你的代码在另一个维度上归一化。",
        H.softmax_dim,
    ),
    Entry(
        "sum_normalised",
        ("weights",),
        "The weights are the scores divided by their sum instead of a softmax: they still sum to 1, "
        "but a negative score gives a negative weight; use torch.softmax(scores, dim=-1).",
        "注意力权重是用分数除以分数之和得到的，而不是 softmax：它们的和仍为 1，"
        "但负的分数会得到负的权重；应当使用 torch.softmax(scores, dim=-1)。",
        H.sum_normalised,
    ),
    Entry(
        "mask_after_softmax",
        ("mask", "weights"),
        "The causal mask is applied after the softmax without renormalising, so the rows no longer "
        "sum to 1; fill the scores with −∞ before the softmax instead.",
        "因果掩码是在 softmax 之后施加的，而且没有重新归一化，"
        "所以每一行的权重之和不再是 1；应当在 softmax 之前用 −∞ 填充分数。",
        H.mask_after,
    ),
    Entry(
        "mask_zero",
        ("mask", "scaling", "weights"),
        "The masked scores are filled with 0 instead of −∞, so after the softmax the future tokens "
        "still get weight (e⁰ = 1).",
        "被掩码的分数填成了 0 而不是 −∞，所以经过 softmax 之后，后面的词元仍然分到了权重（e⁰ = 1）。",
        H.mask_zero,
    ),
    Entry(
        "mask_diagonal",
        ("mask", "scaling", "weights"),
        "The mask hides the diagonal too (triu with diagonal=0 instead of 1): no token may attend "
        "to itself, and the first token has no key left, so its weights are NaN.",
        "掩码把对角线也遮住了（triu 用了 diagonal=0 而不是 1）："
        "每个词元都不能关注自己，第一个词元没有可用的键，权重变成 NaN。",
        H.mask_diagonal,
    ),
    Entry(
        "mask_shifted",
        ("mask", "scaling", "weights"),
        "The mask starts one key too late (triu with diagonal=2 instead of 1): each token also sees "
        "the token right after it, so the future leaks in.",
        "掩码晚了一位（triu 用了 diagonal=2 而不是 1）：每个词元还能看到紧随其后的词元，未来的信息泄露了进来。",
        H.mask_shifted,
    ),
    Entry(
        "mask_missing",
        ("mask", "scaling", "weights"),
        "There is no causal mask{where_en}: every token attends to the tokens after it as well; fill the "
        "scores above the diagonal with −∞ before the softmax.",
        "缺少因果掩码{where_zh}：每个词元也关注了它之后的词元；应当在 softmax 之前把对角线以上的分数填成 −∞。",
        H.mask_missing,
    ),
    Entry(
        "mask_not_cut",
        ("mask",),
        "The mask is not cut to the sequence length: on {tokens} tokens it is still "
        "context_length x context_length; use mask[:num_tokens, :num_tokens].",
        "掩码没有按序列长度截取：输入只有 {tokens} 个词元时，它仍是 context_length x context_length；"
        "应当使用 mask[:num_tokens, :num_tokens]。",
        H.mask_not_cut,
    ),
    Entry(
        "dropout_on_scores",
        ("dropout",),
        "Dropout is applied to the attention scores instead of to the attention weights (the softmax's output).",
        "随机失活（dropout）作用在了注意力分数上，而不是注意力权重（softmax 的输出）上。",
        H.dropout_scores,
    ),
    Entry(
        "dropout_before_softmax",
        ("dropout",),
        "Dropout is applied to the masked scores just before the softmax instead of to the weights after it: "
        "a dropped score becomes 0, which the softmax still weighs (e⁰ = 1), a dropped hidden score becomes NaN "
        "(−∞ × 0) and spoils its whole row, and the kept scores are multiplied by 1/(1−p) before the exponential; "
        "apply the dropout to the softmax's output.",
        "随机失活（dropout）作用在了 softmax 之前、已加掩码的分数上，而不是 softmax 之后的权重上：被丢弃的分数变成 0，"
        "softmax 仍会给它权重（e⁰ = 1）；被丢弃的屏蔽分数变成 NaN（−∞ × 0），整行都被破坏；保留下来的分数在取指数之前"
        "就被乘以了 1/(1−p)。应当对 softmax 的输出施加随机失活。",
        H.dropout_masked,
    ),
    Entry(
        "dropout_unscaled",
        ("dropout",),
        "Dropout zeroes weights without multiplying the kept ones by 1/(1−p) = {scale}, "
        "so the weights shrink during training; nn.Dropout does this scaling for you.",
        "随机失活把一部分权重置零，却没有把保留下来的权重乘以 1/(1−p) = {scale}，"
        "训练时权重整体变小；nn.Dropout 会自动完成这一缩放。",
        H.dropout_unscaled,
    ),
    Entry(
        "dropout_in_eval",
        ("context",),
        "Dropout still runs in eval mode (p = {p}): the weights are zeroed at random even after "
        "model.eval(); use nn.Dropout, or F.dropout(..., training=self.training).",
        "在评估模式下随机失活仍在起作用（p = {p}）：即使调用了 model.eval()，权重仍被随机置零；"
        "应当使用 nn.Dropout，或 F.dropout(..., training=self.training)。",
        H.dropout_in_eval,
    ),
    Entry(
        "heads_shared",
        ("projections",),
        "The heads share their weights ({heads}): one module repeated in the ModuleList (or copied) makes "
        "every head compute the same attention; build a new head for each entry.",
        "多个头共用了同一组权重（{heads}）：在 ModuleList 里重复放入同一个模块（或其副本），"
        "每个头算出的注意力都一样；应当为每个位置新建一个头。",
        H.heads_shared,
    ),
    Entry(
        "heads_concat_dim",
        ("merge",),
        "The heads' outputs are joined along dim={dim} instead of the last axis: "
        "use torch.cat([head(x) for head in self.heads], dim=-1).",
        "多个头的输出沿 dim={dim} 拼接，而不是沿最后一维："
        "应当使用 torch.cat([head(x) for head in self.heads], dim=-1)。",
        H.heads_concat_dim,
    ),
    Entry(
        "heads_not_transposed",
        ("merge",),
        "The heads are merged without transposing back: (b, heads, T, d_head) must become "
        "(b, T, heads, d_head) with .transpose(1, 2) before .view(b, T, d_out).",
        "合并多个头之前没有把维度转置回来：(b, heads, T, d_head) 必须先用 .transpose(1, 2) 变成 "
        "(b, T, heads, d_head)，再 .view(b, T, d_out)。",
        H.heads_merge,
    ),
    Entry(
        "out_proj_missing",
        ("output",),
        "The output projection is missing: the merged heads are returned without passing through out_proj.",
        "缺少输出投影：合并后的多头结果没有经过 out_proj 就直接返回了。",
        H.out_missing,
    ),
    Entry(
        "out_proj_per_head",
        ("output",),
        "The output projection is applied to each head on its own ({param}) instead of once to the "
        "merged heads with an nn.Linear(d_out, d_out).",
        "输出投影被分别施加在每个头上（{param}），而不是在合并后的结果上施加一次 nn.Linear(d_out, d_out)。",
        H.out_per_head,
    ),
    Entry(
        "values_times_scores",
        ("context", "weights"),
        "The context vectors weight the values by the raw scores instead of by the attention weights "
        "(the softmax's output).",
        "上下文向量用原始注意力分数而不是注意力权重（softmax 的输出）去加权值向量。",
        H.values_scores,
    ),
    Entry(
        "window_width_off",
        ("mask", "scaling", "weights"),
        "The window is off by one: each query sees {seen} keys instead of w = {width}; a key j is in the "
        "window of query i when i − w < j ≤ i, so hide j ≤ i − w (torch.tril(ones, diagonal=-w)).{convention}",
        "窗口差了一位：每个查询看到 {seen} 个键，而不是 w = {width} 个；键 j 在查询 i 的窗口内，当且仅当 "
        "i − w < j ≤ i，所以应当遮住 j ≤ i − w（torch.tril(ones, diagonal=-w)）。{convention_zh}",
        W.width_off,
    ),
    Entry(
        "window_not_causal",
        ("mask", "scaling", "weights"),
        "The window is applied without the causal part: it hides only the keys too far away, |i − j| ≥ w, "
        "so each query also sees the w − 1 tokens after it; hide j > i as well.",
        "窗口没有带上因果部分：它只遮住了离得太远的键（|i − j| ≥ w），"
        "所以每个查询还看到了它之后的 w − 1 个词元；还应当遮住 j > i 的键。",
        W.not_causal,
    ),
    Entry(
        "window_missing",
        ("mask", "scaling", "weights"),
        "Only the causal mask is applied, without the window of w = {width}: each query still sees every "
        "token before it; hide the keys j ≤ i − w too.",
        "只施加了因果掩码，没有宽度 w = {width} 的窗口：每个查询仍然看到它之前的所有词元；还应当遮住 j ≤ i − w 的键。",
        W.window_missing,
    ),
    Entry(
        "gqa_orders_mixed",
        ("heads", "context"),
        "The keys and the values are handed to the query heads in different orders: the {wrong_en} are tiled "
        "with repeat while the other is expanded with repeat_interleave, so a head weighs the values of "
        "another group than the one it scored; expand both the same way.",
        "键和值向量分给查询头的顺序不一致：{wrong_zh}用 repeat 铺开，另一个用 repeat_interleave 展开，"
        "所以一个头加权的是另一组的值向量，而不是它计算注意力分数时用的那一组；两者应当用同样的方式展开。",
        G.orders_mixed,
    ),
    Entry(
        "gqa_repeat",
        ("heads", "scores", "mask", "scaling", "weights", "context"),
        "The key/value groups are tiled with repeat instead of repeat_interleave: query head h reads group "
        "(h − 1) mod G + 1 instead of ⌈h / {r}⌉, so heads 1 and 2 no longer share a group; use "
        "keys.repeat_interleave(group_size, dim=1).",
        "键值组是用 repeat 而不是 repeat_interleave 铺开的：查询头 h 读的是第 (h − 1) mod G + 1 组，"
        "而不是第 ⌈h / {r}⌉ 组，头 1 和头 2 不再共用一组；应当使用 keys.repeat_interleave(group_size, dim=1)。",
        G.repeat_not_interleave,
    ),
)
"""In the order they are tried."""
