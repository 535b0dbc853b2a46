# expect: lesson=simple name=self_attention exit=1 stage=weights diagnosis=scale_extra
# Scales the scores by sqrt(d) as the next lesson does; this lesson has no scaling.
import torch


def self_attention(inputs):
    attn_scores = inputs @ inputs.T
    attn_weights = torch.softmax(attn_scores / inputs.shape[-1] ** 0.5, dim=-1)
    return attn_weights @ inputs
