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

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tracer.compare.check import variants as V
from tracer.compare.check.context import Context, Hit


@dataclass(frozen=True)
class Entry:
    """One mistake: its code, the stages where it shows first, its sentences, and its test."""

    code: str
    stages: tuple[str, ...]
    en: str
    zh: str
    test: Callable[[Context], Hit | None]

    def sentence(self, lang: str, detail: dict[str, str]) -> str:
        """The explanation in ``lang``, with the hit's details filled in."""
        return (self.zh if lang == "zh" else self.en).format(**detail)


def _bias(c: Context) -> Hit | None:
    for key, role in (("q", "b_query"), ("k", "b_key"), ("v", "b_value")):
        if role in c.roles and c.has(key):
            ref, axes = c.ref(key)
            hit = c.holds(ref + c.roles[role].value, axes)
            if hit:
                return Hit(hit, (c.step(key),), {"param": c.roles[role].param})
    return None


def _transposed(c: Context) -> Hit | None:
    omega, axes = c.ref("omega")
    swapped = V.swap_ij(omega, axes)
    if np.allclose(swapped, omega):
        return None  # a symmetric table (lesson simple): transposing changes nothing
    tries = [swapped, swapped / c.sqrt_dk]
    if c.causal:
        masked = V.fill(swapped, axes, -np.inf)
        tries += [masked, masked / c.sqrt_dk, V.softmax(masked / c.sqrt_dk, -1)]
    else:
        tries.append(V.softmax(swapped / c.sqrt_dk, -1))
    return c.first(tries, axes, (c.step("omega"), c.step("q"), c.step("k")))


def _scale_wrong(c: Context) -> Hit | None:
    if c.spec.name == "simple":
        return None  # lesson simple does not scale
    d = c.spec
    divisors = {"d_k": float(d.head_dim), "√d_in": math.sqrt(d.d_in), "√T": math.sqrt(c.tokens)}
    if d.heads > 1:
        divisors = {"√d_out": math.sqrt(d.d_out), **divisors}
    omega, axes = c.ref("omega")
    base = V.fill(omega, axes, -np.inf) if c.causal else omega
    for name, div in divisors.items():
        if abs(div - c.sqrt_dk) < 1e-9 or abs(div - 1) < 1e-9:
            continue
        scaled = base / div
        tries = [omega / div, scaled] + [s for _, s in V.softmaxes(scaled)]
        hit = c.first(tries, axes, (c.step("omega"),), {"divisor": name, "value": f"{div:.4g}"})
        if hit:
            return hit
    return None


def _scale_missing(c: Context) -> Hit | None:
    if c.spec.name == "simple":
        return None
    omega, axes = c.ref("omega")
    base = V.fill(omega, axes, -np.inf) if c.causal else omega
    return c.first([s for _, s in V.softmaxes(base)], axes, (c.step("omega"), c.step("alpha")))


def _softmax_dim(c: Context) -> Hit | None:
    omega, axes = c.ref("omega")
    base = V.fill(omega, axes, -np.inf) if c.causal else omega
    base = base / c.sqrt_dk if c.spec.name != "simple" else base
    j = axes.index("j")
    tries = [s for ax, s in V.softmaxes(base) if ax != j]
    return c.first(tries, axes, (c.step("alpha"),))


def _mask_after(c: Context) -> Hit | None:
    if not c.causal:
        return None
    omega, axes = c.ref("omega")
    weights = V.softmax(omega / c.sqrt_dk, -1)
    return c.first([V.fill(weights, axes, 0.0)], axes, (c.step("alpha"), c.step("masked_scaled")))


def _mask_zero(c: Context) -> Hit | None:
    if not c.causal:
        return None
    omega, axes = c.ref("omega")
    zero = V.fill(omega, axes, 0.0)
    tries = [zero, zero / c.sqrt_dk, V.softmax(zero / c.sqrt_dk, -1)]
    return c.first(tries, axes, (c.step("masked"), c.step("masked_scaled")))


def _mask_diagonal(c: Context) -> Hit | None:
    if not c.causal:
        return None
    omega, axes = c.ref("omega")
    hidden = V.fill(omega, axes, -np.inf, diagonal=0)
    tries = [hidden, hidden / c.sqrt_dk, V.softmax(hidden / c.sqrt_dk, -1)]
    return c.first(tries, axes, (c.step("masked"), c.step("masked_scaled")))


_SIZES = re.compile(r"size of tensor|must match|shape .* doesn't match|cannot be broadcast|expanded size", re.I)


def _mask_not_cut(c: Context) -> Hit | None:
    e = c.short_error
    if e is None or not _SIZES.search(str(e)):
        return None
    line = e.details.strip().splitlines()[-1] if e.details.strip() else str(e)
    return Hit(None, (c.step("masked_scaled"),), {"tokens": str(c.spec.short), "error": line}, where=c.short_where)


