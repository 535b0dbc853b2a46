# expect: lesson=simple name=context_vectors exit=0
# Loops over the tokens: one dot product at a time, a naive softmax, each context vector a weighted sum.
import torch


def context_vectors(inputs):
    rows = []
    for x_i in inputs:
        rows.append(torch.stack([torch.dot(x_i, x_j) for x_j in inputs]))
    attn_scores = torch.stack(rows)
    attn_weights = torch.exp(attn_scores) / torch.exp(attn_scores).sum(dim=-1, keepdim=True)
    context = []
    for i in range(inputs.shape[0]):
        z = torch.zeros(inputs.shape[1])
        for j, x_j in enumerate(inputs):
            z = z + attn_weights[i, j] * x_j
        context.append(z)
    return torch.stack(context)
