"""The classic mistakes of a KV cache, each a prediction of every call's context rows (lesson ``kvcache``).

A mistake changes which cached keys a new token's query attends to.  Each
hypothesis below says, for the new token at 0-based position ``p`` (row
``r`` of a call that brings tokens ``a..b``, ``p = a - 1 + r``), which keys
it sees; the prediction is the softmax of the reference's own scores over
those keys (computed in float64 from the queries, keys and values of the
lesson's trace, which uses the student's weights), weighing the values.  A
mistake is the diagnosis when its prediction holds every call the
student's code answered, and the correct cache does not.

One mistake is in what the cache holds instead (:data:`STORED`): a static
cache whose value slots are left at zero after the prompt.

A crash is explained only by ``kv_mask_square``: the mask sliced
``mask[:n, :n]`` for ``n`` new tokens, which broadcasts harmlessly over one
new token's scores and fails on the ``n × (cached + n)`` scores of a call
that brings several after a prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tracer.compare.check import align
from tracer.compare.check.context import Hit
from tracer.core.trace import Trace

Sees = Callable[[int, int, int, int], np.ndarray]
"""``sees(call, a, b, p)``: the 0-based keys the query at position ``p`` attends to, in call ``call`` (0-based)."""


def _correct(c: int, a: int, b: int, p: int) -> np.ndarray:
    return np.arange(p + 1)


def _from_row0(c: int, a: int, b: int, p: int) -> np.ndarray:
    return np.arange(min(p - (a - 1), b - 1) + 1)  # the mask's row r, as if the call started the text


def _per_call(c: int, a: int, b: int, p: int) -> np.ndarray:
    return np.arange(min(c + p - (a - 1), b - 1) + 1)  # the position counter moved by one per call


def _before(c: int, a: int, b: int, p: int) -> np.ndarray:
    return np.arange(p + 1) if c == 0 else np.arange(a - 1)  # the cache of the previous calls only


def _not_kept(c: int, a: int, b: int, p: int) -> np.ndarray:
    return np.arange(a - 1, p + 1)  # only this call's tokens: the cache starts afresh


def _twice(c: int, a: int, b: int, p: int) -> np.ndarray:
    """Every earlier call's tokens held twice (appended once to attend, once more when stored), then this call's."""
    return np.arange(p + 1) if c == 0 else np.concatenate((np.repeat(np.arange(a - 1), 2), np.arange(a - 1, p + 1)))


def _not_kept_offset(c: int, a: int, b: int, p: int) -> np.ndarray:
    n = b - a + 1  # only this call's n keys, masked with the position's row over the first n columns
    return a - 1 + np.arange(n)[np.arange(n) <= p]


HYPOTHESES: tuple[tuple[str, Sees], ...] = (
    ("kv_mask_not_offset", _from_row0),
    ("kv_offset_per_call", _per_call),
    ("kv_attend_before_append", _before),
    ("kv_cache_not_kept", _not_kept),
    ("kv_cache_not_kept", _not_kept_offset),
    ("kv_appended_twice", _twice),
)
"""The mistakes whose calls all return, in the order they are tried."""

Stored = Callable[[np.ndarray, int], np.ndarray]
"""``stored(v, prompt)``: the value rows the cache holds, when it does not hold the tokens' own values."""


def _values_not_stored(v: np.ndarray, prompt: int) -> np.ndarray:
    out = v.copy()
    out[prompt:] = 0.0  # a static cache's value slots left at zero after the prompt: only the keys written
    return out


STORED: tuple[tuple[str, Stored], ...] = (("kv_values_not_stored", _values_not_stored),)
"""The mistakes in what the cache holds rather than in which keys a query sees (tried after :data:`HYPOTHESES`)."""

