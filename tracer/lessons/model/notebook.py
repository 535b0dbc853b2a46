"""Notebook code of lesson ``model``: the traced head recomputed in plain torch from what the trace recorded.

The layers before the traced one are not in the trace (they are computed,
not traced), so the notebook starts where the trace starts: the residual
stream ``x`` entering the traced layer and the head's slices of the layer's
weights, read from ``TRACED``.  From there every stage is ordinary torch:
RMSNorm, the head's query and its group's key and value, the rotation of
each pair (paired as the model's file pairs them: neighbours in a GGUF
file, halves in a Hugging Face folder), the scaled causal softmax, the
weighted sum and the head's share of the output projection.  The last
check holds the head's weights against the float64 forward pass of the
whole layer, the gallery on the page.  The next token needs every layer's
weights, which the trace does not carry: the notebook has no cell for it.

Matrix products here sum in torch's order, the trace in index order; on
the model's width (576 terms) the two float32 sums differ in their last
bits, which the checks allow and the printed decimals do not show.
"""

from __future__ import annotations

from tracer.core import fmt
from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.lessons.model.facts import model_of, traced_head
from tracer.present.notebook.code import Cell, check, definitions, lines

IN_ORDER = '''def sum_in_order(terms):
    """The sum of each row of terms, added left to right one float addition at a time, as the trace adds them."""
    total = terms[..., 0]
    for k in range(1, terms.shape[-1]):
        total = total + terms[..., k]
    return total


def matmul_in_order(a, b):
    """a @ b with every sum added left to right (torch's own a @ b sums in another order)."""
    return sum_in_order(a[:, None, :] * b.T[None, :, :])'''
"""Sums in the trace's order: float32 addition is not associative, and a 576-term sum in another order
differs in its last bits, which a score near 0 (the difference of large products) shows."""

PAIRS = {
    "interleaved": "first = torch.arange(0, d_h, 2)  # a GGUF file pairs neighbours: (0, 1), (2, 3), ...",
    "half": "first = torch.arange(d_h // 2)  # a Hugging Face folder pairs halves: (0, d_h/2), (1, d_h/2 + 1), ...",
}
"""The first component of each rotated pair, by the pairing the trace's model uses (``meta.model.pairs``)."""
SECOND = {"interleaved": "second = first + 1", "half": "second = first + d_h // 2"}


def cells(trace: Trace) -> dict[str, list[Cell]]:
    """Stage -> code cells (none for ``next``: it needs the weights of every layer)."""
    model = model_of(trace)
    pairs = model.get("pairs")
    if pairs not in PAIRS:
        raise InputError(f"the trace's meta.model pairs the rotation as {pairs!r}, not one of {', '.join(PAIRS)}")
    head, layer = traced_head(trace)
    eps = fmt.literal(float(trace.tensor("norm.eps")), trace.dtype)
    inputs = lines(
        f"tokens = {trace.tokens!r}",
        f"# the residual stream entering layer {layer}: one row per token, computed by the layers before it",
        'x = torch.tensor(TRACED["x"], dtype=dtype)',
        'g = torch.tensor(TRACED["g"], dtype=dtype)  # the RMSNorm scale of the layer',
        f"# head {head}'s columns of the query weights, its group's of the key and value weights, (d, d_h)",
        'W_query = torch.tensor(TRACED["W_query"], dtype=dtype)',
        'W_key = torch.tensor(TRACED["W_key"], dtype=dtype)',
        'W_value = torch.tensor(TRACED["W_value"], dtype=dtype)',
        'W_out = torch.tensor(TRACED["W_out"], dtype=dtype)  # its rows of the output projection, (d_h, d)',
        "T, d = x.shape",
        "d_h = W_query.shape[1]",
        f"base = {model['rope_base']!r}",
        "positions = torch.arange(T).to(dtype)  # token i sits at position m = i - 1",
        check(trace, "pos", "positions"),
        "theta = (base ** (-torch.arange(0, d_h, 2, dtype=torch.float64) / d_h)).to(dtype)",
        check(trace, "theta", "theta"),
    )
    norm = definitions(IN_ORDER) + lines(
        f"eps = {eps}",
        "mean_square = sum_in_order(x * x) / d",
        check(trace, "norm.mean", "mean_square"),
        "rms = torch.sqrt(mean_square + eps)",
        check(trace, "norm.rms", "rms"),
        "h = x / rms[:, None] * g",
        check(trace, "h", "h"),
    )
    projections = lines(
        "# h @ W_query, each of its d-term sums added left to right",
        "queries = matmul_in_order(h, W_query)",
        "keys, values = matmul_in_order(h, W_key), matmul_in_order(h, W_value)",
        check(trace, "q", "queries"),
        check(trace, "k", "keys"),
        check(trace, "v", "values"),
    )
    rotation = lines(
        "angles = positions[:, None] * theta[None, :]  # phi[m, p] = m * theta_p",
        check(trace, "rope.angle", "angles"),
        "# cos and sin in float64, then rounded: the correctly rounded values the trace holds",
        "cos, sin = angles.double().cos().to(dtype), angles.double().sin().to(dtype)",
        check(trace, "rope.cos", "cos"),
        PAIRS[pairs],
        SECOND[pairs],
        "",
        "",
        "def rotate(v):",
        '    """Each pair (a, b) of every row turned by its angle: (a cos - b sin, a sin + b cos)."""',
        "    a, b = v[:, first], v[:, second]",
        "    out = v.clone()",
        "    out[:, first] = a * cos - b * sin",
        "    out[:, second] = a * sin + b * cos",
        "    return out",
        "",
        "",
        "queries_rot, keys_rot = rotate(queries), rotate(keys)  # the values are not rotated",
        check(trace, "rope.q", "queries_rot"),
        check(trace, "rope.k", "keys_rot"),
    )
    attention = lines(
        "attn_scores = matmul_in_order(queries_rot, keys_rot.T)",
        check(trace, "omega", "attn_scores"),
        "mask = torch.triu(torch.ones(T, T), diagonal=1).bool()  # the keys after each query",
        "masked = attn_scores.masked_fill(mask, -torch.inf)",
        check(trace, "neg.omega", "masked"),
        "attn_weights = torch.softmax(masked / d_h**0.5, dim=-1)",
        check(trace, "causal.alpha", "attn_weights"),
        "context = matmul_in_order(attn_weights, values)",
        check(trace, "z", "context"),
    )
    output = lines(
        "share = matmul_in_order(context, W_out)  # what this head adds to the residual stream, one row per token",
        check(trace, "out", "share"),
    )
    gallery = lines(
        f"# the gallery's head {head}, from a float64 forward pass of the whole layer: the same weights",
        check(trace, f"heads.alpha[{head + 1}]", "attn_weights"),
    )
    return {
        "inputs": [inputs],
        "norm": [norm],
        "projections": [projections],
        "rotation": [rotation],
        "attention": [attention],
        "output": [output],
        "heads": [gallery],
    }
