import numpy as np

import netcl_lite.autograd as ag
from netcl_lite.core.device import manager
from netcl_lite.nn.transformer import FeedForward

queue = manager.default().queue
ffn = FeedForward(queue, dim=16, hidden=48, seed=0)
W = {
    name: node.value.numpy().astype(np.float64)
    for name, node in ffn.parameters().items()
}

x = np.random.default_rng(0).standard_normal((2, 5, 16)).astype(np.float32)
out = ffn(ag.tensor(x, requires_grad=False)).value.numpy()  # OpenCL kernels


def silu(z):
    return z / (1.0 + np.exp(-z))


expected = (silu(x @ W["w1"]) * (x @ W["w3"])) @ W["w2"]  # float64 on the host
print("shapes:", {name: w.shape for name, w in W.items()})
print(
    "matches (silu(x W1) * (x W3)) W2 in float64:",
    np.allclose(out, expected, atol=1e-4),
)
