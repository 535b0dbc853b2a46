"""The book's next chapter, written as a student would: LayerNorm, GELU, FeedForward, TransformerBlock.

Plain torch, nothing of attn-trace (tests/test_capture_transformer.py captures
it).  Small sizes instead of GPT-2's so the test is quick; the code is the
book's.  ``block_library`` is the same block with torch's ``nn.LayerNorm`` and
``nn.GELU``; ``tiny_gpt`` adds token and position embeddings in front.
"""
# ruff: noqa

import torch
import torch.nn as nn

from tests.book_attention import MultiHeadAttention

CFG = {"vocab_size": 11, "context_length": 4, "emb_dim": 8, "n_heads": 2, "drop_rate": 0.1, "qkv_bias": False}


class LayerNorm(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        norm_x = (x - mean) / torch.sqrt(var + self.eps)
        return self.scale * norm_x + self.shift


class GELU(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(torch.sqrt(torch.tensor(2.0 / torch.pi)) * (x + 0.044715 * torch.pow(x, 3))))


class FeedForward(nn.Module):
    def __init__(self, cfg, gelu=GELU):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(cfg["emb_dim"], 4 * cfg["emb_dim"]),
            gelu(),
            nn.Linear(4 * cfg["emb_dim"], cfg["emb_dim"]),
        )

    def forward(self, x):
        return self.layers(x)


class TransformerBlock(nn.Module):
    def __init__(self, cfg, norm=LayerNorm, gelu=GELU):
        super().__init__()
        self.att = MultiHeadAttention(
            d_in=cfg["emb_dim"],
            d_out=cfg["emb_dim"],
            context_length=cfg["context_length"],
            num_heads=cfg["n_heads"],
            dropout=cfg["drop_rate"],
            qkv_bias=cfg["qkv_bias"],
        )
        self.ff = FeedForward(cfg, gelu)
        self.norm1 = norm(cfg["emb_dim"])
        self.norm2 = norm(cfg["emb_dim"])
        self.drop_shortcut = nn.Dropout(cfg["drop_rate"])

    def forward(self, x):
        shortcut = x
        x = self.norm1(x)
        x = self.att(x)
        x = self.drop_shortcut(x)
        x = x + shortcut

        shortcut = x
        x = self.norm2(x)
        x = self.ff(x)
        x = self.drop_shortcut(x)
        x = x + shortcut
        return x


def block():
    torch.manual_seed(123)
    x = torch.rand(2, 4, CFG["emb_dim"])
    block = TransformerBlock(CFG)
    return block(x)


def block_library():
    torch.manual_seed(123)
    x = torch.rand(2, 4, CFG["emb_dim"])
    block = TransformerBlock(CFG, norm=nn.LayerNorm, gelu=lambda: nn.GELU(approximate="tanh"))
    return block(x)


class TinyGPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.trf = TransformerBlock(cfg)
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

    def forward(self, in_idx):
        batch_size, seq_len = in_idx.shape
        tok_embeds = self.tok_emb(in_idx)
        pos_embeds = self.pos_emb(torch.arange(seq_len, device=in_idx.device))
        x = tok_embeds + pos_embeds
        x = self.trf(x)
        return self.out_head(x)


def tiny_gpt():
    torch.manual_seed(123)
    model = TinyGPT(CFG)
    return model(torch.tensor([[6, 1, 3, 10], [2, 0, 5, 9]]))
