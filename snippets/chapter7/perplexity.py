import math

import numpy as np

from netcl_lite import ops
from netcl_lite.text import BPETokenizer

train = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"] * 10
held_out = "the dog sat on the mat"

tok = BPETokenizer()
tok.train_from_iterator(train, vocab_size=256 + 20)
V = 256 + len(tok.merges)

# A unigram model: every position predicts the same distribution, the
# training token frequencies with one extra count for every id (add-one).
counts = np.ones(V)
for text in train:
    np.add.at(counts, tok.encode(text), 1)
logits = np.log(counts / counts.sum())

ids = tok.encode(held_out)
n_tokens, n_bytes = len(ids), len(held_out.encode("utf-8"))
rows = np.tile(logits, (n_tokens, 1)).astype(np.float32)  # one row per position
ce = float(ops.cross_entropy(rows, np.array(ids)))  # mean -ln p(token), nats

print(f"{n_tokens} tokens, {n_bytes} bytes, vocabulary {V}")
print(f"cross-entropy  {ce:.3f} nats per token")
print(f"perplexity     exp(CE) = {math.exp(ce):.1f}")
print(f"bits per token CE / ln 2 = {ce / math.log(2):.3f}")
print(
    "bits per byte  CE / ln 2 x tokens / bytes ="
    f" {ce / math.log(2) * n_tokens / n_bytes:.3f}"
)

# A model that knows nothing: uniform over V ids, so CE = ln V, perplexity = V.
uniform = ops.cross_entropy(np.zeros((n_tokens, V), np.float32), np.array(ids))
print(f"uniform model: perplexity {math.exp(float(uniform)):.1f} = V")
assert abs(math.exp(float(uniform)) - V) < 1e-3 * V
