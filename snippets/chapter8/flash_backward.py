import numpy as np

import netcl_lite as nl

rng = np.random.default_rng(0)
B, H, G, T, d = 1, 4, 2, 150, 32  # 4 query heads share 2 K/V groups
q = rng.standard_normal((B, H, T, d)).astype(np.float32)
k = rng.standard_normal((B, G, T, d)).astype(np.float32)
v = rng.standard_normal((B, G, T, d)).astype(np.float32)
dout = rng.standard_normal((B, H, T, d)).astype(np.float32)  # dL/dO from above
scale = 1 / np.sqrt(d)
TOLERANCE = 1e-5  # of the largest entry of each float64 gradient


def dense_gradients(q, k, v, dout):
    """dQ, dK, dV of causal attention in float64, from the stored weights A."""
    q, dout = q.astype(np.float64), dout.astype(np.float64)
    kk = np.repeat(k.astype(np.float64), H // G, axis=1)  # head h reads group h // 2
    vv = np.repeat(v.astype(np.float64), H // G, axis=1)
    z = q @ kk.swapaxes(-1, -2) * scale  # the logits Z = Q K^T / sqrt(d) ...
    z = np.where(np.tril(np.ones((T, T), bool)), z, -np.inf)  # ... + M: j <= i
    A = np.exp(z - z.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)  # A: (B, H, T, T), what flash never stores
    o = A @ vv
    dv = A.swapaxes(-1, -2) @ dout  # dV = A^T dO
    dA = dout @ vv.swapaxes(-1, -2)  # dA = dO V^T
    delta = (dout * o).sum(-1, keepdims=True)  # delta_i = rowsum(dO * O)
    dZ = A * (dA - delta)  # dZ = A (dA - delta), elementwise
    dq = dZ @ kk * scale  # dQ = dZ K / sqrt(d)
    dk = dZ.swapaxes(-1, -2) @ q * scale  # dK = dZ^T Q / sqrt(d)
    per_group = lambda x: x.reshape(B, G, H // G, T, d).sum(2)  # heads of a group add
    return dq, per_group(dk), per_group(dv)


# The streamed backward: the tape keeps only O and one log-sum-exp per row.
leaves = [nl.tensor(x) for x in (q, k, v)]
with nl.Tape():
    out = nl.autograd.flash_attention(*leaves, causal=True)
out.backward(dout)

for name, leaf, exact in zip("QKV", leaves, dense_gradients(q, k, v, dout)):
    err = float(np.abs(leaf.grad.numpy() - exact).max())
    rel = err / float(np.abs(exact).max())
    print(
        f"d{name}: max |flash - dense float64| = {err:.1e}"
        f" ({rel:.1e} of the largest entry)"
    )
    assert rel < TOLERANCE, (name, rel)

# The bound in float32 rounding units (2^-24), beside the longest sum: dK and dV of
# key 0 add over every query row of the H // G heads that share its group.
longest = H // G * T
print(f"{TOLERANCE:.0e} is {TOLERANCE / 2**-24:.0f} float32 rounding units; "
      f"the longest sum has {longest} terms")
