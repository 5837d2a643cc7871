"""rope against its float64 reference, the relative-position identity, offsets, errors.

Tolerance: ``rope_atol`` — cos and sin are float64 values rounded to float32
(u each), then two products and a sum: 5u·(|x_a| + |x_b|) per rotated pair.
"""

from __future__ import annotations

import numpy as np
import pytest

from netcl_lite import ops, reference
from netcl_lite.core.tensor import Tensor
from netcl_lite.testing import EPS32, assert_close, rope_atol

PAIRINGS = ("interleaved", "half")


def test_rope_matches_reference_on_random_shapes():
    rng = np.random.default_rng(21)
    for i in range(60):
        lead = tuple(int(n) for n in rng.integers(1, 4, int(rng.integers(0, 3))))
        t_len = int(rng.choice([1, 2, 3, 7, 17, 33, 64, 100]))
        d = 2 * int(rng.choice([1, 2, 3, 5, 8, 16, 32, 33]))
        offset = int(rng.choice([0, 1, 5, 1000, 8191]))
        base = float(rng.choice([10000.0, 500000.0, 2.0]))
        pairing = PAIRINGS[i % 2]
        x = np.asarray(rng.standard_normal(lead + (t_len, d)), np.float32)
        got = ops.rope(x, offset=offset, base=base, pairing=pairing)
        expected = reference.rope(x, offset=offset, base=base, pairing=pairing)
        assert_close(got, expected, rtol=0, atol=rope_atol(x, pairing),
                     what=f"rope {x.shape} offset={offset} base={base} {pairing}")


@pytest.mark.parametrize("pairing", PAIRINGS)
def test_rope_scores_depend_only_on_the_relative_offset(pairing):
    rng = np.random.default_rng(22)
    d = 64
    q, k = (np.asarray(rng.standard_normal((1, d)), np.float32) for _ in range(2))

    def score(m, n):
        rq = ops.rope(q, offset=m, pairing=pairing).astype(np.float64)
        rk = ops.rope(k, offset=n, pairing=pairing).astype(np.float64)
        return float(rq[0] @ rk[0])

    # A dot product of d terms of size |q_i||k_i|: float32 rounding of each rotated entry
    # (rope_atol) moves it by at most about 10u·|q|·|k|.
    tol = 10 * EPS32 * float(np.abs(q).sum() * np.abs(k).max() + np.abs(k).sum() * np.abs(q).max())
    for delta in (0, 1, 3, 17, 250):
        scores = [score(m, m + delta) for m in (0, 5, 40, 777, 4000)]
        assert max(scores) - min(scores) <= 2 * tol, (delta, scores)
        expected = float(reference.rope(q, offset=0, pairing=pairing)[0] @ reference.rope(k, offset=delta, pairing=pairing)[0])
        assert abs(scores[0] - expected) <= tol
    assert abs(score(0, 1) - score(0, 7)) > 100 * tol        # a different offset gives a different score


@pytest.mark.parametrize("pairing", PAIRINGS)
def test_rope_with_offset_equals_the_full_sequence(pairing):
    rng = np.random.default_rng(23)
    x = np.asarray(rng.standard_normal((2, 3, 20, 16)), np.float32)
    full = ops.rope(x, pairing=pairing)
    for start in (1, 7, 19):
        tail = ops.rope(x[..., start:, :], offset=start, pairing=pairing)
        np.testing.assert_array_equal(tail, full[..., start:, :])     # the same angles, bit for bit


def test_rope_pairings_differ_and_position_zero_is_identity():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(ops.rope(x[:1])[0], x[0])           # row 0 sits at angle 0
    assert not np.allclose(ops.rope(x, pairing="half"), ops.rope(x))


def test_rope_tensor_in_tensor_out(queue):
    x = np.ones((3, 4), np.float32)
    out = ops.rope(Tensor.from_host(queue, x), offset=2)
    assert isinstance(out, Tensor) and out.shape == (3, 4)
    assert_close(out.numpy(), reference.rope(x, offset=2), rtol=0, atol=rope_atol(x, "interleaved"))