MISTAKES: tuple[tuple[str, str, str], ...] = (
    (
        "kv_mask_not_offset",
        "The new tokens are masked as if they stood at the start of the text: the mask's rows are taken from row 0 "
        "(mask[:n, :n_cached + n]), or the position is never advanced, so the token at position {pos} sees only "
        "keys 1 to {seen} of {cached}; slice mask[pos:pos + n, :pos + n] with pos the number of tokens already cached.",
        "新词元被当成位于文本开头来加掩码：掩码的行是从第 0 行取的（mask[:n, :n_cached + n]），或者位置从未前移，"
        "所以位于第 {pos} 个位置的词元只看到 {cached} 个键中的第 1 到 {seen} 个；应当切 mask[pos:pos + n, :pos + n]，"
        "其中 pos 是已经缓存的词元个数。",
    ),
    (
        "kv_mask_square",
        "The mask is sliced mask[:n, :n] for the n new tokens, as if they were the whole text: over one new token it "
        "changes nothing, but with a cache the scores of a call are n × (cached + n), and a call of {n} tokens after "
        "{cached} cached ones fails ({error}); slice mask[pos:pos + n, :pos + n].",
        "掩码按 n 个新词元切成了 mask[:n, :n]，好像它们就是整段文本：只有一个新词元时它什么也不改变，"
        "但有缓存时一次调用的注意力分数是 n × (已缓存数 + n)，"
        "在已缓存 {cached} 个词元之后一次送入 {n} 个词元就会出错（{error}）；"
        "应当切 mask[pos:pos + n, :pos + n]。",
    ),
    (
        "kv_offset_per_call",
        "The position advances by one per call instead of by the number of tokens the call brings: after a prompt of "
        "{prompt} tokens the next token is masked as if it stood at position {pos}, so it sees keys 1 to {seen} of "
        "{cached}; advance the position by x.shape[1].",
        "位置每调用一次只前移 1，而不是前移这次调用送入的词元个数：在 {prompt} 个词元的提示词之后，"
        "下一个词元被当成位于第 {pos} 个位置来加掩码，所以只看到 {cached} 个键中的第 1 到 {seen} 个；"
        "位置应当前移 x.shape[1]。",
    ),
    (
        "kv_attend_before_append",
        "The new token attends before its key and value are appended: its query sees the previous calls' keys only, "
        "not its own, so token {pos} weighs keys 1 to {seen}; append to the cache first, then attend.",
        "新词元在它的键和值向量追加进缓存之前就计算了注意力：它的查询只看到之前几次调用的键，看不到它自己的，"
        "所以第 {pos} 个词元只对第 1 到 {seen} 个键加权；应当先追加到缓存，再计算注意力。",
    ),
    (
        "kv_cache_not_kept",
        "The cache is not kept between calls: each call attends only to the tokens it brings, so token {pos} alone in "
        "its call sees only itself; keep the keys and values of every call and concatenate the new ones to them.",
        "缓存没有在调用之间保留下来：每次调用只对它自己送入的词元计算注意力，"
        "所以单独送入的第 {pos} 个词元只看到它自己；应当保留每次调用的键和值向量，并把新的拼接到后面。",
    ),
    (
        "kv_values_not_stored",
        "The new tokens' keys are written to the cache but their values are not: after the prompt of {prompt} "
        "tokens the value slots stay as they were allocated (zeros), so token {pos} weighs zero vectors for every "
        "generated token; write the values at the same positions as the keys.",
        "新词元的键写进了缓存，值向量却没有写进去：在 {prompt} 个词元的提示词之后，"
        "值向量的槽位保持分配时的样子（全是零），所以第 {pos} 个词元对每个生成的词元加权的都是零向量；"
        "应当把值向量写到与键相同的位置。",
    ),
    (
        "kv_appended_twice",
        "The new keys and values are appended to the cache twice (once to attend, once more when the cache is stored "
        "or returned): from the second call on every earlier token is weighed twice, so token {pos} spreads its "
        "weights over {count} keys instead of {pos}; concatenate each call's keys and values once.",
        "新的键和值向量被追加进缓存两次（一次用于计算注意力，保存或返回缓存时又追加了一次）："
        "从第二次调用起，之前的每个词元都被加权两次，所以第 {pos} 个词元把权重分给了 {count} 个键，而不是 {pos} 个；"
        "每次调用的键和值向量只应拼接一次。",
    ),
)
"""Every mistake's code and sentences (``{…}`` filled from the hit's details): the catalogue's ``KVCACHE`` entries."""


