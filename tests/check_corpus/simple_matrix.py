# expect: lesson=simple name=self_attention exit=0
# Simple self-attention in matrix form, as the chapter ends it.
import torch


def self_attention(inputs):
    attn_scores = inputs @ inputs.T
    attn_weights = torch.softmax(attn_scores, dim=-1)
    return attn_weights @ inputs
