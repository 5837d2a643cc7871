"""Forward + backward of one pre-norm DecoderBlock on the OpenCL device vs NumPy and PyTorch on the CPU.

    python benchmarks/bench_block.py [--dim 256 --heads 4 --kv-heads 4 --seq 256 --batch 4 --hidden 704 --runs 7]
    OPENBLAS_NUM_THREADS=1 POCL_MAX_PTHREAD_COUNT=1 python benchmarks/bench_block.py --threads 1   # one thread each

The anchors are the same block (RMSNorm, RoPE, causal softmax attention,
SwiGLU): written out by hand with its backward in float32 NumPy on OpenBLAS,
and in PyTorch (torch==2.13.0, CPU, autograd, ``scaled_dot_product_attention``)
with the same weights and thread count. All compute d(sum(out · R))/d(x and
every weight) for one fixed R; before timing, the device gradients are checked
against both anchors'. Rounds alternate device, NumPy and torch; medians are
reported with the machine's load average (on a shared machine, rerun when it is
quiet, or compare one thread each: the second command line).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from netcl_lite import autograd as ag
from netcl_lite.core.device import manager
from netcl_lite.core.stream import sync
from netcl_lite.core.tensor import Tensor
from netcl_lite.nn.transformer import DecoderBlock

EPS = 1e-6  # RMSNorm's eps, as in nn.transformer.RMSNorm
SETTLE_S = 0.3   # OpenBLAS's and torch's worker threads spin ~0.1 s after a call: let them sleep first


# -- the NumPy anchor: forward keeps what backward needs -------------------------------------------

def rope_tables(t, d, base=10000.0):
    theta = base ** (-2.0 * np.arange(d // 2) / d)
    angle = np.arange(t)[:, None] * theta                         # (T, d/2)
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


def rope(x, cos, sin, sign=1.0):
    """Interleaved pairs (x[2i], x[2i+1]) turned by +θ (sign=1) or −θ (sign=−1). x (..., T, d)."""
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * cos - sign * b * sin
    out[..., 1::2] = sign * a * sin + b * cos
    return out


def rms(x, w):
    r = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + EPS)
    return x * r * w, r


def rms_back(g, x, w, r):
    gw = g * w
    dx = r * gw - x * r**3 * (gw * x).mean(-1, keepdims=True)
    return dx, (g * x * r).reshape(-1, x.shape[-1]).sum(0)


def forward(x, p, heads, groups):
    b, t, dim = x.shape
    d, rep = dim // heads, heads // groups
    c = {"x": x}
    n1, c["r1"] = rms(x, p["norm1.weight"])
    split = lambda y, n: y.reshape(b, t, n, d).transpose(0, 2, 1, 3)
    cos, sin = rope_tables(t, d)
    q = rope(split(n1 @ p["attn.wq"], heads), cos, sin)
    k = rope(split(n1 @ p["attn.wk"], groups), cos, sin)
    v = split(n1 @ p["attn.wv"], groups)
    kr, vr = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)        # (B, H, T, d)
    s = q @ kr.transpose(0, 1, 3, 2) / np.float32(np.sqrt(d))
    s = np.where(np.tri(t, dtype=bool), s, -np.inf)
    pr = np.exp(s - s.max(-1, keepdims=True))
    pr /= pr.sum(-1, keepdims=True)
    o = (pr @ vr).transpose(0, 2, 1, 3).reshape(b, t, dim)
    h = x + o @ p["attn.wo"]
    n2, c["r2"] = rms(h, p["norm2.weight"])
    gate, up = n2 @ p["ffn.w1"], n2 @ p["ffn.w3"]
    sig = 1.0 / (1.0 + np.exp(-gate))
    m = gate * sig * up
    c.update(n1=n1, q=q, kr=kr, vr=vr, pr=pr, o=o, h=h, n2=n2, gate=gate, up=up, sig=sig, m=m, cos=cos, sin=sin)
    return h + m @ p["ffn.w2"], c


def backward(g, p, c, heads, groups):
    b, t, dim = g.shape
    d, rep = dim // heads, heads // groups
    flat = lambda y: y.reshape(-1, y.shape[-1])
    grads = {"ffn.w2": flat(c["m"]).T @ flat(g)}
    dm = g @ p["ffn.w2"].T
    sig, gate, up = c["sig"], c["gate"], c["up"]
    dup, dgate = dm * gate * sig, dm * up * sig * (1 + gate * (1 - sig))
    grads["ffn.w1"], grads["ffn.w3"] = flat(c["n2"]).T @ flat(dgate), flat(c["n2"]).T @ flat(dup)
    dh, grads["norm2.weight"] = rms_back(dgate @ p["ffn.w1"].T + dup @ p["ffn.w3"].T, c["h"], p["norm2.weight"], c["r2"])
    dh += g
    grads["attn.wo"] = flat(c["o"]).T @ flat(dh)
    do = (dh @ p["attn.wo"].T).reshape(b, t, heads, d).transpose(0, 2, 1, 3)
    pr = c["pr"]
    dvr = pr.transpose(0, 1, 3, 2) @ do
    dp = do @ c["vr"].transpose(0, 1, 3, 2)
    ds = pr * (dp - (dp * pr).sum(-1, keepdims=True)) / np.float32(np.sqrt(d))
    dq, dkr = ds @ c["kr"], ds.transpose(0, 1, 3, 2) @ c["q"]
    fold = lambda y: y.reshape(b, groups, rep, t, d).sum(2)             # heads of a group share K/V
    dq = rope(dq, c["cos"], c["sin"], -1.0)
    dk = rope(fold(dkr), c["cos"], c["sin"], -1.0)
    dv = fold(dvr)
    merge = lambda y: y.transpose(0, 2, 1, 3).reshape(b, t, -1)
    dn1 = 0
    for name, dy in (("attn.wq", dq), ("attn.wk", dk), ("attn.wv", dv)):
        grads[name] = flat(c["n1"]).T @ flat(merge(dy))
        dn1 = dn1 + merge(dy) @ p[name].T
    dx, grads["norm1.weight"] = rms_back(dn1, c["x"], p["norm1.weight"], c["r1"])
    return dx + dh, grads


# -- timing ---------------------------------------------------------------------------------------

def device_step(block, x, r):
    with ag.Tape() as tape:
        xn = ag.tensor(x)
        t0 = time.perf_counter()
        out = block(xn)
        sync(out.queue)
        t1 = time.perf_counter()
    tape.backward(out, grad=r)
    sync(r.queue)
    return t1 - t0, time.perf_counter() - t1, xn


def torch_block(torch, params, heads, groups, x, r):
    """The same block in PyTorch: a step function returning (forward s, backward s, dx, grads)."""
    f = torch.nn.functional
    p = {n: torch.from_numpy(w).requires_grad_() for n, w in params.items()}
    xt = torch.from_numpy(x).requires_grad_()
    rt = torch.from_numpy(r)
    b, t, dim = x.shape
    d = dim // heads
    cos, sin = (torch.from_numpy(a) for a in rope_tables(t, d))

    def rope_t(y):
        a, c = y[..., 0::2], y[..., 1::2]
        return torch.stack((a * cos - c * sin, a * sin + c * cos), dim=-1).flatten(-2)

    def rms_t(y, w):
        return y * torch.rsqrt((y * y).mean(-1, keepdim=True) + EPS) * w

    def step():
        for w in (*p.values(), xt):
            w.grad = None
        t0 = time.perf_counter()
        n1 = rms_t(xt, p["norm1.weight"])
        split = lambda y, n: y.view(b, t, n, d).transpose(1, 2)
        q = rope_t(split(n1 @ p["attn.wq"], heads))
        k = rope_t(split(n1 @ p["attn.wk"], groups))
        v = split(n1 @ p["attn.wv"], groups)
        o = f.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=groups != heads)
        h = xt + o.transpose(1, 2).reshape(b, t, dim) @ p["attn.wo"]
        n2 = rms_t(h, p["norm2.weight"])
        out = h + (f.silu(n2 @ p["ffn.w1"]) * (n2 @ p["ffn.w3"])) @ p["ffn.w2"]
        t1 = time.perf_counter()
        out.backward(rt)
        return t1 - t0, time.perf_counter() - t1

    def grads():
        return xt.grad.numpy(), {n: w.grad.numpy() for n, w in p.items()}

    return step, grads


def host_step(x, p, r, heads, groups):
    t0 = time.perf_counter()
    _, c = forward(x, p, heads, groups)
    t1 = time.perf_counter()
    dx, grads = backward(r, p, c, heads, groups)
    return t1 - t0, time.perf_counter() - t1, dx, grads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("dim", 256), ("heads", 4), ("kv-heads", 4), ("seq", 256), ("batch", 4), ("hidden", 704), ("runs", 7)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--kernel", choices=("flash", "dense"), default="flash")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch's thread count")
    a = ap.parse_args()
    try:
        import torch

        torch.set_num_threads(a.threads)
    except ImportError:
        torch = None
        print("torch not installed (pip install torch==2.13.0): the torch row stays empty")
    dev = manager.default()
    q = dev.queue
    block = DecoderBlock(q, a.dim, a.heads, a.kv_heads, a.hidden, max_seq_len=a.seq, norm="pre", kernel=a.kernel)
    params = {n: p.numpy() for n, p in block.parameters().items()}
    rng = np.random.default_rng(0)
    x_h = rng.standard_normal((a.batch, a.seq, a.dim)).astype(np.float32)
    r_h = rng.standard_normal(x_h.shape).astype(np.float32)
    x, r = Tensor.from_host(q, x_h), Tensor.from_host(q, r_h)

    # Validate before timing: device gradients against the host anchor's.
    _, _, xn = device_step(block, x, r)
    _, _, dx, grads = host_step(x_h, params, r_h, a.heads, a.kv_heads)
    rel = lambda got, want: np.abs(got - want).max() / np.abs(want).max()
    worst = max(rel(xn.grad.numpy(), dx), *(rel(p.grad.numpy(), grads[n]) for n, p in block.parameters().items()))
    assert worst < 1e-3, f"device and NumPy gradients differ: worst relative error {worst:.2e}"
    if torch is not None:
        torch_step, torch_grads = torch_block(torch, params, a.heads, a.kv_heads, x_h, r_h)
        torch_step()
        tdx, tgrads = torch_grads()
        worst_t = max(rel(tdx, dx), *(rel(tgrads[n], grads[n]) for n in grads))
        assert worst_t < 1e-3, f"torch and NumPy gradients differ: worst relative error {worst_t:.2e}"

    times = {name: ([], []) for name in ("device", "numpy") + (("torch",) if torch is not None else ())}
    steps = {"device": lambda: device_step(block, x, r)[:2],
             "numpy": lambda: host_step(x_h, params, r_h, a.heads, a.kv_heads)[:2]}
    if torch is not None:
        steps["torch"] = torch_step
    for _ in range(a.runs):   # interleaved rounds: all see the same machine load
        for name, step in steps.items():
            block.zero_grad()
            time.sleep(SETTLE_S)       # the last library's spinning threads go to sleep ...
            step()                     # ... and an untimed step wakes this one's
            block.zero_grad()
            f, b = step()
            times[name][0].append(f)
            times[name][1].append(b)
    med = lambda v: statistics.median(v) * 1e3
    t_proj = 2 * a.batch * a.seq * a.dim * (2 * a.dim + 2 * a.kv_heads * a.dim // a.heads + 3 * a.hidden)
    flops = 3 * (t_proj + 2 * 2 * a.batch * a.heads * a.seq * a.seq * (a.dim // a.heads) // 2)   # fwd + 2x bwd, causal half
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"device: {dev.name} ({dev.platform}); host anchor: NumPy {np.__version__} float32; "
          f"{os.cpu_count()} CPUs, load average {load} (a busy machine slows OpenBLAS's threads most)")
    print(f"DecoderBlock pre-norm D={a.dim} h={a.heads} g={a.kv_heads} hidden={a.hidden} T={a.seq} B={a.batch}, "
          f"attention kernel={a.kernel}; medians of {a.runs} runs; gradients agree to {worst:.1e} (relative to max)")
    print(f"{'':10}{'forward ms':>12}{'backward ms':>13}{'total ms':>10}{'GFLOP/s':>9}")
    totals = {}
    for name, (f, b) in times.items():
        totals[name] = med([x + y for x, y in zip(f, b)])
        print(f"{name:10}{med(f):12.1f}{med(b):13.1f}{totals[name]:10.1f}{flops / totals[name] / 1e6:9.1f}")
    for anchor in ("numpy", "torch"):
        if anchor in totals:
            print(f"device / {anchor} total time: {totals['device'] / totals[anchor]:.2f}x")


if __name__ == "__main__":
    main()
