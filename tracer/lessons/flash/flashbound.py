"""How far the online softmax's context vectors may be from the ordinary softmax's: a bound from the maths.

Both forms compute ``z_i = Σ_j e^(s_ij − M_i) v_j / Σ_j e^(s_ij − M_i)`` from
the same scaled scores ``s`` (bit for bit the same numbers, so the scores
carry no error of their own here), ``M_i`` the row's max.  They round
differently; each is within a bound of the exact value, so the two are
within the sum of the bounds.  With ``u`` the unit roundoff (``2**-24`` in
float32), ``γ(n) = n·u / (1 − n·u)``, for row ``i``:

* ``S`` the spread of its visible scores (max − min) and ``V_c`` the largest
  ``|v_jc|`` over its visible keys;
* every exponent is a difference of two floats, rounded once: ``s − m`` in
  the block, ``m_old − m_new`` in each rescale.  For a key, those errors
  add up to at most ``u·(M − s) ≤ u·S`` (the rescales' differences add up to
  ``M − m``), so its exponential carries a factor within ``e^(±u·S)``;
* the online form's sum ``l`` gives each key's term at most
  ``k = B + 3U`` more roundings (its exp, the block's additions, then a
  multiplication by ``c``, an ``exp`` for ``c`` and an addition per later
  block; ``U`` blocks), all of positive terms, so
  ``|l̃ − l| ≤ η·l`` with ``η = e^(u·S)·(1+u)^k − 1``; the accumulator ``o``
  one more (the product ``p·v``): ``η'``, on ``Σ p |v|`` ≤ ``l·V``;
  then ``z = o / l`` rounds once: ``|z̃ − z| ≤ (η + η')/(1 − η)·V·(1 + u) + u·V``;
* the ordinary form divides each exponential by the row's sum first (``T``
  terms added left to right): each weight within ``φ`` of the exact one,
  ``1 + φ = (1 + a)(1 + u) / (1 − b)`` with ``a = e^(u·S)(1 + u) − 1`` and
  ``1 + b = (1 + a)(1 + γ(T − 1))``; then ``Σ_j α_j v_j`` (a product and
  ``T − 1`` additions per term): ``|z̃ − z| ≤ ((1 + φ)(1 + γ(T)) − 1)·V``.

The bound is computed in float64 from the traced values, in a fixed order,
so it is the same number on every machine.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from tracer.core import bounds


def flash_bound(s: torch.Tensor, vb: torch.Tensor, block: int, dtype: torch.dtype) -> np.ndarray:
    """Elementwise bound ``[i, c]`` of ``|online z − ordinary z|``.

    ``s[i, u, j]`` are the scaled, masked scores in blocks, ``vb[u, j, c]`` the values in blocks.
    """
    u = bounds.unit(str(dtype).removeprefix("torch."))
    t, n, b = s.shape
    sc = s.detach().to(torch.float64).numpy().reshape(t, n * b)
    val = vb.detach().to(torch.float64).numpy().reshape(n * b, -1)
    seen = np.isfinite(sc)
    hi = np.max(np.where(seen, sc, -np.inf), axis=1)
    lo = np.min(np.where(seen, sc, np.inf), axis=1)
    spread = np.where(seen.any(axis=1), hi - lo, 0.0)
    big = np.max(np.where(seen[:, :, None], np.abs(val)[None, :, :], 0.0), axis=1)  # V[i, c]
    keys = s.shape[0]
    k = block + 3 * n
    out: np.ndarray = np.zeros(np.shape(big), dtype=np.float64)
    for i in range(t):
        e = u * float(spread[i])
        eta = math.expm1(e + k * math.log1p(u))
        eta2 = math.expm1(e + (k + 1) * math.log1p(u))
        online = (eta + eta2) / (1 - eta) * (1 + u) + u
        a = math.expm1(e + math.log1p(u))
        bb = (1 + a) * (1 + bounds.gamma(keys - 1, u)) - 1
        phi = (1 + a) * (1 + u) / (1 - bb) - 1
        ordinary = (1 + phi) * (1 + bounds.gamma(keys, u)) - 1
        out[i] = (online + ordinary) * big[i]
    return out
