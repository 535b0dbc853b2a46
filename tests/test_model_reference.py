"""Lesson ``model`` against the reference implementation: a tiny Llama built and saved by transformers itself.

transformers' own classes (``LlamaConfig``, ``LlamaForCausalLM``) make the
model and ``save_pretrained`` writes the folder (``config.json`` as the
installed version writes it, ``model.safetensors``), beside a
``tokenizer.json`` built with ``tokenizers``.  The lesson reads that folder
as a reader's ``--model DIR`` and traces one head; transformers' eager
attention, run in float64 on the same weights, gives the weights of every
head (``output_attentions``), the stream entering each layer
(``output_hidden_states``) and what each layer's output projection reads.
The traced head must agree with them to 1e-5.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

pytest.importorskip("tokenizers", reason="could not import tokenizers (the model extra)")
pytest.importorskip("transformers", reason="could not import transformers (the reference, a test dependency)")

import tracer
from tests import tinymodels as tm

TEXT = "a dog ran after 12 cats"
BASE = 500.0
"""Not the default 10000: a reader that ignored the folder's rotary base would fail here."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The folder transformers wrote, and its model in float64 with eager attention."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = tm.train_tokenizer()
    s = tm.SIZES
    config = LlamaConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=s["width"], intermediate_size=s["ffn"],
        num_hidden_layers=s["layers"], num_attention_heads=s["heads"], num_key_value_heads=s["kv_heads"],
        rope_theta=BASE, rms_norm_eps=s["eps"], tie_word_embeddings=True, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(11)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # transformers' initial weights (std 0.02) attend almost uniformly: wider ones do not
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * 1.8 / math.sqrt(p.shape[-1]))
    folder = tmp_path_factory.mktemp("transformers") / "tiny-llama"
    model.save_pretrained(str(folder))
    tok.save(str(folder / "tokenizer.json"))
    model = model.to(torch.float64).eval()
    model.config._attn_implementation = "eager"  # the attention weights themselves, not a fused kernel's output
    return folder, model


def reference(model: Any, ids: list[int], layer: int) -> dict[str, torch.Tensor]:
    """transformers' forward pass: attention weights, the stream entering ``layer``, its o_proj's input, logits."""
    seen: dict[str, torch.Tensor] = {}
    o_proj = model.model.layers[layer].self_attn.o_proj
    hook = o_proj.register_forward_pre_hook(lambda mod, args: seen.update(concat=args[0][0].detach()))
    try:
        with torch.no_grad():
            out = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True, use_cache=False)
    finally:
        hook.remove()
    return {
        "alpha": out.attentions[layer][0],
        "x": out.hidden_states[layer][0],
        "concat": seen["concat"],
        "W_o": o_proj.weight.detach(),
        "logits": out.logits[0, -1],
    }


def values(t: tracer.Trace, name: str) -> torch.Tensor:
    return torch.from_numpy(np.asarray(t.node(name).value, dtype=np.float64))


def test_the_folder_is_transformers_own(built: tuple[Path, Any]) -> None:
    """What the lesson reads is what transformers wrote (config.json in the installed version's own form)."""
    folder, _ = built
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in folder.iterdir()}
    t = tracer.trace_lesson("model", model=str(folder), text=TEXT, layer=0, head=0)
    assert t.meta["model"]["rope_base"] == BASE and t.meta["model"]["pairs"] == "half"


@pytest.mark.parametrize(("layer", "head"), [(0, 0), (1, 3), (2, 2)])
def test_traced_head_agrees_with_transformers(built: tuple[Path, Any], layer: int, head: int) -> None:
    folder, model = built
    t = tracer.trace_lesson("model", model=str(folder), text=TEXT, layer=layer, head=head)
    ids = t.meta["ids"]
    ref = reference(model, ids, layer)
    dh = tm.SIZES["width"] // tm.SIZES["heads"]
    mine = slice(head * dh, (head + 1) * dh)
    torch.testing.assert_close(values(t, "x"), ref["x"], atol=1e-5, rtol=0)  # the stream entering the layer
    torch.testing.assert_close(values(t, "causal.alpha"), ref["alpha"][head], atol=1e-5, rtol=0)
    torch.testing.assert_close(values(t, "heads.alpha"), ref["alpha"], atol=1e-5, rtol=0)
    torch.testing.assert_close(values(t, "z"), ref["concat"][:, mine], atol=1e-5, rtol=0)
    share = ref["concat"][:, mine] @ ref["W_o"][:, mine].T  # the head's share of the output projection
    torch.testing.assert_close(values(t, "out"), share, atol=1e-5, rtol=0)
    assert float(ref["alpha"][head].std()) > 0.05  # not near-uniform weights, which any rotation would give
    p = torch.softmax(ref["logits"], dim=-1)
    assert t.meta["next"]["id"] == int(p.argmax())
    assert float(t.node("next.p").value) == pytest.approx(float(p.max()), abs=1e-5)
