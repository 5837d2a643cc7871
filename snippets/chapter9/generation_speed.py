import statistics
import time

import numpy as np

from netcl_lite import capstone

run = capstone.run()
model = run.model
prompt = run.held_out_ids[:16]
# as many new tokens as fit in the longest context the model takes
new = model.config.max_position_embeddings - len(prompt)
seconds = {True: [], False: []}
tokens = {}
for _ in range(3):  # interleaved rounds, medians: the machine may be shared
    for use_cache in (True, False):
        began = time.perf_counter()
        tokens[use_cache] = model.generate(prompt, new, temperature=0,
                                           use_cache=use_cache)
        seconds[use_cache].append(time.perf_counter() - began)
cached, full = (statistics.median(seconds[c]) for c in (True, False))
print(f"{new} new tokens after a {len(prompt)}-token prompt, greedy, on")
print(f"  {capstone.machine()}:")
print(f"  KV cache          {1000 * cached / new:6.1f} ms per token")
print(f"  full forward each {1000 * full / new:6.1f} ms per token")
print(f"  the cache is {full / cached:.1f}x faster here")
assert np.array_equal(tokens[True], tokens[False])  # same tokens either way
