import math

import numpy as np

from netcl_lite import ops

n_tokens, n_bytes, vocab = 12, 48, 8  # the tokens predicted after a start token
logits = np.zeros((n_tokens, vocab), np.float32)  # probability 1/8 for every id
targets = np.arange(n_tokens) % vocab  # any targets: each has probability 1/8
ce = float(ops.cross_entropy(logits, targets))
print(f"CE {ce:.3f} nats = ln 8 = {math.log(8):.3f}")
print(f"perplexity {math.exp(ce):.3f}, bits per token {ce / math.log(2):.3f}")
print(f"bits per byte {ce / math.log(2) * n_tokens / n_bytes:.3f}")
