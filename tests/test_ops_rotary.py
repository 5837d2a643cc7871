"""rotary_attention (RoPE, heads and attention in one kernel from the projections) against its
float64 reference, and against the ops it replaces.

Tolerance: ``attention_atol`` (netcl_lite.testing) on the rotated heads, stretched by
1 + 10/(d + 2): the rotation of q and k (cos, sin rounded to float32, two products and a sum:
5u·(|x_a| + |x_b|) per entry, ``rope_atol``) adds at most 10u·scale·|q|·|k| to each score, beside
the (d + 2)u·scale·|q|·|k| of the product that the bound is built on; the stretch also covers it in
the softmax and weighted-sum terms, which it only loosens by the same factor. The log-sum-exp
likewise with ``flash_lse_atol``. References are computed in float64 on the float32-rounded inputs.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

import netcl_lite as nl
from netcl_lite import autograd as ag
from netcl_lite import ops, reference
from netcl_lite.core.tensor import Tensor
from netcl_lite.ops.rotary_attention import MAX_LENGTH, rotary_attention_reference
from kernel_cases import record_launches
from netcl_lite.testing import EPS32, assert_close, attention_atol, flash_lse_atol, matmul_atol


def _heads(q, k, v, h, g, rope, pairing):
    """The float64 rotated heads the reference attends over: (B, H, T, d) and (B, G, T, d|dv)."""
    b, t, _ = q.shape
    split = lambda x, n: np.asarray(x, np.float64).reshape(b, t, n, -1).transpose(0, 2, 1, 3)
    if rope:
        return (reference.rope_heads(q, h, pairing=pairing), reference.rope_heads(k, g, pairing=pairing),
                split(v, g))
    return split(q, h), split(k, g), split(v, g)


def _case(rng, b, t, h, g, d, dv):
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    return f(b, t, h * d), f(b, t, g * d), f(b, t, g * dv)


def _check(q, k, v, h, g, causal, rope, pairing, what, queue):
    d = q.shape[-1] // h
    out, lse = ops.rotary_attention(*(Tensor.from_host(queue, x) for x in (q, k, v)), h, g, causal=causal, rope=rope,
                                    pairing=pairing, return_stats=True)
    qh, kh, vh = _heads(q, k, v, h, g, rope, pairing)
    stretch, scale = 1 + 10 / (d + 2), 1 / np.sqrt(d)
    b, t = q.shape[:2]
    atol = attention_atol(qh, kh, vh, scale).transpose(0, 2, 1, 3).reshape(b, t, h, 1)   # per (b, t, head)
    expected = rotary_attention_reference(q, k, v, h, g, causal=causal, rope=rope, pairing=pairing)
    assert_close(out.numpy().reshape(b, t, h, -1), expected.reshape(b, t, h, -1), rtol=0, atol=stretch * atol,
                 what=what)
    assert_close(lse.numpy(), reference.attention_lse(qh, kh, causal=causal), rtol=0,
                 atol=stretch * flash_lse_atol(qh, kh, scale), what="lse " + what)


@pytest.mark.parametrize("seed", range(6))
def test_rotary_attention_matches_float64_on_random_ragged_shapes(seed, queue):
    rng = np.random.default_rng(seed)
    b, t = int(rng.integers(1, 4)), int(rng.integers(1, MAX_LENGTH + 1))
    g = int(rng.integers(1, 4))
    h = g * int(rng.integers(1, 4))
    d, dv = 2 * int(rng.integers(1, 40)), int(rng.integers(1, 70))
    causal, rope, pairing = bool(rng.integers(2)), bool(seed % 3), ("half", "interleaved")[seed % 2]
    _check(*_case(rng, b, t, h, g, d, dv), h, g, causal, rope, pairing,
           f"B={b} T={t} H={h} G={g} d={d} dv={dv} causal={causal} rope={rope} {pairing}", queue)


@pytest.mark.parametrize("seed", range(4))
def test_the_joined_projection_is_read_as_q_k_and_v_on_random_ragged_shapes(seed, queue):
    """rotary_attention_qkv reads q, k and v as column blocks of one (B, T, wq + wk + wv) and runs the
    same kernels on the same values as rotary_attention of the three apart: the output, the lse and
    the backward's [dq | dk | dv] have the same bits (the offsets and row lengths are the only change)."""
    rng = np.random.default_rng(100 + seed)
    b, t = int(rng.integers(1, 4)), int(rng.integers(1, MAX_LENGTH + 1))
    g = int(rng.integers(1, 4))
    h = g * int(rng.integers(1, 4))
    d, dv = 2 * int(rng.integers(1, 40)), int(rng.integers(1, 70))
    causal, rope, pairing = bool(rng.integers(2)), bool(seed % 3), ("half", "interleaved")[seed % 2]
    q, k, v = _case(rng, b, t, h, g, d, dv)
    kw = dict(causal=causal, rope=rope, pairing=pairing)
    tq, tk, tv = (Tensor.from_host(queue, a) for a in (q, k, v))
    qkv = Tensor.from_host(queue, np.concatenate([q, k, v], axis=-1))
    widths = (h * d, g * d, g * dv)
    out, lse = ops.rotary_attention(tq, tk, tv, h, g, return_stats=True, **kw)
    got, got_lse = ops.rotary_attention_qkv(qkv, widths, h, g, return_stats=True, **kw)
    assert np.array_equal(out.numpy(), got.numpy()) and np.array_equal(lse.numpy(), got_lse.numpy())
    r = Tensor.from_host(queue, rng.standard_normal(out.shape).astype(np.float32))
    apart = ops.rotary_attention_backward(r, tq, tk, tv, out, lse, h, g, **kw)
    joined = ops.rotary_attention_qkv_backward(r, qkv, widths, got, got_lse, h, g, **kw)
    assert np.array_equal(apart.numpy(), joined.numpy())


