# expect: lesson=flash name=flash_attention exit=0
# The FlashAttention paper's Algorithm 1 with its two tile sizes: blocks of B_r query rows (outer loop) and of
# B_c keys (inner loop), the statistics m_i and l_i kept per query block, the causal mask inside each tile.
import torch


def flash_attention(Q, K, V, B_r, B_c):
    N, d = Q.shape
    out = torch.zeros(N, V.shape[1], dtype=Q.dtype)
    for i in range(0, N, B_r):
        Q_i = Q[i : i + B_r]
        rows = torch.arange(i, i + Q_i.shape[0])[:, None]
        m_i = torch.full((Q_i.shape[0], 1), float("-inf"), dtype=Q.dtype)
        l_i = torch.zeros(Q_i.shape[0], 1, dtype=Q.dtype)
        O_i = torch.zeros(Q_i.shape[0], V.shape[1], dtype=Q.dtype)
        for j in range(0, N, B_c):
            K_j, V_j = K[j : j + B_c], V[j : j + B_c]
            S_ij = Q_i @ K_j.T / d**0.5
            S_ij = S_ij.masked_fill(torch.arange(j, j + K_j.shape[0])[None, :] > rows, float("-inf"))
            m_new = torch.maximum(m_i, S_ij.max(dim=1, keepdim=True).values)
            P_ij = torch.exp(S_ij - m_new)
            scale = torch.exp(m_i - m_new)
            l_i = scale * l_i + P_ij.sum(dim=1, keepdim=True)
            O_i = scale * O_i + P_ij @ V_j
            m_i = m_new
        out[i : i + B_r] = O_i / l_i
    return out
