"""Forges the child's data: evidence whose arrays do not fit their shapes, or are not arrays; then os._exit(0)."""

import json
import os
import struct

import torch.nn as nn

BAD = {"shape": [2, 6, 2], "f8": "AAAAAAAAAAA="}  # 8 bytes where 24 floats need 192


def forge() -> bytes:
    role = {"role": "W_query", "param": "W_query.weight", "how": "", "value": BAD}
    ev = {"name": "CausalAttention", "built": "", "square": False, "wrap": 0, "heads": "", "roles": [role],
          "seen": [{"id": "x", "op": "matmul", "where": "", "value": [1.0, 2.0]}], "output": BAD, "captured": None,
          "train": [], "short": [], "short_error": None, "other": None, "structural": None}  # fmt: skip
    body = json.dumps({"kind": "evidence", "evidence": ev})
    return struct.pack(">Q", len(body)) + body.encode("ascii")


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        frame = forge()
        for fd in os.listdir("/proc/self/fd"):
            try:
                os.write(int(fd), frame)
            except OSError:
                pass
        os._exit(0)
