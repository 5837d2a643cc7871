"""rms_norm, layer_norm, silu, swiglu, add, mul and embedding against float64 references.

Tolerances (netcl_lite.testing): norms carry the (D + 8)·u error of a D-term sum
through rsqrt (layer_norm also the mean's error on every centered value); silu
8u relative (exp within 4 ulp, an add, a divide), swiglu 9u; add and mul are
one correctly rounded operation (u); embedding copies exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from netcl_lite import ops, reference
from netcl_lite.core.tensor import Tensor
from netcl_lite.testing import (EPS32, SILU_RTOL, SWIGLU_RTOL, TINY, assert_close, layer_norm_atol,
                                rms_norm_atol)

DIMS = [1, 2, 3, 7, 16, 17, 33, 64, 100, 257]


def f32(x):
    return np.asarray(x, np.float32)


def random_shape(rng, last=None):
    lead = tuple(int(n) for n in rng.integers(1, 6, int(rng.integers(0, 3))))
    return lead + (int(rng.choice(DIMS)) if last is None else last,)


def test_norms_match_reference_on_random_shapes():
    rng = np.random.default_rng(31)
    for i in range(60):
        shape = random_shape(rng)
        shift = float(rng.choice([0.0, 3.0, 1000.0]))         # |mean| >> std stresses layer_norm
        x = f32(rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 50.0]) + shift)
        w, b = f32(rng.standard_normal(shape[-1:])), f32(rng.standard_normal(shape[-1:]))
        eps = float(rng.choice([1e-6, 1e-5, 0.1]))
        assert_close(ops.rms_norm(x, w, eps=eps), reference.rms_norm(x, w, eps=eps), rtol=0,
                     atol=rms_norm_atol(x, w, eps), what=f"rms_norm {shape} eps={eps}")
        assert_close(ops.layer_norm(x, w, b, eps=eps), reference.layer_norm(x, w, b, eps=eps), rtol=0,
                     atol=layer_norm_atol(x, w, b, eps), what=f"layer_norm {shape} shift={shift}")


def test_norms_of_zero_rows_are_finite():
    x = np.zeros((3, 8), np.float32)
    assert np.all(ops.rms_norm(x, np.ones(8)) == 0)
    np.testing.assert_array_equal(ops.layer_norm(x, np.ones(8), np.arange(8.0)), np.tile(np.arange(8.0), (3, 1)))


def test_silu_and_swiglu_match_reference_on_random_shapes():
    rng = np.random.default_rng(32)
    for i in range(60):
        shape = random_shape(rng)
        x = f32(rng.standard_normal(shape) * rng.choice([0.1, 3.0, 30.0]))
        u = f32(rng.standard_normal(shape))
        assert_close(ops.silu(x), reference.silu(x), rtol=SILU_RTOL, atol=TINY, what=f"silu {shape}")
        assert_close(ops.swiglu(x, u), reference.swiglu(x, u), rtol=SWIGLU_RTOL, atol=TINY, what=f"swiglu {shape}")


def test_silu_extremes_stay_finite():
    x = f32([-1e4, -100.0, -88.0, -20.0, 0.0, 20.0, 100.0, 1e4, 3e38])
    got = ops.silu(x)
    assert np.isfinite(got).all()
    assert_close(got, reference.silu(x), rtol=SILU_RTOL, atol=TINY, what="silu extremes")


def test_add_and_mul_with_suffix_broadcast():
    rng = np.random.default_rng(33)
    for i in range(60):
        shape = random_shape(rng)
        a = f32(rng.standard_normal(shape) * 10)
        b_shape = shape[int(rng.integers(0, len(shape) + 1)):] if i % 2 else shape
        b = f32(rng.standard_normal(b_shape) * 10)
        assert_close(ops.add(a, b), reference.add(a, b), rtol=EPS32, atol=0, what=f"add {shape} + {b_shape}")
        assert_close(ops.mul(a, b), reference.mul(a, b), rtol=EPS32, atol=1e-45, what=f"mul {shape} * {b_shape}")


def test_embedding_matches_reference_on_random_shapes(queue):
    rng = np.random.default_rng(34)
    for i in range(60):
        vocab, dim = int(rng.integers(1, 300)), int(rng.choice(DIMS))
        table = f32(rng.standard_normal((vocab, dim)))
        ids = rng.integers(0, vocab, random_shape(rng, last=int(rng.integers(1, 20))))
        ids = ids.astype([np.int64, np.int32, np.uint16][i % 3])
        np.testing.assert_array_equal(ops.embedding(table, ids), reference.embedding(table, ids))
    out = ops.embedding(Tensor.from_host(queue, table), Tensor.from_host(queue, ids, dtype=np.int32))
    assert isinstance(out, Tensor)
    np.testing.assert_array_equal(out.to_host(), reference.embedding(table, ids))


def test_tensors_in_tensors_out(queue):
    x = f32(np.arange(12).reshape(3, 4))
    t = Tensor.from_host(queue, x)
    for out in (ops.rms_norm(t, np.ones(4)), ops.layer_norm(t, np.ones(4), np.zeros(4)), ops.silu(t),
                ops.swiglu(t, t), ops.add(t, t), ops.mul(t, np.ones(4))):
        assert isinstance(out, Tensor) and out.shape == (3, 4)


def test_pointwise_errors_are_clear(queue):
    with pytest.raises(ValueError, match=r"weight must have shape \(4,\)"):
        ops.rms_norm(np.ones((2, 4)), np.ones(3))
    with pytest.raises(ValueError, match=r"bias must have shape \(4,\)"):
        ops.layer_norm(np.ones((2, 4)), np.ones(4), np.ones((1, 4)))
    for bad in (0.0, -1e-5, float("nan")):
        with pytest.raises(ValueError, match="eps must be a positive finite"):
            ops.rms_norm(np.ones((2, 4)), np.ones(4), eps=bad)
    with pytest.raises(ValueError, match="non-empty last axis"):
        ops.layer_norm(np.ones((2, 0)), np.ones(0), np.ones(0))
    with pytest.raises(ValueError, match="gate .* and up .* must have the same shape"):
        ops.swiglu(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="suffix"):
        ops.add(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="suffix"):
        ops.mul(np.ones(3), np.ones((2, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        ops.silu(np.array([np.inf]))
    with pytest.raises(TypeError, match="real numbers"):
        ops.add(np.array(["a"]), np.array(["b"]))
    table = np.ones((5, 3))
    with pytest.raises(ValueError, match=r"\[0, 5\).*5 at \(1,\).*-1 at \(2,\)"):
        ops.embedding(table, [0, 5, -1])
    with pytest.raises(ValueError, match=r"\[0, 5\).*7 at \(1,\)"):
        ops.embedding(table, Tensor.from_host(queue, np.array([1, 7]), dtype=np.int32))
    with pytest.raises(TypeError, match="ids must be integers"):
        ops.embedding(table, [0.0, 1.0])
    with pytest.raises(TypeError, match="int32 Tensor"):
        ops.embedding(table, Tensor.from_host(queue, np.array([1.0])))
    with pytest.raises(ValueError, match=r"table must be \(V, D\)"):
        ops.embedding(np.ones(5), [0])


@pytest.mark.parametrize(
    "call",
    [
        lambda: ops.matmul(np.full((2, 3), 1e20), np.full((3, 2), 1e20)),
        lambda: ops.mul(np.full(4, 1e20), np.full(4, 1e20)),
        lambda: ops.add(np.full(4, 3e38), np.full(4, 3e38)),
        lambda: ops.swiglu(np.full(4, 1e30), np.full(4, 1e30)),
        lambda: ops.rope(np.full((2, 4), 3e38)),
        lambda: ops.attention(np.full((2, 4), 1e20), np.full((3, 4), 1e20), np.ones((3, 2))),
        lambda: ops.flash_attention(np.full((1, 1, 2, 4), 1e20), np.full((1, 1, 3, 4), 1e20), np.ones((1, 1, 3, 2))),
    ],
    ids=["matmul", "mul", "add", "swiglu", "rope", "attention", "flash_attention"],
)
def test_finite_inputs_whose_result_overflows_float32_are_refused(call):
    """Finite inputs never come back as inf or NaN: a result beyond float32 is refused up front."""
    with pytest.raises(ValueError, match="beyond float32's range"):
        call()


def test_large_but_representable_inputs_still_run():
    q = np.full((2, 4), 1e3)
    out = ops.attention(q, q, np.ones((2, 3)), scale=1.0)   # scores 4e6: softmax is exact, no overflow
    assert np.isfinite(out).all()
    assert np.isfinite(ops.mul(np.full(3, 1e18), np.full(3, 1e18))).all()


def test_tensors_uploaded_from_the_host_get_the_same_overflow_check(queue):
    """Tensor.from_host records max |x| while the values are still on the host, so the
    check covers what callers upload, without a device read-back per op."""
    big = Tensor.from_host(queue, np.full((1, 1, 3, 4), 1e20, np.float32))
    assert big.abs_max == np.float32(1e20) and big.reshape(3, 4).abs_max == big.abs_max
    with pytest.raises(ValueError, match="beyond float32's range"):
        ops.flash_attention(big, big, big)
    with pytest.raises(ValueError, match="beyond float32's range"):
        ops.matmul(big.reshape(3, 4), big.reshape(4, 3))
    with pytest.raises(ValueError, match="beyond float32's range"):
        ops.mul(big, big)


def test_outputs_carry_a_sound_bound_so_chains_stay_checked(queue):
    """Each op's output records a bound on its magnitude derived from its inputs' bounds;
    the bound holds, and an overflow two ops down a device-only chain is still refused."""
    rng = np.random.default_rng(11)
    x = Tensor.from_host(queue, rng.standard_normal((2, 3, 5, 8)).astype(np.float32) * 7)
    w = Tensor.from_host(queue, rng.standard_normal(8).astype(np.float32))
    b = Tensor.from_host(queue, rng.standard_normal(8).astype(np.float32))
    table = Tensor.from_host(queue, rng.standard_normal((11, 8)).astype(np.float32))
    outs = {
        "matmul": ops.matmul(x, x, transpose_b=True),
        "add": ops.add(x, w),
        "mul": ops.mul(x, w),
        "silu": ops.silu(x),
        "swiglu": ops.swiglu(x, x),
        "rope": ops.rope(x),
        "rms_norm": ops.rms_norm(x, w),
        "layer_norm": ops.layer_norm(x, w, b),
        "softmax": ops.softmax(x),
        "attention": ops.attention(x, x, x),
        "flash_attention": ops.flash_attention(x, x, x),
        "embedding": ops.embedding(table, np.array([[1, 10], [3, 3]])),
    }
    for name, out in outs.items():
        assert out.abs_max is not None, name
        assert np.abs(out.to_host()).max() <= out.abs_max * (1 + 1e-6), name

    big = Tensor.from_host(queue, np.full(4, 1e10, np.float32))
    squared = ops.mul(big, big)                     # 1e20: fine, and it stays on the device
    with pytest.raises(ValueError, match="beyond float32's range"):
        ops.mul(squared, squared)                   # 1e40 would be inf
