"""Benchmark: capture a multi-head attention module (d_in = d_out = 64, 4 heads) on one sequence of 512 tokens.

Run: ``python bench/bench_capture.py`` (``--tokens 256`` for another length).
Prints, in one run on this machine:

* the captured forward pass's time and its ratio to the same forward pass
  without capture (medians of several runs);
* peak memory above the torch import, measured in a fresh subprocess;
* how many steps the trace holds, and that every product is addressable
  (a lookup of the last product of the last score);
* that the output is torch's bit for bit and the fresh trace verifies clean;

for the book's ``MultiHeadAttention`` and for torch's ``nn.MultiheadAttention``
(opened up step by step, with a causal mask).

Target (issue: trace ordinary PyTorch code): <= 3 s and <= 2 GiB above the
torch import.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, num_heads):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, _ = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


def build(t, d=64, heads=4):
    torch.manual_seed(123)
    return MultiHeadAttention(d, d, t, heads), torch.rand(1, t, d)


class TorchMHA(nn.Module):
    """torch's own ``nn.MultiheadAttention`` with a causal mask, as a root module of one input."""

    def __init__(self, d, t, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.register_buffer("mask", torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        out, _ = self.attn(x, x, x, attn_mask=self.mask[: x.shape[1], : x.shape[1]])
        return out


def build_mha(t, d=64, heads=4):
    torch.manual_seed(123)
    return TorchMHA(d, t, heads), torch.rand(1, t, d)


MEMORY_PROBE = """
import sys, torch
sys.path.insert(0, {root!r})
sys.path.insert(0, {here!r})
import tracer
from bench_capture import {builder} as build
def hwm():
    with open("/proc/self/status") as f:
        return int(f.read().split("VmHWM:")[1].split()[0])
small, xs = build(4)
tracer.trace_torch(small, xs)  # warm up the code paths on a tiny input
model, x = build({t})
base = hwm()
trace = tracer.trace_torch(model, x)
print(hwm() - base)
"""


def median_time(fn: object, repeat: int) -> float:
    """Median wall time of ``fn()`` over ``repeat`` runs."""
    assert callable(fn)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(label: str, builder: str, t: int, repeat: int, last: str) -> None:
    """Time, memory, size and identity of one module's capture; MISSED on a missed target."""
    import tracer

    make = globals()[builder]
    small, xs = make(4)
    tracer.trace_torch(small, xs)
    model, x = make(t)
    with torch.no_grad():
        plain = median_time(lambda: model(x), max(repeat, 5))
    traced = median_time(lambda: tracer.trace_torch(model, x), repeat)
    trace = tracer.trace_torch(model, x)
    out = model(x)
    same = bool(torch.equal(torch.from_numpy(trace.tensor(trace.meta["output"]).copy()), out.detach()))
    t0 = time.perf_counter()
    value = trace[last].value
    lookup = time.perf_counter() - t0
    probe = MEMORY_PROBE.format(root=str(ROOT), here=str(Path(__file__).resolve().parent), t=t, builder=builder)
    kib = int(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)
    fresh = trace.verify()
    slow, big = " MISSED" if traced > 3 else "", " MISSED" if kib / 1024 > 2048 else ""
    print(f"capture of {label}, d = 64, 4 heads, T = {t} (medians of {repeat})")
    print(f"  forward without capture   {plain * 1000:9.2f} ms")
    print(f"  forward under capture     {traced * 1000:9.2f} ms   ratio {traced / plain:,.0f}x   (target <= 3 s){slow}")
    print(f"  peak memory above torch   {kib / 1024:9.1f} MiB  (target <= 2048 MiB){big}")
    print(f"  steps in the trace        {len(trace):,}")
    print(f"  output identical to torch {same}")
    print(f"  verify of the fresh trace {'clean' if fresh.ok else fresh.summary()}")
    print(f"  lookup {last} = {value:.6g} in {lookup * 1e6:.0f} us")


def main() -> None:
    """Measure and print the table: the book's module, then torch's ``nn.MultiheadAttention``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    t = args.tokens
    measure("MultiHeadAttention", "build", t, args.repeat, f"attn_scores[1,4,{t},{t}].p[16]")
    measure("nn.MultiheadAttention", "build_mha", t, args.repeat, f"attn.scores.xw[4,{t},{t}].p[16]")


if __name__ == "__main__":
    main()
