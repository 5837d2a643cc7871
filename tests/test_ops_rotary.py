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
import pytest

import netcl_lite as nl
from netcl_lite import autograd as ag
from netcl_lite import ops, reference
from netcl_lite.core.tensor import Tensor
from netcl_lite.ops.rotary_attention import MAX_LENGTH, rotary_attention_reference
from netcl_lite.testing import assert_close, attention_atol, flash_lse_atol


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