def test_rope_errors_are_clear():
    with pytest.raises(ValueError, match="even feature width d.*d=5"):
        ops.rope(np.ones((3, 5)))
    with pytest.raises(ValueError, match="at least 2 axes"):
        ops.rope(np.ones(4))
    with pytest.raises(ValueError, match="pairing must be one of"):
        ops.rope(np.ones((3, 4)), pairing="neox")
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="offset must be a non-negative int"):
            ops.rope(np.ones((3, 4)), offset=bad)
    for bad in (0.0, -2.0, float("inf")):
        with pytest.raises(ValueError, match="base must be a positive finite"):
            ops.rope(np.ones((3, 4)), base=bad)
    with pytest.raises(ValueError, match="non-finite"):
        ops.rope(np.full((3, 4), np.nan))


def test_rope_heads_is_the_split_then_rope_and_its_backward_the_transpose():
    """rope_heads (B, T, H·d) → (B, H, T, d) in one pass: against the float64 split-then-rotate,
    bitwise against ops.rope of ops' own split, and its backward against rotating by −θ and
    merging back, on ragged sizes, both pairings and offsets."""
    rng = np.random.default_rng(24)
    for i in range(24):
        b, t_len, heads = int(rng.integers(1, 4)), int(rng.choice([1, 3, 17, 40])), int(rng.choice([1, 2, 3, 4]))
        d = 2 * int(rng.choice([1, 3, 8, 16, 33]))
        offset, pairing = int(rng.choice([0, 1, 700])), PAIRINGS[i % 2]
        x = np.asarray(rng.standard_normal((b, t_len, heads * d)), np.float32)
        got = ops.rope_heads(x, heads, offset=offset, pairing=pairing)
        split = x.reshape(b, t_len, heads, d).transpose(0, 2, 1, 3)
        assert got.shape == (b, heads, t_len, d)
        assert_close(got, reference.rope_heads(x, heads, offset=offset, pairing=pairing), rtol=0,
                     atol=rope_atol(split, pairing), what=f"rope_heads {x.shape} heads={heads} {pairing}")
        np.testing.assert_array_equal(got, ops.rope(np.ascontiguousarray(split), offset=offset, pairing=pairing))
        g = np.asarray(rng.standard_normal((b, heads, t_len, d)), np.float32)
        back = ops.rope_heads_backward(g, offset=offset, pairing=pairing)
        assert back.shape == (b, t_len, heads * d)
        merged = ops.rope_backward(g, offset=offset, pairing=pairing).transpose(0, 2, 1, 3).reshape(back.shape)
        np.testing.assert_array_equal(back, merged)
        # the backward is the forward's transpose: <rope_heads(x), g> = <x, rope_heads_backward(g)>, the
        # left side exact (float64), the right off by rope_atol per rotated pair of back's
        lhs = float(np.vdot(reference.rope_heads(x, heads, offset=offset, pairing=pairing), g))
        rhs = float(np.vdot(x.astype(np.float64), back))
        atol = rope_atol(g, pairing).transpose(0, 2, 1, 3).reshape(x.shape)          # in x's layout
        assert abs(lhs - rhs) <= float(np.vdot(np.abs(x), atol)) + 1e-12, (lhs, rhs)


def test_rope_heads_errors_are_clear():
    with pytest.raises(ValueError, match=r"x must be \(B, T, heads·d\)"):
        ops.rope_heads(np.ones((3, 4)), 2)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="heads must be a positive int"):
            ops.rope_heads(np.ones((1, 3, 8)), bad)
    with pytest.raises(ValueError, match="divisible by heads=3"):
        ops.rope_heads(np.ones((1, 3, 8)), 3)
    with pytest.raises(ValueError, match="even feature width d.*d=3"):
        ops.rope_heads(np.ones((1, 3, 6)), 2)
    with pytest.raises(ValueError, match="pairing must be one of"):
        ops.rope_heads(np.ones((1, 3, 8)), 2, pairing="neox")
    with pytest.raises(ValueError, match=r"g must be \(B, heads, T, d\)"):
        ops.rope_heads_backward(np.ones((1, 3, 8)))
    with pytest.raises(ValueError, match="non-finite"):
        ops.rope_heads(np.full((1, 3, 8), np.inf), 2)
