"""flash_attention against the float64 reference and against dense attention.

Tolerance: ``attention_atol`` (netcl_lite.testing) — score errors of
(d + 2)·u·scale·|q|·|k| move each weight by at most twice that (relatively),
plus the softmax and weighted-sum rounding; the tiled kernel's extra rounding of
scale·log2(e) and its exp2 polynomial (< 2u) fit in the factor-2 slack of that
bound. References are computed in float64 on the float32-rounded inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import f32, qkv, random_attention_case

from netcl_lite import ops, reference
from netcl_lite.core.tensor import Tensor
from netcl_lite.core.tensor import track_allocations
from netcl_lite.testing import assert_close, attention_atol, flash_lse_atol

BLOCKS = [None, 1, 2, 7, 16, 64, 128, 200]


def random_case(rng, i):
    """A random attention case (``kernel_cases.random_attention_case``) and a block size."""
    return (*random_attention_case(rng, i), BLOCKS[i % len(BLOCKS)])


def check(q, k, v, got, *, mask=None, causal=False, scale=None, what=""):
    s = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    expected = reference.attention(q, k, v, mask=mask, causal=causal, scale=scale)
    assert_close(got, expected, rtol=0, atol=attention_atol(q, k, v, s), what=what)


def test_flash_matches_reference_on_random_shapes_masks_and_groups():
    rng = np.random.default_rng(11)
    for i in range(64):
        q, k, v, mask, causal, block = random_case(rng, i)
        got, lse = ops.flash_attention(q, k, v, mask=mask, causal=causal, block_size=block, return_stats=True)
        what = f"case {i}: q{q.shape} k{k.shape} v{v.shape} block={block} causal={causal} mask={None if mask is None else mask.shape}"
        assert got.shape == q.shape[:-1] + (v.shape[-1],) and lse.shape == q.shape[:-1]
        check(q, k, v, got, mask=mask, causal=causal, what=what)
        s = 1 / np.sqrt(q.shape[-1])
        assert_close(lse, reference.attention_lse(q, k, mask=mask, causal=causal), rtol=0,
                     atol=flash_lse_atol(q, k, s), what="lse " + what)


@pytest.mark.parametrize("kernel", ["rows", "tiled"])
def test_flash_equals_dense_for_every_tile_size(kernel):
    rng = np.random.default_rng(12)
    q, k, v = qkv(rng, 2, 4, 2, 37, 53, 24, 20)
    dense = ops.attention(q, k, v)
    atol = attention_atol(q, k, v, 1 / np.sqrt(24))
    blocks = [1, 2, 7, 64, 100] if kernel == "rows" else [16, 32, 64, 128, 256]   # 100, 256 > T
    for block in blocks:
        for causal in (False, True):
            got = ops.flash_attention(q, k, v, causal=causal, block_size=block, kernel=kernel)
            check(q, k, v, got, causal=causal, what=f"{kernel} block {block} causal={causal}")
            if not causal:
                assert_close(got, dense, rtol=0, atol=2 * atol, what=f"flash vs dense, block {block}")


@pytest.mark.parametrize("kernel", ["rows", "tiled"])
def test_flash_over_a_cache_prefix_equals_flash_over_the_slice(kernel):
    """kv_length reads the first L rows of a longer K/V buffer (rows max_len apart per head): the
    packing and the kernels must skip the rest. L is ragged against the 16-row pack blocks and the
    tiles, and head widths 20 and 64 take the partial and the whole 16-column chunks."""
    rng = np.random.default_rng(14)
    for d, length, causal in [(20, 37, False), (64, 53, True), (64, 130, False), (20, 1, True)]:
        q, k, v = qkv(rng, 2, 4, 2, min(length, 9), 160, d, d)
        got = ops.flash_attention(q, k, v, causal=causal, kernel=kernel, block_size=32 if kernel == "tiled" else None,
                                  kv_length=length)
        ks, vs = k[..., :length, :], v[..., :length, :]
        check(q, ks, vs, got, causal=causal, what=f"{kernel} d={d} kv_length={length} causal={causal}")


def test_flash_scores_of_1e4_late_maxima_and_rising_maxima():
    rng = np.random.default_rng(13)
    q = f32(rng.integers(-10, 11, (1, 2, 9, 4)) * 25)
    k = f32(rng.integers(-10, 11, (1, 2, 150, 4)) * 10)       # integer scores up to ±1e4
    k[0, :, -1, :] = 100.0 * np.sign(q[0, :, 0, :])              # the best key for query 0 comes last
    v = f32(rng.standard_normal((1, 2, 150, 3)))
    rising = f32(np.arange(150)[None, None, :, None] * np.ones((1, 2, 1, 4)))  # the max rises every tile
    for keys in (k, rising):
        for block in (1, 7, 16, 64, None):
            got = ops.flash_attention(q, keys, v, scale=1.0, block_size=block)
            assert np.isfinite(got).all()
            check(q, keys, v, got, scale=1.0, what=f"±1e4 block {block}")


def test_flash_causal_with_fewer_queries_aligns_to_the_end():
    rng = np.random.default_rng(14)
    q, k, v = qkv(rng, 1, 2, 1, 5, 70, 16, 16)
    for block in (7, 16, 64):
        got = ops.flash_attention(q, k, v, causal=True, block_size=block)
        check(q, k, v, got, causal=True, what=f"causal Tq=5 < Tk=70, block {block}")
    one = ops.flash_attention(q[:, :, -1:], k, v, causal=True)           # decoding: the newest query sees all
    check(q[:, :, -1:], k, v, one, what="one query, causal")


def test_grouped_heads_equal_heads_with_repeated_kv():
    rng = np.random.default_rng(15)
    q, k, v = qkv(rng, 2, 6, 2, 19, 41, 16, 16)
    for groups_kv in ((k, v), (k[:, :1], v[:, :1])):                      # GQA, then MQA
        gk, gv = groups_kv
        rep = 6 // gk.shape[1]
        for block in (7, 64):
            grouped = ops.flash_attention(q, gk, gv, block_size=block)
            full = ops.flash_attention(q, np.repeat(gk, rep, axis=1), np.repeat(gv, rep, axis=1), block_size=block)
            np.testing.assert_array_equal(grouped, full)  # the same arithmetic, read through the group index


def test_flash_keeps_memory_linear_in_t(queue):
    rng = np.random.default_rng(16)
    t, d = 1024, 16
    q, k, v = (Tensor.from_host(queue, a) for a in qkv(rng, 1, 2, 2, t, t, d, d))
    with track_allocations() as seen:
        out = ops.flash_attention(q, k, v, causal=True)
    assert isinstance(out, Tensor)
    linear = 4 * 2 * t * (3 * d + 1)                         # float32 K, V, out and lse of 2 heads
    assert seen.bytes + seen.scratch_bytes <= 2 * linear     # packed K^T and V (padded), out, lse: O(T d)
    assert seen.bytes + seen.scratch_bytes < 2 * t * t * 4 / 8   # far below one score matrix per head
    with track_allocations() as dense:
        ops.attention(q, k, v, causal=True)
    assert dense.bytes >= 2 * 2 * t * t * 4                 # the dense op stores scores and weights


def test_flash_tensors_in_tensors_out_with_stats(queue):
    rng = np.random.default_rng(17)
    q, k, v = qkv(rng, 1, 2, 1, 6, 9, 8, 4)
    out, lse = ops.flash_attention(*(Tensor.from_host(queue, x) for x in (q, k, v)), return_stats=True)
    assert isinstance(out, Tensor) and isinstance(lse, Tensor) and lse.shape == (1, 2, 6)
    check(q, k, v, out.numpy())


def test_flash_two_dimensional_inputs_are_one_head():
    rng = np.random.default_rng(18)
    q, k, v = f32(rng.standard_normal((3, 4))), f32(rng.standard_normal((5, 4))), f32(rng.standard_normal((5, 2)))
    check(q, k, v, ops.flash_attention(q, k, v))


def test_flash_errors_are_clear():
    q, k, v = np.ones((1, 2, 3, 4)), np.ones((1, 2, 5, 4)), np.ones((1, 2, 5, 6))
    with pytest.raises(ValueError, match="must share the last axis"):
        ops.flash_attention(q, np.ones((1, 2, 5, 3)), v)
    with pytest.raises(ValueError, match="must divide"):
        ops.flash_attention(np.ones((1, 3, 3, 4)), k, v)
    with pytest.raises(ValueError, match=r"all-masked query rows.*\(1, 2\)"):
        mask = np.ones((1, 2, 3, 5), bool)
        mask[0, 1, 2] = False
        ops.flash_attention(q, k, v, mask=mask)
    with pytest.raises(ValueError, match="Tq=3 > Tk=2"):
        ops.flash_attention(q, k[:, :, :2], v[:, :, :2], causal=True)
    with pytest.raises(TypeError, match="boolean"):
        ops.flash_attention(q, k, v, mask=np.ones((3, 5)))
    with pytest.raises(ValueError, match="does not broadcast"):
        ops.flash_attention(q, k, v, mask=np.ones((3, 4), bool))
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="block_size must be a positive int"):
            ops.flash_attention(q, k, v, block_size=bad)
    with pytest.raises(ValueError, match="multiple of 16"):
        ops.flash_attention(q, k, v, block_size=7, kernel="tiled")
    with pytest.raises(ValueError, match="kernel must be one of"):
        ops.flash_attention(q, k, v, kernel="fast")
    with pytest.raises(ValueError, match="non-finite"):
        ops.flash_attention(np.full(q.shape, np.nan), k, v)
    with pytest.raises(TypeError, match="real numbers"):
        ops.flash_attention(q.astype(complex), k, v)
