"""Chapter 9: one head's attention weights in the trained model, on one sentence (drawn at build time)."""

import sys

import matplotlib.pyplot as plt
import numpy as np

from netcl_lite import autograd as ag
from netcl_lite import capstone, reference

run = capstone.run()
model, tok, c = run.model, run.tokenizer, run.model.config
sentence = "Return a new list containing all items from the iterable."
ids = np.asarray([tok.encode_ordinary(sentence)])
labels = [tok.decode([i]) for i in ids[0]]

# Run the blocks below the chosen layer, then that layer's q and k, as its forward does.
weights = []
h = model.embed(ids)
for block in model.layers:
    x = block.norm1(h)
    rope = dict(base=c.rope_theta, pairing="half")
    q = ag.rope_heads(ag.linear(x, block.attn.wq), c.num_attention_heads, **rope).numpy()
    k = ag.rope_heads(ag.linear(x, block.attn.wk), c.num_key_value_heads, **rope).numpy()
    weights.append(reference.attention(q, k, k, causal=True, return_weights=True)[1][0])
    h = block(h)
# The head that puts the most weight on the token just before each query (chosen by that
# rule, not by eye): (layer, head).
previous = np.array([[np.diagonal(w_h, -1).mean() for w_h in w] for w in weights])
layer, head = np.unravel_index(previous.argmax(), previous.shape)
w = weights[layer][head]

fig, ax = plt.subplots(figsize=(6.4, 5.6), facecolor="white")
ax.imshow(w, cmap="Blues", vmin=0, vmax=1)
ax.set_xticks(range(len(labels)), [repr(s)[1:-1] for s in labels], rotation=90, fontsize=8)
ax.set_yticks(range(len(labels)), [repr(s)[1:-1] for s in labels], fontsize=8)
ax.set_xlabel("key (attended to)")
ax.set_ylabel("query")
ax.set_title(f"layer {layer}, head {head}", fontsize=10)
alt = (f"Attention weights of layer {layer}, head {head} of the trained model on the sentence '{sentence}' "
       f"({len(labels)} tokens), causal: on average {previous[layer, head]:.0%} of each query's weight "
       f"goes to the token just before it")
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight")
