import netcl_lite as nl

nl.extras.require("interop")  # stops here with the pip command if it is missing

import numpy as np
import torch
from transformers import LlamaForCausalLM

from netcl_lite import capstone

# the checkpoint is the run's folder: config.json, model.safetensors
run = capstone.run()
hf = LlamaForCausalLM.from_pretrained(run.directory).eval()
ids = run.held_out_ids[:hf.config.max_position_embeddings][None, :]  # a full context
with torch.no_grad():
    theirs = hf(torch.from_numpy(ids)).logits.numpy()
ours = run.model(ids).numpy()
c = hf.config
print(f"{type(hf).__name__}: {c.num_hidden_layers} layers,"
      f" {c.num_attention_heads} heads,"
      f" {c.num_key_value_heads} K/V heads, vocabulary {c.vocab_size}")
same = (theirs.argmax(-1) == ours.argmax(-1)).mean()
print(f"the same most likely next token at {same:.0%} of {ids.shape[1]} positions")
gap = np.abs(theirs - ours).max()
assert gap < 1e-3, gap  # float32 on both sides, different summation orders
