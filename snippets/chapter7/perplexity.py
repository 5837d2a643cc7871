import math

import numpy as np

from netcl_lite import ops, reference
from netcl_lite.text import BPETokenizer

train = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"] * 10
held_out = "the dog sat on the mat"

tok = BPETokenizer()
tok.train_from_iterator(train, vocab_size=256 + 20)
V = 256 + len(tok.merges)

# A unigram model: whatever came before, it predicts the training token
# frequencies, with one extra count for every id (add-one).
counts = np.ones(V)
for text in train:
    np.add.at(counts, tok.encode(text), 1)
logits = np.log(counts / counts.sum())

ids = tok.encode(held_out)  # t_0 .. t_{T-1}
predicted = np.array(ids[1:])  # t_1 .. t_{T-1}; nothing comes before t_0
rows = np.tile(logits, (len(predicted), 1))  # row i - 1 holds the prediction of t_i
ce = float(ops.cross_entropy(rows.astype(np.float32), predicted))  # nats

# The definition term by term, in float64: the mean of -ln Pr(t_i | t_<i).
by_hand = -np.mean(logits[predicted] - np.log(np.exp(logits).sum()))
assert math.isclose(reference.cross_entropy(rows, predicted), by_hand, rel_tol=1e-12)
assert math.isclose(ce, by_hand, rel_tol=1e-5), \
    "ops.cross_entropy is the mean over the predicted tokens"

n_bytes = sum(len(tok.vocab[t]) for t in predicted)  # the bytes t_1 .. t_{T-1} spell
print(f"{len(ids)} tokens, {len(predicted)} predicted, {n_bytes} bytes; vocabulary {V}")
print(f"cross-entropy  {ce:.3f} nats per predicted token")
print(f"perplexity     exp(CE) = {math.exp(ce):.1f}")
print(f"bits per token CE / ln 2 = {ce / math.log(2):.3f}")
bits_per_byte = ce / math.log(2) * len(predicted) / n_bytes
print(f"bits per byte  CE / ln 2 x tokens / bytes = {bits_per_byte:.3f}")

# A model that knows nothing: uniform over V ids, so CE = ln V, perplexity = V.
uniform = ops.cross_entropy(np.zeros((len(predicted), V), np.float32), predicted)
print(f"uniform model: perplexity {math.exp(float(uniform)):.1f} = V")
assert abs(math.exp(float(uniform)) - V) < 1e-3 * V, "a uniform model's perplexity is V"
