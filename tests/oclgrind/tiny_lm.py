"""A tiny DecoderLM (2 layers, grouped K/V): a loss and its gradients, two clipped AdamW steps, then greedy
generation with the KV cache (the fused decode kernels). Run under Oclgrind by
tests/test_oclgrind.py, and on the default device for comparison.

usage: python tiny_lm.py OUT.npz
"""

import opencl12  # first: every kernel is built as OpenCL C 1.2

import sys

import numpy as np

import netcl_lite as nl
from netcl_lite.nn.lm import DecoderLM, LMConfig
from netcl_lite.optim import AdamW, clip_grad_norm

config = LMConfig(vocab_size=40, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
model = DecoderLM(config)
opt = AdamW(model.parameters(), lr=1e-2)
rng = np.random.default_rng(0)
ids, targets = rng.integers(0, 40, (2, 13)), rng.integers(0, 40, (2, 13))
results = {}
for step in range(2):
    opt.zero_grad()
    with nl.Tape():
        loss = model.loss(ids, targets)
    loss.backward()
    results[f"loss{step}"] = loss.numpy()
    if step == 0:                      # the first gradients, before any update could amplify a difference
        results.update({f"grad.{name}": p.grad.numpy() for name, p in model.parameters().items()})
    clip = clip_grad_norm(model.parameters(), 0.5, wait=False)    # the norm stays on the device
    opt.step(norm=clip)
    results[f"clip{step}"] = clip.numpy()
results["generated"] = model.generate([1, 2, 3], max_new_tokens=4, temperature=0)
np.savez(sys.argv[1], **results)
print(opencl12.report())
print(f"{nl.device().platform}: losses {float(results['loss0']):.4f} {float(results['loss1']):.4f}, generated {results['generated']}")
