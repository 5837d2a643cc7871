import numpy as np

import netcl_lite.autograd as ag
from netcl_lite.core.device import manager
from netcl_lite.core.tensor import Tensor
from netcl_lite.nn.transformer import RotaryAttention
from netcl_lite.text import BPETokenizer

# 1. Byte-level BPE: train, encode, decode.
tok = BPETokenizer()
tok.train_from_iterator(["Hello world!", "Attention is all you need."])
tokens = tok.encode("Hello world!")
print("Merges learned:", {tok.vocab[new]: new for new in tok.merges.values()})
print("Token IDs:", tokens)
print("Reconstructed text:", tok.decode(tokens))

# 2. Rotary multi-head attention on the OpenCL device, recorded on a tape.
q = manager.default("auto").queue
attn = RotaryAttention(
    queue=q, dim=256, n_heads=4, n_kv_heads=4, max_seq_len=512
)

rng = np.random.default_rng(0)
x_batch = Tensor.from_host(
    q, rng.standard_normal((2, 16, 256)).astype(np.float32)
)

with ag.Tape() as tape:
    x_node = ag.tensor(x_batch)
    out = attn(x_node)

print(f"Attention output shape: {out.value.shape}")
assert out.value.shape == (2, 16, 256)
