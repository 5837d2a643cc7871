"""rms_norm, layer_norm, silu, swiglu, add, mul and embedding against float64 references.

Tolerances (netcl_lite.testing): norms carry the (D + 8)·u error of a D-term sum
through rsqrt (layer_norm also the mean's error on every centered value); silu
8u relative (exp within 4 ulp, an add, a divide), swiglu 9u; add and mul are
one correctly rounded operation (u); embedding copies exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import f32

from netcl_lite import autograd as ag
from netcl_lite import ops, reference
from netcl_lite.core.stream import BadInputError, NonFiniteError
from netcl_lite.core.tensor import Tensor
from netcl_lite.testing import (EPS32, SILU_RTOL, SWIGLU_RTOL, TINY, assert_close, layer_norm_atol,
                                rms_norm_atol)

DIMS = [1, 2, 3, 7, 16, 17, 33, 64, 100, 257]


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
    np.testing.assert_array_equal(out.numpy(), reference.embedding(table, ids))


def test_embedding_backward_sums_each_row_s_positions_in_order_on_random_shapes(queue):
    """The table's gradient against np.add.at in float32, which adds each position's row in order
    from zero as the kernel does (so the bits agree exactly, whatever the vocabulary slices and
    column vectors of the grid), and against float64 within the (k - 1) u bound of a k-term sum;
    ragged widths, vocabularies smaller than the grid's slices, and ids that repeat."""
    rng = np.random.default_rng(35)
    for i in range(40):
        vocab, dim = int(rng.integers(1, 300)), int(rng.choice(DIMS))
        n = int(rng.integers(1, 400))
        ids = rng.integers(0, min(vocab, int(rng.integers(1, 8)) if i % 4 == 0 else vocab), n)
        g = f32(rng.standard_normal((n, dim)))
        got = ops.embedding_backward(Tensor.from_host(queue, g), Tensor.from_host(queue, ids, dtype=np.int32),
                                     vocab).numpy()
        want32 = np.zeros((vocab, dim), np.float32)
        np.add.at(want32, ids, g)
        np.testing.assert_array_equal(got, want32)
        want64, size64 = np.zeros((vocab, dim)), np.zeros((vocab, dim))
        np.add.at(want64, ids, g.astype(np.float64))
        np.add.at(size64, ids, np.abs(g.astype(np.float64)))
        terms = np.bincount(ids, minlength=vocab)[:, None]
        assert (np.abs(got - want64) <= np.maximum(terms - 1, 0) * EPS32 * size64 + TINY).all()


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
    out = ops.embedding(table, Tensor.from_host(queue, np.array([1, 7]), dtype=np.int32))   # checked on the device
    with pytest.raises(BadInputError, match=r"^embedding: ids must lie in \[0, 5\).*7 at \(1,\)"):
        out.numpy()
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
        lambda: ops.div(np.ones(4), np.zeros(4)),
        lambda: ops.swiglu(np.full(4, 1e30), np.full(4, 1e30)),
        lambda: ops.rope(np.full((2, 4), 3e38)),
        lambda: ops.attention(np.full((2, 4), 1e20), np.full((3, 4), 1e20), np.ones((3, 2))),
        lambda: ops.flash_attention(np.full((1, 1, 2, 4), 1e20), np.full((1, 1, 3, 4), 1e20), np.ones((1, 1, 3, 2))),
    ],
    ids=["matmul", "mul", "add", "div", "swiglu", "rope", "attention", "flash_attention"],
)
def test_finite_inputs_whose_result_overflows_float32_are_refused(call):
    """Finite inputs never come back as inf or NaN: the device flags the result and the call raises."""
    with pytest.raises(NonFiniteError, match="from finite inputs.*beyond float32's range"):
        call()


def test_large_but_representable_inputs_still_run():
    q = np.full((2, 4), 1e3)
    out = ops.attention(q, q, np.ones((2, 3)), scale=1.0)   # scores 4e6: softmax is exact, no overflow
    assert np.isfinite(out).all()
    assert np.isfinite(ops.mul(np.full(3, 1e18), np.full(3, 1e18))).all()


def test_an_overflow_deep_in_a_device_chain_is_reported_with_its_op(queue):
    """Tensors in, Tensors out: nothing waits per op. The overflow two ops down the chain is
    found on the device and raised at the next read-back, naming the op that produced it."""
    big = Tensor.from_host(queue, np.full(4, 1e10, np.float32))
    squared = ops.mul(big, big)                     # 1e20: fine, and it stays on the device
    fourth = ops.mul(squared, squared)              # 1e40: inf, flagged on the device
    later = ops.add(fourth, big)                    # runs on; its own inputs are already bad
    with pytest.raises(NonFiniteError, match=r"^mul produced inf or NaN from finite inputs \(op 2 of 3"):
        later.numpy()
    np.testing.assert_array_equal(squared.numpy(), np.full(4, 1e20, np.float32))   # the flag was cleared


def test_a_backward_kernel_overflow_is_reported_too(queue):
    x = ag.tensor(np.full((2, 2), 1e20, np.float32))
    w = ag.tensor(np.array(1e-30, np.float32))
    with ag.Tape():
        y = ag.mul(x, w)                            # 1e-10: the forward is fine
    y.backward(grad=np.full((2, 2), 1e30, np.float32))     # dx = g · w = 1 is fine; dw = Σ g · x = 4e50 is not
    with pytest.raises(NonFiniteError, match="^mul produced inf or NaN from finite inputs"):
        x.grad.numpy()                              # the first read-back after the backward reports it
    np.testing.assert_allclose(x.grad.numpy(), 1.0, rtol=1e-6)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_an_input_that_is_already_non_finite_is_named(queue, bad):
    a = np.ones((3, 3))
    a[1, 2] = bad
    with pytest.raises(NonFiniteError, match=r"matmul: a has non-finite values \(first at indices \[\[1, 2\]\]\)"):
        ops.matmul(a, np.ones((3, 3)))
    t = Tensor.from_host(queue, a)
    out = ops.matmul(np.ones((3, 3)), t)            # on the device: raised at the read-back
    with pytest.raises(NonFiniteError, match="matmul: b has non-finite values"):
        out.numpy()


