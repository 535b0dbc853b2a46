# expect: lesson=simple name=self_attention exit=1 stage=context diagnosis=output_layout
# Right values, wrong layout: the context vectors come back as columns (d x T).
import torch


def self_attention(inputs):
    attn_weights = torch.softmax(inputs @ inputs.T, dim=-1)
    return (attn_weights @ inputs).T
