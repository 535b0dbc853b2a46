# expect: lesson=simple name=self_attention exit=1 stage=weights diagnosis=softmax_dim
# Normalizes down the columns: dim=0 instead of dim=-1.
import torch


def self_attention(inputs):
    attn_scores = inputs @ inputs.T
    attn_weights = torch.softmax(attn_scores, dim=0)
    return attn_weights @ inputs