def test_the_joined_projection_s_arguments_are_checked(queue):
    qkv = np.zeros((2, 5, 4 * 6 + 2 * 6 + 2 * 5), np.float32)
    with pytest.raises(TypeError, match="widths must be the three positive int widths"):
        ops.rotary_attention_qkv(qkv, (24, 12), 4, 2)
    with pytest.raises(TypeError, match="widths must be the three positive int widths"):
        ops.rotary_attention_qkv(qkv, (24, 12, 10.0), 4, 2)
    with pytest.raises(ValueError, match=r"qkv must be \(B, T, 47\)"):
        ops.rotary_attention_qkv(qkv, (24, 12, 11), 4, 2)
    with pytest.raises(ValueError, match="must be heads=4 heads of d"):
        ops.rotary_attention_qkv(qkv, (22, 14, 10), 4, 2)
    assert ops.rotary_attention_qkv(qkv, (24, 12, 10), 4, 2).shape == (2, 5, 4 * 5)


@pytest.mark.parametrize("t", [1, 15, 16, 17, 63, 64, 65, 128])
def test_rotary_attention_at_the_chunk_edges(t, queue):
    """Lengths around the kernels' chunks of keys (16 and 64) and the longest they take."""
    rng = np.random.default_rng(t)
    _check(*_case(rng, 2, t, 4, 2, 32, 32), 4, 2, True, True, "half", f"T={t}", queue)


def test_the_layer_equals_rope_heads_flash_and_the_merge_forward_and_backward(queue):
    """What RotaryAttention runs without a cache, against what it ran before: the capstone's head
    layout (H = 4, G = 2, d = 32, rotate-half), outputs and every gradient."""
    rng = np.random.default_rng(3)
    q, k, v = _case(rng, 3, 64, 4, 2, 32, 32)
    r = rng.standard_normal((3, 64, 128)).astype(np.float32)
    results = []
    for fused in (True, False):
        nodes = [ag.tensor(x) for x in (q, k, v)]
        with nl.Tape():
            if fused:
                out = ag.rotary_attention(*nodes, 4, 2)
            else:
                qh, kh = ag.rope_heads(nodes[0], 4, pairing="half"), ag.rope_heads(nodes[1], 2, pairing="half")
                out = ag.merge_heads(ag.flash_attention(qh, kh, ag.split_heads(nodes[2], 2), causal=True))
            loss = ag.sum(ag.mul(out, ag.constant(r)))
        loss.backward()
        results.append([out.numpy()] + [n.grad.numpy() for n in nodes])
    for name, a, b in zip(("out", "dq", "dk", "dv"), *results):
        scale = np.abs(b).max()
        assert_close(a, b, rtol=0, atol=64 * 32 * 6e-8 * scale, what=name)   # two float32 results: T·d·u each


