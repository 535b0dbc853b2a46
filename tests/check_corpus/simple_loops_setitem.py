# expect: lesson=simple name=context_vectors exit=0
# The chapter's loops: scores written entry by entry into torch.empty, then a naive softmax.
import torch


def softmax_naive(x):
    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)


def context_vectors(inputs):
    attn_scores = torch.empty(inputs.shape[0], inputs.shape[0])
    for i, x_i in enumerate(inputs):
        for j, x_j in enumerate(inputs):
            attn_scores[i, j] = torch.dot(x_i, x_j)
    attn_weights = softmax_naive(attn_scores)
    return attn_weights @ inputs
