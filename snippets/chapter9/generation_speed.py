import statistics
import time

import numpy as np

from netcl_lite import capstone
from netcl_lite.core.stream import profile_kernels
from netcl_lite.nn import KVCache
from netcl_lite.ops.decode import SLOTS

run = capstone.run()
model, c = run.model, run.model.config
prompt = run.held_out_ids[:16]

# Kernel launches of one cached position: one layer through the training path's
# ops (norms, projections, RoPE, the cache append, attention, SwiGLU, residuals),
# against generate's fused step (one kernel for the embedding, up to four layers
# and the head).
cache = KVCache(model.queue, c.num_hidden_layers, 1, c.num_key_value_heads,
                c.head_dim, len(prompt) + 1)
model.hidden([prompt], cache)  # the prompt fills the cache
with profile_kernels(model.queue) as ops_path:
    model.layers[0](model.embed([prompt[-1:]]), cache, 0).numpy()
fused_cache = KVCache(model.queue, c.num_hidden_layers, 1, c.num_key_value_heads,
                      c.head_dim, len(prompt) + 2)
model.hidden([prompt], fused_cache)
model.decode_step(prompt[-1:], fused_cache)  # the first step sets the launches up
with profile_kernels(model.queue) as fused:
    model.decode_step(prompt[-1:], fused_cache)
per_layer = sum(n for kernel, op, n, ms in ops_path.table() if op != "embedding")
fused_launches = sum(n for _, _, n, _ in fused.table())
print(f"one cached position: {per_layer} launches per layer through the training"
      f" path's ops; {fused_launches} for all {c.num_hidden_layers} layers and the"
      " head, fused")
assert fused_launches == -(-c.num_hidden_layers // SLOTS), \
    "one fused kernel per four layers"

# as many new tokens as fit in the longest context the model takes
new = c.max_position_embeddings - len(prompt)
seconds = {True: [], False: []}
tokens = {}
for _ in range(3):  # interleaved rounds, medians: the machine may be shared
    for use_cache in (True, False):
        began = time.perf_counter()
        tokens[use_cache] = model.generate(prompt, new, temperature=0,
                                           use_cache=use_cache)
        seconds[use_cache].append(time.perf_counter() - began)
cached, full = (statistics.median(seconds[u]) for u in (True, False))
print(f"{new} new tokens after a {len(prompt)}-token prompt, greedy, on")
print(f"  {capstone.machine()}:")
print(f"  KV cache          {1000 * cached / new:6.1f} ms per token")
print(f"  full forward each {1000 * full / new:6.1f} ms per token")
print(f"  the cache is {full / cached:.1f}x faster here")
assert np.array_equal(tokens[True], tokens[False]), "the same tokens either way"