def test_cross_entropy_matches_reference_on_random_shapes_and_ignored_rows():
    """Mean of lse - z[target] over counted rows. Error bound: each exp is within ~2 ulp (the
    rounding of its argument (z - max)·log2 e adds ln 2·|x|·u of a term e^x, at most 0.37·u of
    the largest term), the row sum of V terms adds V·u relative, so log of the sum is off by
    about (V + 8)·u, and lse (magnitude up to max|z| + log V) by a few ulp of itself."""
    rng = np.random.default_rng(41)
    for i in range(40):
        rows, vocab = int(rng.integers(1, 70)), int(rng.choice([1, 2, 7, 8, 9, 63, 257, 2051]))
        z = f32(rng.standard_normal((rows, vocab)) * rng.choice([0.1, 3.0, 40.0]))
        t = rng.integers(0, vocab, rows)
        if i % 3 == 0 and rows > 1:
            t[rng.random(rows) < 0.3] = -100
            t[0] = 0
        got = float(ops.cross_entropy(z, t))
        expected = reference.cross_entropy(z, t)
        bound = (vocab + 8) * EPS32 + 4 * EPS32 * (np.abs(z).max() + np.log(vocab))
        assert abs(got - expected) <= bound, f"case {i}: rows={rows} V={vocab}: {got} vs {expected} (bound {bound:.2e})"


def test_rms_norm_backward_adds_a_gathered_gradient_in_its_row_pass(queue):
    """With ``acc`` (x's gradient gathered so far, e.g. the residual stream's), dx includes it:
    bitwise dx + acc, since both round the same two float32 values once."""
    rng = np.random.default_rng(44)
    x, w, g, acc = (Tensor.from_host(queue, f32(rng.standard_normal(s))) for s in ((5, 7, 37), (37,), (5, 7, 37),
                                                                                  (5, 7, 37)))
    dx, dw = ops.rms_norm_backward(g, x, w)
    dx_acc, dw_acc = ops.rms_norm_backward(g, x, w, acc=acc)
    np.testing.assert_array_equal(dx_acc.numpy(), ops.add(dx, acc).numpy())
    np.testing.assert_array_equal(dw_acc.numpy(), dw.numpy())
    with pytest.raises(ValueError, match=r"acc must have x's shape \(5, 7, 37\)"):
        ops.rms_norm_backward(g, x, w, acc=Tensor.from_host(queue, f32(np.ones((5, 37)))))


def test_norm_parameter_gradients_over_many_rows(queue):
    """The weight (and bias) gradients are sums over every row, taken in chunks of
    ``reduce.CHUNK`` rows on separate work-items and then joined in order. Checked against the
    float64 sums on row counts below, at and past a chunk and across several (ragged ends),
    and widths that are not a multiple of 8. Bound: each sum chains at most CHUNK + parts
    float32 additions (γ of that many units of Σ|term|), and each term carries the row's
    1/rms (from a width-n sum of squares, (n + 8)·u relative) and two products."""
    from netcl_lite.ops.reduce import CHUNK
    rng = np.random.default_rng(45)
    for rows, n in ((1, 7), (255, 37), (256, 8), (257, 1), (700, 33), (2100, 128)):
        x, g = rng.standard_normal((rows, n)), rng.standard_normal((rows, n))
        w, b = rng.standard_normal(n), rng.standard_normal(n)
        tx, tg, tw = (Tensor.from_host(queue, f32(v)) for v in (x, g, w))
        x64, g64 = f32(x).astype(np.float64), f32(g).astype(np.float64)
        chain = CHUNK + -(-rows // CHUNK) + n + 16

        r = 1.0 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6)
        terms = g64 * x64 * r
        _, dw = ops.rms_norm_backward(tg, tx, tw, eps=1e-6)
        assert_close(dw.numpy(), terms.sum(0), rtol=0, atol=chain * EPS32 * np.abs(terms).sum(0),
                     what=f"rms_norm dweight rows={rows} n={n}")

        centered = x64 - x64.mean(-1, keepdims=True)
        xhat = centered / np.sqrt((centered ** 2).mean(-1, keepdims=True) + 1e-5)
        _, dw, db = ops.layer_norm_backward(tg, tx, tw, eps=1e-5)
        # layer_norm's xhat also carries the mean's error on every centered value (testing.layer_norm_atol)
        scale = np.abs(x64).max(-1, keepdims=True) / np.sqrt((centered ** 2).mean(-1, keepdims=True) + 1e-5)
        assert_close(dw.numpy(), (g64 * xhat).sum(0), rtol=0,
                     atol=chain * EPS32 * (np.abs(g64) * (np.abs(xhat) + scale)).sum(0),
                     what=f"layer_norm dweight rows={rows} n={n}")
        assert_close(db.numpy(), g64.sum(0), rtol=0, atol=chain * EPS32 * np.abs(g64).sum(0),
                     what=f"layer_norm dbias rows={rows} n={n}")
