"""Checkpoints move both ways between DecoderLM and transformers' LlamaForCausalLM with the same logits.

transformers and CPU torch (``torch==2.13.0``) are the test-only oracle. Both sides
compute in float32 with different summation orders, so the logits agree up to float32
rounding: each stage's longest inner sum has n = max(hidden_size, intermediate_size)
terms and carries about n·u relative error (u = 2⁻²⁴); RMSNorm keeps errors from
compounding across layers, so we allow ``tol_for(n)`` = 16·(n + 16)·u of the largest
logit on each side, twice that between them (≈ 1.5e-4 at n = 64). A wrong name,
transpose or RoPE pairing moves logits by O(their size).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from kernel_cases import tol_for
from transformers import LlamaConfig, LlamaForCausalLM

from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.testing import assert_close

CASES = [(4, 4, True), (4, 2, True), (4, 1, True), (4, 4, False), (4, 2, False), (4, 1, False)]
IDS = [f"{'MHA' if g == 4 else 'GQA' if g == 2 else 'MQA'}-{'tied' if tie else 'untied'}" for _, g, tie in CASES]


def config(heads, groups, tie) -> LMConfig:
    return LMConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                    num_attention_heads=heads, num_key_value_heads=groups, max_position_embeddings=48,
                    rms_norm_eps=1e-5, rope_theta=500.0, tie_word_embeddings=tie, initializer_range=0.1)


def hf_logits(model, ids) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(np.asarray(ids, np.int64))).logits.numpy()


def check(ours, theirs, c):
    tol = 2 * tol_for(max(c.hidden_size, c.intermediate_size)) * np.abs(theirs).max()
    assert_close(ours, theirs, rtol=0, atol=tol, what="logits")


IDS_BATCH = np.random.default_rng(1).integers(0, 97, size=(2, 40))


@pytest.mark.parametrize("heads, groups, tie", CASES, ids=IDS)
def test_a_checkpoint_saved_by_transformers_gives_the_same_logits_here(heads, groups, tie, tmp_path, queue):
    c = config(heads, groups, tie)
    torch.manual_seed(heads * 10 + groups + tie)
    hf = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in c.to_dict().items()})).eval()
    with torch.no_grad():   # random norm gains too, so a swapped norm cannot hide behind ones
        for name, p in hf.named_parameters():
            if name.endswith("norm.weight") or "layernorm" in name:
                p.copy_(1 + 0.5 * torch.randn_like(p))
    hf.save_pretrained(tmp_path)
    ours = DecoderLM.from_pretrained(tmp_path, queue=queue)
    assert ours.config == c
    check(ours(IDS_BATCH).numpy(), hf_logits(hf, IDS_BATCH), c)


@pytest.mark.parametrize("heads, groups, tie", CASES, ids=IDS)
def test_a_checkpoint_saved_here_gives_the_same_logits_in_transformers(heads, groups, tie, tmp_path, queue):
    c = config(heads, groups, tie)
    ours = DecoderLM(c, queue=queue, seed=heads + groups)
    rng = np.random.default_rng(3)
    state = ours.state_dict()
    for name in state:
        if "norm" in name:
            state[name] = (1 + 0.5 * rng.standard_normal(state[name].shape)).astype(np.float32)
    ours.load_state_dict(state)
    ours.save_pretrained(tmp_path)
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["architectures"] == ["LlamaForCausalLM"] and written["tie_word_embeddings"] is tie
    hf = LlamaForCausalLM.from_pretrained(tmp_path).eval()
    assert hf.config.num_key_value_heads == groups and hf.config.rope_parameters["rope_theta"] == 500.0
    assert ("lm_head.weight" in hf.state_dict()) and (hf.lm_head.weight is hf.model.embed_tokens.weight) == tie
    check(ours(IDS_BATCH).numpy(), hf_logits(hf, IDS_BATCH), c)