def _dropout_scores(c: Context) -> Hit | None:
    omega = c.ref("omega")[0]
    first = omega[(0,) * (omega.ndim - 2)]
    scale = 1 / (1 - c.spec.dropout)
    for base in (first, first / c.sqrt_dk):
        for s in c.train:
            if s.value.ndim >= 2 and V.dropped_like(s.value[(0,) * (s.value.ndim - 2)], base, scale):
                return Hit(s, (c.step("omega"), c.step("dropped")))
    return None


def _dropout_unscaled(c: Context) -> Hit | None:
    if not c.has("dropped"):
        return None
    alpha = c.ref("alpha")[0]
    first = alpha[(0,) * (alpha.ndim - 2)]
    firsts = [(s, s.value[(0,) * (s.value.ndim - 2)]) for s in c.train if s.value.ndim >= 2]
    scale = 1 / (1 - c.spec.dropout)
    if any(V.dropped_like(v, first, scale) for _, v in firsts):
        return None  # the kept weights are scaled (a hand-written dropout may hold the unscaled product first)
    for s, v in firsts:
        if V.dropped_like(v, first, 1.0):
            return Hit(s, (c.step("dropped"), "dropout.kept"), {"scale": f"{1 / (1 - c.spec.dropout):g}"})
    return None


def _heads_merge(c: Context) -> Hit | None:
    if not c.has("concat"):
        return None
    z = c.ref("z")[0]
    axes = c.ref("concat")[1]
    return c.first([V.merge_untransposed(z)], axes, (c.step("z"), c.step("concat")))


def _out_missing(c: Context) -> Hit | None:
    if not c.has("concat") or c.final is None:
        return None
    concat, axes = c.ref("concat")
    return c.first([concat], axes, (c.step("concat"), c.step("out")), only=[c.final])


def _out_per_head(c: Context) -> Hit | None:
    if "W_out_other" not in c.roles:
        return None
    z = c.ref("z")[0]
    axes = c.ref("out")[1]
    w = c.roles["W_out_other"].value
    b = c.roles["b_out_other"].value if "b_out_other" in c.roles else 0.0
    tries = []
    for m in (w.T, w):
        if m.shape[0] == z.shape[-1]:
            tries.append(V.merge(z @ m + b))
    return c.first(tries, axes, (c.step("z"), c.step("out")), {"param": c.roles["W_out_other"].param})


def _values_scores(c: Context) -> Hit | None:
    omega, _ = c.ref("omega")
    values = c.ref("v")[0] if c.has("v") else c.ref("x")[0]
    zaxes = c.ref("z")[1]
    tries = [V.weigh(omega, values), V.weigh(omega / c.sqrt_dk, values)]
    if c.causal:
        tries.append(V.weigh(V.fill(omega, c.ref("omega")[1], -np.inf) / c.sqrt_dk, values))
    return c.first(tries, zaxes, (c.step("z"), c.step("omega")))