def predict(
    trace: Trace, calls: Sequence[tuple[int, int]], sees: Sees, stored: Stored | None = None
) -> list[np.ndarray]:
    """Every call's context rows if the query at each position attended to the keys ``sees`` names.

    ``stored`` replaces the value rows the cache holds (the prompt's first
    call's tokens are ``calls[0]``).
    """
    q, k, v = (np.asarray(trace.tensor(f"full.{n}"), dtype=np.float64) for n in ("q", "k", "v"))
    if stored is not None:
        v = stored(v, calls[0][1])
    root = np.sqrt(k.shape[-1])
    out = []
    for c, (a, b) in enumerate(calls):
        z = np.full((b - a + 1, v.shape[-1]), np.nan)
        for r, p in enumerate(range(a - 1, b)):
            keys = sees(c, a, b, p)
            if len(keys):
                s = q[p] @ k[keys].T / root
                w = np.exp(s - s.max())
                z[r] = (w / w.sum()) @ v[keys]
        out.append(z)
    return out


def diagnose(
    trace: Trace, calls: Sequence[tuple[int, int]], got: Sequence[np.ndarray | None], error: Exception | None
) -> Hit | None:
    """The mistake that predicts every call the student's code answered (and, for a crash, the crash)."""
    answered = [(n, g) for n, g in enumerate(got) if g is not None]
    if error is not None:
        n = len(answered)
        a, b = calls[n]
        square = b > a and a > 1 and any(w in str(error) for w in ("size of tensor", "shape", "broadcast"))
        fits = all(align.close(g, r) for (_, g), r in zip(answered, predict(trace, calls, _correct), strict=False))
        if square and fits:
            detail = {"n": str(b - a + 1), "cached": str(a - 1), "error": getattr(error, "cause", str(error))}
            return Hit(None, (f"step{n + 1}.mask", f"step{n + 1}.omega"), detail, "kv_mask_square")
        return None
    right = predict(trace, calls, _correct)
    tried = [(code, sees, None) for code, sees in HYPOTHESES] + [(code, _correct, fn) for code, fn in STORED]
    for code, sees, stored in tried:
        guess = predict(trace, calls, sees, stored)
        if all(align.close(g, guess[n]) for n, g in answered) and not all(
            align.close(guess[n], right[n]) for n, _ in answered
        ):
            steps = _steps(calls, guess, right, "cache.v" if stored is not None else "mask")
            return Hit(None, steps, _detail(calls, sees, guess, right), code)
    return None


def _first(calls: Sequence[tuple[int, int]], guess: list[np.ndarray], right: list[np.ndarray]) -> tuple[int, int]:
    """The first call (0-based) and 0-based position where the mistake changes the result."""
    for c, (a, _b) in enumerate(calls):
        bad = ~np.isclose(guess[c], right[c], rtol=align.RTOL, atol=align.ATOL).all(axis=-1)
        if bad.any():
            return c, a - 1 + int(np.argmax(bad))
    return 0, 0


def _steps(
    calls: Sequence[tuple[int, int]], guess: list[np.ndarray], right: list[np.ndarray], where: str
) -> tuple[str, ...]:
    """The first changed call's steps: its mask (which keys) or its cached values (``where``), weights, context."""
    c, _ = _first(calls, guess, right)
    return (f"step{c + 1}.{where}", f"step{c + 1}.causal.alpha", f"step{c + 1}.z")


def _detail(
    calls: Sequence[tuple[int, int]], sees: Sees, guess: list[np.ndarray], right: list[np.ndarray]
) -> dict[str, str]:
    """The sentence's numbers, at the first position the mistake changes (1-based, as the page counts)."""
    c, p = _first(calls, guess, right)
    a, b = calls[c]
    keys = sees(c, a, b, p)
    seen = int(keys.max()) + 1 if len(keys) else 0
    said = {"pos": str(p + 1), "seen": str(seen), "cached": str(b), "prompt": str(calls[0][1])}
    return {**said, "count": str(len(keys))}  # count: keys weighed, a token held twice counted twice