def test_rotary_attention_errors_are_clear(queue):
    q, k, v = np.ones((1, 4, 8)), np.ones((1, 4, 4)), np.ones((1, 4, 4))
    with pytest.raises(ValueError, match="kv_heads=3 must divide heads=2"):
        ops.rotary_attention(q, k, v, 2, 3)
    with pytest.raises(ValueError, match="same B and T"):
        ops.rotary_attention(q, np.ones((1, 5, 4)), v, 2, 1)
    with pytest.raises(ValueError, match="heads of the same d"):
        ops.rotary_attention(q, np.ones((1, 4, 6)), v, 2, 1)
    with pytest.raises(ValueError, match="even head width"):
        ops.rotary_attention(np.ones((1, 4, 6)), np.ones((1, 4, 3)), v, 2, 1)
    with pytest.raises(ValueError, match=f"T <= {MAX_LENGTH}"):
        t = MAX_LENGTH + 1
        ops.rotary_attention(np.ones((1, t, 8)), np.ones((1, t, 4)), np.ones((1, t, 4)), 2, 1)
    with pytest.raises(ValueError, match="pairing"):
        ops.rotary_attention(q, k, v, 2, 1, pairing="odd")
    with pytest.raises(ValueError, match="heads must be a positive int"):
        ops.rotary_attention(q, k, v, 0, 1)
    with pytest.raises(ValueError, match="non-finite"):
        ops.rotary_attention(np.full(q.shape, np.nan), k, v, 2, 1)


def test_the_projected_node_equals_three_linears_and_the_attention_at_the_capstone_shape(monkeypatch, queue):
    """RotaryAttention's node (projections, attention and their gradients in one) against the three
    ``linear`` nodes and ``rotary_attention`` it replaces, at the capstone's layer (B·T = 1024 rows, so
    the weight gradients run as matmul_tall on a CPU, each reading its block of [dq | dk | dv] in
    place). The forward runs the same products: the same bits. Backward, x's gradient is one product
    over the 256 joined columns instead of three summed, and K's and V's weight gradients one product:
    each entry a float32 sum of K terms either way, so within 2 (K + 2) u of the sum of |terms|
    (matmul_atol's bound, once per side). A second backward adds into the leaves' gradients (the
    rules' accumulate path): twice the first."""
    launched = record_launches(monkeypatch)
    rng = np.random.default_rng(41)
    b, t, n, h, g, d = 16, 64, 128, 4, 2, 32
    x, wq, wk, wv = (rng.standard_normal(s).astype(np.float32) * sc for s, sc in
                     (((b, t, n), 1.0), ((n, h * d), n ** -0.5), ((n, g * d), n ** -0.5), ((n, g * d), n ** -0.5)))
    r = rng.standard_normal((b, t, h * d)).astype(np.float32)
    results = []
    for joined in (True, False):
        nodes = [ag.tensor(a) for a in (x, wq, wk, wv)]
        for _ in range(2):
            with nl.Tape():
                if joined:
                    out = ag.rotary_attention_projected(*nodes, h, g)
                else:
                    out = ag.rotary_attention(*(ag.linear(nodes[0], w) for w in nodes[1:]), h, g)
                loss = ag.sum(ag.mul(out, ag.constant(r)))
            launched.clear()
            loss.backward()
            names = [name for name, _ in launched]
            results.append([out.numpy()] + [nd.grad.numpy() for nd in nodes])
        if joined and queue.device.type & cl.device_type.CPU:
            assert names.count("matmul_tall") == 2 and names.count("copy_blocks") == 1, names   # the cut of [dWk | dWv]; the forward joined the weights
    once, twice, plain, _ = results
    np.testing.assert_array_equal(once[0], plain[0])
    dq, dk, dv = (ops.split_columns(ops.rotary_attention_backward(
        *(Tensor.from_host(queue, a) for a in (r, x @ wq, x @ wk, x @ wv)), *ops.rotary_attention(
            *(Tensor.from_host(queue, a) for a in (x @ wq, x @ wk, x @ wv)), h, g, return_stats=True), h, g),
        (h * d, g * d, g * d)))
    rows = x.reshape(-1, n)
    grads = [np.abs(a.numpy().reshape(-1, a.shape[-1])) for a in (dq, dk, dv)]
    # x's: K = 256 joined; the three products of 128, 64, 64 terms and their two sums stay within it
    bounds = [matmul_atol(np.concatenate(grads, axis=1), np.abs(np.concatenate([wq, wk, wv], axis=1)).T).reshape(x.shape)]
    bounds += [matmul_atol(np.abs(rows).T, gr) for gr in grads]
    for name, a, c, bound in zip(("dx", "dwq", "dwk", "dwv"), once[1:], plain[1:], bounds):
        assert_close(a, c, rtol=0, atol=2 * bound, what=name)
    for name, a2, a1 in zip(("dx", "dwq", "dwk", "dwv"), twice[1:], once[1:]):
        assert_close(a2, 2 * a1, rtol=0, atol=2 * EPS32 * np.abs(a1) + 1e-30, what=f"{name}, accumulated")
