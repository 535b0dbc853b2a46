# expect: lesson=simple name=self_attention exit=1 stage=context diagnosis=output_layout
# Right values with an extra leading axis: the result is (1, T, d), not (T, d).
import torch


def self_attention(inputs):
    attn_weights = torch.softmax(inputs @ inputs.T, dim=-1)
    return (attn_weights @ inputs).unsqueeze(0)
