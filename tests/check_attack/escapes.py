"""Correct, but leaves a process behind that tries to outlive the check and rewrite its results.

On its first forward it forks; that child calls ``os.setsid()`` (out of the
process group), forks again and exits (the grandchild is an orphan), and the
grandchild ignores SIGTERM, SIGHUP and SIGINT, names itself
``$ESCAPE_TOKEN`` (``/proc/PID/comm``), writes its pid to ``$ESCAPE_MARK.pid``,
collects every ``-o`` path in the arguments of every process it can read, waits
``$ESCAPE_DELAY`` seconds, then writes a score of 99 into each and
``$ESCAPE_MARK.late`` (only inside the folder of ``$ESCAPE_MARK``: a test's
own).  With ``$ESCAPE_HANG`` set, forward then never returns.
"""

import ctypes
import json
import os
import signal
import time

import torch
import torch.nn as nn

_FORKED = []


def _outputs():
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode("utf-8", "replace").split("\0")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        found += [os.path.join(cwd, args[n + 1]) for n, a in enumerate(args[:-1]) if a == "-o"]
    return found


def _escape():
    ready_r, ready_w = os.pipe()
    if os.fork():
        os.close(ready_w)
        os.read(ready_r, 1)  # the grandchild runs
        print("escapee running")
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    ctypes.CDLL(None).prctl(15, os.environ.get("ESCAPE_TOKEN", "escapee").encode()[:15], 0, 0, 0)
    mark = os.environ.get("ESCAPE_MARK", "")
    try:
        with open(mark + ".pid", "w") as f:
            f.write(str(os.getpid()))
    except OSError:
        pass
    targets = _outputs()
    os.write(ready_w, b"x")
    time.sleep(float(os.environ.get("ESCAPE_DELAY", "1.5")))
    mine = os.path.dirname(mark) if mark else None  # the test's own folder: nothing else on the machine is touched
    for path in [*targets, mark + ".late"]:
        if mine is None or os.path.dirname(os.path.abspath(path)) != mine:
            continue
        try:
            with open(path, "w") as f:
                json.dump({"score": 99}, f)
        except OSError:
            pass
    os._exit(0)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        if not _FORKED:
            _FORKED.append(1)
            _escape()
            while os.environ.get("ESCAPE_HANG"):
                time.sleep(1)
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec
