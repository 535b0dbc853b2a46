# expect: lesson=simple name=context_vectors exit=1 stage=weights diagnosis=sum_normalised
# Stops at the chapter's first normalisation: scores divided by their row sum, no softmax.


def context_vectors(inputs):
    attn_scores = inputs @ inputs.T
    attn_weights = attn_scores / attn_scores.sum(dim=-1, keepdim=True)
    return attn_weights @ inputs
