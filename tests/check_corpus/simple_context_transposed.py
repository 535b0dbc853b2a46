# expect: lesson=simple name=self_attention exit=1 stage=context diagnosis=context_transposed
# Mixes the inputs with the weights the wrong way round: inputs.T @ attn_weights.
import torch


def self_attention(inputs):
    attn_weights = torch.softmax(inputs @ inputs.T, dim=-1)
    return (inputs.T @ attn_weights).T