CATALOGUE: tuple[Entry, ...] = (
    Entry(
        "bias_used",
        ("projections", "heads"),
        "The query, key and value projections add a bias ({param}) that the lesson does not have: "
        "nn.Linear has bias=True by default, so pass bias=qkv_bias.",
        "查询、键、值的投影加上了课程中没有的偏置（{param}）：nn.Linear 默认 bias=True，应当传入 bias=qkv_bias。",
        _bias,
    ),
    Entry(
        "scores_transposed",
        ("scores", "scaling", "mask", "weights"),
        "The score table is transposed: queries and keys are swapped (keys @ queries.T), "
        "so row i holds the scores of key i rather than those of query i.",
        "注意力分数表被转置了：查询和键互换了位置（keys @ queries.T），"
        "第 i 行是第 i 个键的分数，而不是第 i 个查询的分数。",
        _transposed,
    ),
    Entry(
        "scale_wrong",
        ("scaling", "mask", "weights"),
        "The scores are divided by {divisor} = {value} instead of √d_k, the square root of one key's size.",
        "注意力分数除以了 {divisor} = {value}，而不是 √d_k（单个键向量维度的平方根）。",
        _scale_wrong,
    ),
    Entry(
        "scale_missing",
        ("scaling", "mask", "weights"),
        "The scores are not divided by √d_k before the softmax; with larger keys the softmax "
        "becomes nearly one-hot and its gradients vanish.",
        "在 softmax 之前没有把注意力分数除以 √d_k；键的维度越大，softmax 越接近独热分布，梯度也随之消失。",
        _scale_missing,
    ),
    Entry(
        "softmax_dim",
        ("weights",),
        "The softmax runs over the wrong axis: each query's weights must sum to 1 over the keys "
        "(the last axis, dim=-1), but yours sum to 1 over another axis.",
        "softmax 作用在了错误的维度上：每个查询的权重应当在键的维度（最后一维，"
        "dim=-1）上归一化为 1，而你的代码在另一个维度上归一化。",
        _softmax_dim,
    ),
    Entry(
        "mask_after_softmax",
        ("mask", "weights"),
        "The causal mask is applied after the softmax without renormalising, so the rows no longer "
        "sum to 1; fill the scores with −∞ before the softmax instead.",
        "因果掩码是在 softmax 之后施加的，而且没有重新归一化，"
        "所以每一行的权重之和不再是 1；应当在 softmax 之前用 −∞ 填充分数。",
        _mask_after,
    ),
    Entry(
        "mask_zero",
        ("mask", "scaling", "weights"),
        "The masked scores are filled with 0 instead of −∞, so after the softmax the future tokens "
        "still get weight (e⁰ = 1).",
        "被掩码的分数填成了 0 而不是 −∞，所以经过 softmax 之后，后面的词元仍然分到了权重（e⁰ = 1）。",
        _mask_zero,
    ),
    Entry(
        "mask_diagonal",
        ("mask", "scaling", "weights"),
        "The mask hides the diagonal too (triu with diagonal=0 instead of 1): no token may attend "
        "to itself, and the first token has no key left, so its weights are NaN.",
        "掩码把对角线也遮住了（triu 用了 diagonal=0 而不是 1）："
        "每个词元都不能关注自己，第一个词元没有可用的键，权重变成 NaN。",
        _mask_diagonal,
    ),
    Entry(
        "mask_not_cut",
        ("mask",),
        "The mask is not cut to the sequence length: on {tokens} tokens it is still "
        "context_length x context_length; use mask[:num_tokens, :num_tokens].",
        "掩码没有按序列长度截取：输入只有 {tokens} 个词元时，它仍是 context_length x context_length；"
        "应当使用 mask[:num_tokens, :num_tokens]。",
        _mask_not_cut,
    ),
    Entry(
        "dropout_on_scores",
        ("dropout",),
        "Dropout is applied to the attention scores instead of to the attention weights (the softmax's output).",
        "dropout 作用在了注意力分数上，而不是注意力权重（softmax 的输出）上。",
        _dropout_scores,
    ),
    Entry(
        "dropout_unscaled",
        ("dropout",),
        "Dropout zeroes weights without multiplying the kept ones by 1/(1−p) = {scale}, "
        "so the weights shrink during training; nn.Dropout does this scaling for you.",
        "dropout 把一部分权重置零，却没有把保留下来的权重乘以 1/(1−p) = {scale}，"
        "训练时权重整体变小；nn.Dropout 会自动完成这一缩放。",
        _dropout_unscaled,
    ),
    Entry(
        "heads_not_transposed",
        ("merge",),
        "The heads are merged without transposing back: (b, heads, T, d_head) must become "
        "(b, T, heads, d_head) with .transpose(1, 2) before .view(b, T, d_out).",
        "合并多个头之前没有把维度转置回来：(b, heads, T, d_head) 必须先用 .transpose(1, 2) 变成 "
        "(b, T, heads, d_head)，再 .view(b, T, d_out)。",
        _heads_merge,
    ),
    Entry(
        "out_proj_missing",
        ("output",),
        "The output projection is missing: the merged heads are returned without passing through out_proj.",
        "缺少输出投影：合并后的多头结果没有经过 out_proj 就直接返回了。",
        _out_missing,
    ),
    Entry(
        "out_proj_per_head",
        ("output",),
        "The output projection is applied to each head on its own ({param}) instead of once to the "
        "merged heads with an nn.Linear(d_out, d_out).",
        "输出投影被分别施加在每个头上（{param}），而不是在合并后的结果上施加一次 nn.Linear(d_out, d_out)。",
        _out_per_head,
    ),
    Entry(
        "values_times_scores",
        ("context",),
        "The context vectors weight the values by the raw scores instead of by the attention weights "
        "(the softmax's output).",
        "上下文向量用原始注意力分数而不是注意力权重（softmax 的输出）去加权值向量。",
        _values_scores,
    ),
)

BY_CODE = {e.code: e for e in CATALOGUE}


def diagnose(c: Context, stages: list[str]) -> Hit | None:
    """The first catalogue entry for one of ``stages`` that the student's tensors bear out."""
    for entry in CATALOGUE:
        if set(stages) & set(entry.stages):
            hit = entry.test(c)
            if hit is not None:
                return Hit(hit.seen, hit.steps, hit.detail, entry.code, hit.where)
    return None
