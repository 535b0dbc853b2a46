"""Lesson kvcache's own mistakes, each a prediction of every call's context rows (:data:`MISTAKES`).

A mistake changes which cached keys a new token's query attends to.  Each
hypothesis below says, for the new token at 0-based position ``p`` (row
``r`` of a call that brings tokens ``a..b``, ``p = a - 1 + r``), which keys
it sees; the prediction is the softmax of the reference's own scores over
those keys (computed in float64 from the queries, keys and values of the
lesson's trace, which uses the student's weights), weighing the values.  A
mistake is the diagnosis when its prediction holds every call the
student's code answered, and the correct cache does not.

Two mistakes are in what the cache holds instead: a static
cache whose value slots are left at zero after the prompt, or never written at
all (only the keys are).

A crash is explained only by ``kv_mask_square``: the mask sliced
``mask[:n, :n]`` for ``n`` new tokens, which broadcasts harmlessly over one
new token's scores and fails on the ``n × (cached + n)`` scores of a call
that brings several after a prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tracer.compare.check import align, generation
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
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


Stored = Callable[[np.ndarray, int], np.ndarray]
"""``stored(v, prompt)``: the value rows the cache holds, when it does not hold the tokens' own values."""


def _values_not_stored(v: np.ndarray, prompt: int) -> np.ndarray:
    out = v.copy()
    out[prompt:] = 0.0  # a static cache's value slots left at zero after the prompt: only the keys written
    return out


def _values_never_stored(v: np.ndarray, prompt: int) -> np.ndarray:
    return np.zeros_like(v)  # no value slot ever written, the prompt's neither: every token weighs zeros


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


def mask_square(c: Context) -> Hit | None:
    """The crash of a call of several tokens after a prompt, every call before it right: ``mask[:n, :n]``."""
    got, error = generation.answers(c)
    calls = c.spec.calls
    answered = [g for g in got if g is not None]
    if error is None or len(answered) >= len(calls):
        return None
    n = len(answered)
    a, b = calls[n]
    square = b > a and a > 1 and any(w in str(error) for w in ("size of tensor", "shape", "broadcast"))
    fits = all(align.close(g, r) for g, r in zip(answered, predict(c.trace, calls, _correct), strict=False))
    if not (square and fits):
        return None
    detail = {"n": str(b - a + 1), "cached": str(a - 1), "error": error.cause}
    return Hit(None, (f"step{n + 1}.mask", f"step{n + 1}.omega"), detail)


def borne_out(*forms: tuple[Sees, Stored | None]) -> Callable[[Context], Hit | None]:
    """The test of a mistake made in any of ``forms``: its prediction holds every call the code answered.

    The correct cache must not hold them all too (a mistake that changes
    nothing on these calls says nothing), and a crash is left to
    :func:`mask_square`.
    """

    def test(c: Context) -> Hit | None:
        got, error = generation.answers(c)
        if error is not None:
            return None
        calls = c.spec.calls
        answered = [(n, g) for n, g in enumerate(got) if g is not None]
        right = predict(c.trace, calls, _correct)
        for sees, stored in forms:
            guess = predict(c.trace, calls, sees, stored)
            if all(align.close(g, guess[n]) for n, g in answered) and not all(
                align.close(guess[n], right[n]) for n, _ in answered
            ):
                steps = _steps(calls, guess, right, "cache.v" if stored is not None else "mask")
                return Hit(None, steps, _detail(calls, sees, guess, right))
        return None

    return test


STAGE = ("generation",)

MISTAKES: tuple[Entry, ...] = (
    Entry("kv_mask_square", STAGE, mask_square),
    Entry("kv_mask_not_offset", STAGE, borne_out((_from_row0, None))),
    Entry("kv_offset_per_call", STAGE, borne_out((_per_call, None))),
    Entry("kv_attend_before_append", STAGE, borne_out((_before, None))),
    Entry("kv_cache_not_kept", STAGE, borne_out((_not_kept, None), (_not_kept_offset, None))),
    Entry("kv_appended_twice", STAGE, borne_out((_twice, None))),
    Entry("kv_values_not_stored", STAGE, borne_out((_correct, _values_not_stored))),
    Entry("kv_values_never_stored", STAGE, borne_out((_correct, _values_never_stored))),
)
"""Lesson kvcache's own mistakes, in the order they are tried (each call's rows predicted, or the crash explained)."""


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
