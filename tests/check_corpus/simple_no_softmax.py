# expect: lesson=simple name=context_vectors exit=1 stage=weights diagnosis=values_times_scores
# Forgets the normalisation: the raw dot products weigh the inputs.


def context_vectors(inputs):
    attn_scores = inputs @ inputs.T
    return attn_scores @ inputs
