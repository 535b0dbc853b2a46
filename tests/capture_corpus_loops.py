"""Attention as a beginner first writes it, and masks that are easy to get backwards.

Plain torch, nothing of attn-trace: tests capture these functions
(``tracer.trace_torch``, ``attn-trace ... --torch tests/capture_corpus_loops.py:FN``).

* ``one_query`` and ``every_pair`` fill score tensors one ``torch.dot`` at a
  time in Python loops, as the chapter does before it shows the matrix
  form, then normalise with ``torch.softmax`` and sum the weighted inputs
  with ``+=`` in a loop;
* ``sdpa_hide_future`` gives ``F.scaled_dot_product_attention`` the upper
  triangle as a boolean mask: SDPA reads ``True`` as "may attend", so this
  keeps exactly the keys a causal mask hides (a real bug of published code;
  the last token sees nothing at all), ``sdpa_keep_past`` the right
  polarity, and ``sdpa_added`` a float mask of ``-inf`` and zeros that SDPA
  adds to the scores;
* ``counted_blocks`` builds the integer bookkeeping a block-sparse mask
  needs (pad, count per block with ``sum``, order by ``argsort``, write
  indices into an ``int64`` table) in ordinary code.
"""
# ruff: noqa

import torch
import torch.nn.functional as F

words = "Your journey starts with one step".split()
emb = torch.tensor(
    [
        [0.43, 0.15, 0.89],
        [0.55, 0.87, 0.66],
        [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33],
        [0.77, 0.25, 0.10],
        [0.05, 0.80, 0.55],
    ]
)


def one_query():
    q = emb[1]  # "journey" asks
    scores = torch.empty(emb.shape[0])
    for n, row in enumerate(emb):
        scores[n] = torch.dot(row, q)
    weights = torch.softmax(scores, dim=0)
    context = torch.zeros(q.shape)
    for n, row in enumerate(emb):
        context += weights[n] * row
    return context


def every_pair():
    T = emb.shape[0]
    scores = torch.empty(T, T)
    for a, xa in enumerate(emb):
        for b, xb in enumerate(emb):
            scores[a, b] = torch.dot(xa, xb)
    weights = torch.softmax(scores, dim=-1)
    contexts = torch.zeros(T, emb.shape[1])
    for a in range(T):
        for b in range(T):
            contexts[a] += weights[a, b] * emb[b]
    return contexts


def _heads():
    torch.manual_seed(7)
    x = torch.randn(1, 2, 6, 4)
    return x, x * 0.5 + 0.1, 0.3 - x


def sdpa_hide_future():
    q, k, v = _heads()
    T = q.shape[-2]
    mask = torch.triu(torch.ones(T, T), diagonal=1).bool()  # wrong way round for SDPA
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def sdpa_keep_past():
    q, k, v = _heads()
    T = q.shape[-2]
    mask = torch.tril(torch.ones(T, T)).bool()
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def sdpa_added():
    q, k, v = _heads()
    T = q.shape[-2]
    mask = torch.zeros(T, T).masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def counted_blocks():
    """Which key blocks each query block must visit, found from a boolean mask with integer steps."""
    T, B = 6, 4
    keep = torch.tril(torch.ones(T, T, dtype=torch.bool))
    padded = F.pad(keep, (0, 2, 0, 2))  # 8 × 8: whole blocks of 4
    blocks = padded.view(2, B, 2, B).permute(0, 2, 1, 3)
    counts = blocks.sum(dim=(-1, -2))  # kept entries per (query block, key block): int64
    live = (counts > 0).to(torch.int32)
    order = torch.argsort(live, dim=-1, descending=True, stable=True)
    visits = live.sum(dim=-1)
    table = torch.zeros(2, 2, dtype=torch.int64)
    for r in range(2):
        table[r] = order[r]
    x = emb[:, :2] * (visits[0] + 1)
    return x + table[0, 0]
