"""Every backward rule against central differences of a float64 reference (``kernel_cases.gradcheck``)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import gradcheck, rand

from netcl_lite import autograd as ag
from netcl_lite import ops
from netcl_lite import reference as ref
from netcl_lite.core.stream import BadInputError, NonFiniteError, stream_of
from netcl_lite.core.tensor import Tensor
from netcl_lite.ops.rotary_attention import rotary_attention_reference
from netcl_lite.testing import EPS32, assert_close, matmul_atol


def test_the_check_catches_a_rule_that_is_slightly_wrong():
    x = np.linspace(-2, 2, 12, dtype=np.float32)
    with pytest.raises(AssertionError, match="differ"):
        gradcheck(ag.silu, lambda x: ref.silu(x) * 1.001, x, n=1, what="silu scaled by 1.001")


# -- one rule each --------------------------------------------------------------------

@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_gradients_with_transposes(ta, tb):
    rng = np.random.default_rng(1)
    a = rand(rng, *((5, 3) if ta else (3, 5)))
    b = rand(rng, *((4, 5) if tb else (5, 4)))
    f = lambda a, b: ag.matmul(a, b, transpose_a=ta, transpose_b=tb)
    f64 = lambda a, b: ref.matmul(a, b, transpose_a=ta, transpose_b=tb)
    gradcheck(f, f64, a, b, n=5, what=f"matmul ta={ta} tb={tb}")


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("batch_a,batch_b", [((2,), ()), ((), (2,)), ((1,), (2,))])
def test_matmul_gradients_with_transposes_and_batch_broadcast_at_once(batch_a, batch_b, ta, tb):
    """op(a) is (3, 5) and op(b) is (5, 4); either side is stored transposed and broadcast over a batch."""
    rng = np.random.default_rng(22)
    a = rand(rng, *batch_a, *((5, 3) if ta else (3, 5)))
    b = rand(rng, *batch_b, *((4, 5) if tb else (5, 4)))
    f = lambda a, b: ag.matmul(a, b, transpose_a=ta, transpose_b=tb)
    f64 = lambda a, b: ref.matmul(a, b, transpose_a=ta, transpose_b=tb)
    gradcheck(f, f64, a, b, n=10, what=f"matmul {a.shape}{'ᵀ' * ta} @ {b.shape}{'ᵀ' * tb}")


@pytest.mark.parametrize("sa,sb", [((2, 3, 5), (2, 5, 4)), ((2, 3, 5), (5, 4)), ((3, 5), (2, 5, 4))])
def test_matmul_gradients_batched_and_broadcast(sa, sb):
    rng = np.random.default_rng(2)
    gradcheck(ag.matmul, ref.matmul, rand(rng, *sa), rand(rng, *sb), n=10, what=f"matmul {sa}@{sb}")


@pytest.mark.parametrize("sb", [(2, 3, 4), (4,), (3, 4), (), (1,)])
def test_elementwise_gradients_with_suffix_and_scalar_broadcast(sb):
    rng = np.random.default_rng(3)
    a, b = rand(rng, 2, 3, 4), rand(rng, *sb)
    gradcheck(ag.add, ref.add, a, b, n=24, what=f"add {sb}")
    gradcheck(ag.sub, ref.sub, a, b, n=24, what=f"sub {sb}")
    gradcheck(ag.mul, ref.mul, a, b, n=24, what=f"mul {sb}")
    gradcheck(ag.div, ref.div, a, b + np.float32(3) * np.sign(b), n=24, what=f"div {sb}")   # |b| > 3: away from 0


def test_node_arithmetic_builds_the_same_graph_as_the_functions():
    rng = np.random.default_rng(23)
    a, b, w = rand(rng, 3, 4), rand(rng, 4), rand(rng, 4, 2)
    f = lambda a, b, w: (((-a + b) * 2.0 - a / (b * b + 1.0)) @ w).T.reshape(6).mean()
    f64 = lambda a, b, w: np.mean((((-a + b) * 2.0 - a / (b * b + 1.0)) @ w).T.reshape(6))
    gradcheck(f, f64, a, b, w, n=8, what="node operators")
    g = lambda a: (1.0 - a).sum() + (3.0 / (a * a + 1.0)).sum(axis=-1).sum() + a.exp().mean()
    g64 = lambda a: np.sum(1.0 - a) + np.sum(3.0 / (a * a + 1.0)) + np.mean(np.exp(a))
    gradcheck(g, g64, a, n=12, what="reflected operators, sum(axis=-1), exp")


@pytest.mark.parametrize("causal,masked", [(False, False), (True, False), (False, True)])
def test_softmax_gradient_with_masks(causal, masked):
    rng = np.random.default_rng(4)
    x = rand(rng, 2, 4, 6) * 2
    mask = (rng.random((4, 6)) < 0.7) | np.eye(4, 6, dtype=bool) if masked else None
    gradcheck(lambda x: ag.softmax(x, mask=mask, causal=causal),
              lambda x: ref.softmax(x, mask=mask, causal=causal), x, n=6, what="softmax")


ATTN_CASES = [  # (B, H, G, Tq, Tk, d, dv, causal, masked)
    (2, 2, 2, 4, 4, 4, 4, False, False),   # MHA
    (1, 4, 2, 5, 5, 4, 3, True, False),    # GQA, causal, dv != d
    (2, 3, 1, 3, 6, 4, 4, True, False),    # MQA, Tq < Tk: queries aligned to the end
    (1, 2, 2, 4, 5, 2, 2, False, True),    # boolean mask
]


TILED_CASES = [  # head widths that are multiples of 8 take the tiled flash backward
    (2, 4, 2, 9, 9, 8, 8, True, False),    # GQA, ragged T across the 8-wide panels
    (1, 3, 1, 5, 13, 8, 16, True, False),  # MQA, Tq < Tk, dv != d
    (1, 2, 2, 6, 10, 8, 8, False, True),   # boolean mask
]


def _attention_inputs(case, seed):
    b, h, g, tq, tk, d, dv, causal, masked = case
    rng = np.random.default_rng(seed)
    q, k, v = rand(rng, b, h, tq, d), rand(rng, b, g, tk, d), rand(rng, b, g, tk, dv)
    mask = None
    if masked:
        mask = rng.random((b, h, tq, tk)) < 0.6
        mask[..., 0] = True
    return q, k, v, mask, causal


@pytest.mark.parametrize("fn", ["attention", "flash_attention"])
@pytest.mark.parametrize("case", ATTN_CASES)
def test_attention_gradients_dense_and_flash(fn, case):
    q, k, v, mask, causal = _attention_inputs(case, 5)
    f = lambda q, k, v: getattr(ag, fn)(q, k, v, mask=mask, causal=causal)
    f64 = lambda q, k, v: ref.attention(q, k, v, mask=mask, causal=causal)
    gradcheck(f, f64, q, k, v, n=case[4] * case[5], what=f"{fn} {case}")


@pytest.mark.parametrize("kernel", ["tiled", "rows"])
@pytest.mark.parametrize("case", TILED_CASES)
def test_flash_attention_gradients_tiled_and_row_kernels(kernel, case):
    q, k, v, mask, causal = _attention_inputs(case, 15)
    block = 16 if kernel == "tiled" else 4
    f = lambda q, k, v: ag.flash_attention(q, k, v, mask=mask, causal=causal, kernel=kernel, block_size=block)
    f64 = lambda q, k, v: ref.attention(q, k, v, mask=mask, causal=causal)
    gradcheck(f, f64, q, k, v, n=case[4] * case[5], what=f"flash {kernel} {case}")


ROTARY_CASES = [   # (B, T, H, G, d, dv, causal, rope, pairing): ragged T, GQA and MQA, both pairings, no rotation
    (2, 13, 4, 2, 8, 6, True, True, "half"),
    (1, 70, 2, 1, 6, 10, True, True, "interleaved"),
    (3, 5, 3, 3, 4, 4, False, True, "half"),
    (1, 9, 2, 2, 5, 7, True, False, "half"),
    (1, 1, 1, 1, 2, 2, True, True, "interleaved"),
]


@pytest.mark.parametrize("case", ROTARY_CASES)
def test_rotary_attention_gradients(case):
    b, t, h, g, d, dv, causal, rope, pairing = case
    rng = np.random.default_rng(sum(case[:6]))
    q, k, v = rand(rng, b, t, h * d), rand(rng, b, t, g * d), rand(rng, b, t, g * dv)
    kw = dict(causal=causal, rope=rope, pairing=pairing)
    gradcheck(lambda q, k, v: ag.rotary_attention(q, k, v, h, g, **kw),
              lambda q, k, v: rotary_attention_reference(q, k, v, h, g, **kw),
              q, k, v, n=t * max(d, dv), what=f"rotary_attention {case}")


@pytest.mark.parametrize("case", ROTARY_CASES)
def test_rotary_attention_projected_gradients(case):
    """The node that owns the q, k, v projections: x's gradient as one product with [Wq | Wk | Wv],
    the weights' from their blocks of [dq | dk | dv]; against float64 differences of the reference
    on x @ W. Inner sums: T·max(d, dv) in the attention, n in the projections."""
    b, t, h, g, d, dv, causal, rope, pairing = case
    rng = np.random.default_rng(sum(case[:6]) + 1)
    n = 11                                          # ragged against every vector width
    x, wq, wk, wv = rand(rng, b, t, n), rand(rng, n, h * d), rand(rng, n, g * d), rand(rng, n, g * dv)
    kw = dict(causal=causal, rope=rope, pairing=pairing)
    gradcheck(lambda x, wq, wk, wv: ag.rotary_attention_projected(x, wq, wk, wv, h, g, **kw),
              lambda x, wq, wk, wv: rotary_attention_reference(x @ wq, x @ wk, x @ wv, h, g, **kw),
              x, wq, wk, wv, n=t * max(d, dv) + n, what=f"rotary_attention_projected {case}")


@pytest.mark.parametrize("d", [64, 128])
def test_tiled_flash_backward_at_the_head_widths_models_use(d):
    """The chapter's configuration is d = 64; d = 128 is the other common width. Causal GQA."""
    rng = np.random.default_rng(20 + d)
    q, k, v = rand(rng, 1, 2, 9, d), rand(rng, 1, 1, 11, d), rand(rng, 1, 1, 11, d)
    f = lambda q, k, v: ag.flash_attention(q, k, v, causal=True, kernel="tiled")
    gradcheck(f, lambda q, k, v: ref.attention(q, k, v, causal=True), q, k, v, n=11 * d, what=f"flash tiled d={d}")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("fn", ["attention", "flash_attention"])
def test_attention_gradients_with_a_broadcast_padding_mask_alone_and_with_causal(fn, causal):
    """A key-padding mask (B, 1, 1, Tk), broadcast over heads and queries (uploaded as B x Tk
    bytes), alone and together with the causal rule."""
    rng = np.random.default_rng(21)
    q, k, v = rand(rng, 2, 2, 6, 8), rand(rng, 2, 2, 6, 8), rand(rng, 2, 2, 6, 8)
    padding = np.ones((2, 1, 1, 6), bool)
    padding[0, ..., 4:] = False                       # batch 0: two padded keys at the end
    padding[1, ..., 1:3] = False                      # batch 1: two in the middle (key 0 stays visible)
    f = lambda q, k, v: getattr(ag, fn)(q, k, v, mask=padding, causal=causal)
    f64 = lambda q, k, v: ref.attention(q, k, v, mask=padding, causal=causal)
    gradcheck(f, f64, q, k, v, n=48, what=f"{fn} padding (B,1,1,Tk) causal={causal}")


def test_tiled_flash_backward_takes_any_head_width():
    """Head widths off the vector width are padded with zeros inside the packed panels."""
    rng = np.random.default_rng(25)
    q, k, v = rand(rng, 1, 2, 5, 4), rand(rng, 1, 2, 7, 4), rand(rng, 1, 2, 7, 3)
    f = lambda q, k, v: ag.flash_attention(q, k, v, causal=True, kernel="tiled", block_size=32)
    gradcheck(f, lambda q, k, v: ref.attention(q, k, v, causal=True), q, k, v, n=28, what="flash tiled d=4 dv=3")
    with pytest.raises(ValueError, match="kernel must be one of"):
        ag.flash_attention(ag.tensor(q), k, v, kernel="fast")


def test_flash_attention_gradient_with_explicit_scale_and_small_blocks():
    rng = np.random.default_rng(6)
    q, k, v = rand(rng, 1, 2, 7, 4), rand(rng, 1, 1, 9, 4), rand(rng, 1, 1, 9, 4)
    f = lambda q, k, v: ag.flash_attention(q, k, v, causal=True, scale=0.3, block_size=3)
    gradcheck(f, lambda q, k, v: ref.attention(q, k, v, causal=True, scale=0.3), q, k, v, n=36, what="flash scale")


@pytest.mark.parametrize("pairing,offset", [("interleaved", 0), ("interleaved", 5), ("half", 3)])
def test_rope_gradient_is_the_inverse_rotation(pairing, offset):
    rng = np.random.default_rng(7)
    x = rand(rng, 2, 3, 5, 6)
    gradcheck(lambda x: ag.rope(x, offset=offset, base=100.0, pairing=pairing),
              lambda x: ref.rope(x, offset=offset, base=100.0, pairing=pairing), x, n=2, what=f"rope {pairing}")


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_rope_heads_gradient_is_the_inverse_rotation_merged_back(pairing):
    rng = np.random.default_rng(16)
    x = rand(rng, 2, 5, 3 * 6)                                   # B=2, T=5, three heads of d=6
    gradcheck(lambda x: ag.rope_heads(x, 3, offset=4, base=100.0, pairing=pairing),
              lambda x: ref.rope_heads(x, 3, offset=4, base=100.0, pairing=pairing), x, n=2,
              what=f"rope_heads {pairing}")


def test_rms_norm_and_layer_norm_gradients():
    rng = np.random.default_rng(8)
    x, w, b = rand(rng, 2, 3, 8), rand(rng, 8), rand(rng, 8)
    gradcheck(lambda x, w: ag.rms_norm(x, w, eps=1e-6), lambda x, w: ref.rms_norm(x, w, eps=1e-6), x, w, n=8, what="rms_norm")
    gradcheck(lambda x, w, b: ag.layer_norm(x, w, b, eps=1e-5),
              lambda x, w, b: ref.layer_norm(x, w, b, eps=1e-5), x, w, b, n=8, what="layer_norm")


def test_silu_and_swiglu_gradients_including_large_inputs():
    rng = np.random.default_rng(9)
    x = rand(rng, 3, 7) * 3
    x[0, :3] = [-60.0, 40.0, 0.0]   # saturated sigmoid both ways, and zero
    gradcheck(ag.silu, ref.silu, x, n=1, what="silu")
    gradcheck(ag.swiglu, ref.swiglu, x, rand(rng, 3, 7), n=1, what="swiglu")


def test_swiglu_linear_gradients_match_finite_differences_and_the_nodes_apart():
    """The fused node's gradients for x (batched), W1 and W3 at ragged sizes against float64
    differences; against linear, linear and swiglu recorded apart, also when x's gradient already
    holds a share from another use: the weights' gradients bitwise (the same kernels), x's within
    two float32 sums of the joined product (one sum over both products against two sums added)."""
    rng = np.random.default_rng(19)
    x, w1, w3 = rand(rng, 2, 5, 7), rand(rng, 7, 13) / 2, rand(rng, 7, 13) / 2
    gradcheck(ag.swiglu_linear, lambda x, a, b: ref.swiglu(x @ a, x @ b), x, w1, w3, n=7, what="swiglu_linear")
    r = rand(rng, 2, 5, 13)
    grads = []
    x, w1, w3 = rand(rng, 2, 50, 70), rand(rng, 70, 90) / 8, rand(rng, 70, 90) / 8    # the paired kernel's sizes
    r = rand(rng, 2, 50, 90)
    for fused in (True, False):
        with ag.Tape() as tape:
            nodes = [ag.tensor(v) for v in (x, w1, w3)]
            h = ag.swiglu_linear(*nodes) if fused else ag.swiglu(ag.linear(nodes[0], nodes[1]),
                                                                  ag.linear(nodes[0], nodes[2]))
            out = ag.add(ag.mul(h, ag.constant(r)).sum(), ag.mul(nodes[0], nodes[0]).sum())   # x used twice
        tape.backward(out)
        grads.append([n.grad.numpy() for n in nodes])
    for name, f, a in zip(("w1", "w3"), grads[0][1:], grads[1][1:]):
        assert np.array_equal(f, a), f"swiglu_linear's d{name} differs from the nodes apart"
    rows, g = x.reshape(-1, 70).astype(np.float64), r.reshape(-1, 90)
    gate, up = rows @ w1, rows @ w3
    s = 1 / (1 + np.exp(-gate))
    dgate, dup = g * up * s * (1 + gate * (1 - s)), g * gate * s        # the two gradients' magnitudes
    joined, weights = np.hstack([dgate, dup]), np.hstack([w1, w3])
    bound = 2 * matmul_atol(joined, weights.T).reshape(x.shape) + 4 * EPS32 * np.abs(grads[1][0])
    assert_close(grads[0][0], grads[1][0], rtol=0, atol=bound, what="swiglu_linear's dx against the nodes apart")


def test_swiglu_linear_refuses_bad_weights():
    x = ag.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="w1 must be 2-D"):
        ag.swiglu_linear(x, np.ones(3), np.ones((3, 4)))
    with pytest.raises(ValueError, match="last axis must be w1's n=4"):
        ag.swiglu_linear(x, np.ones((4, 5)), np.ones((4, 5)))
    with pytest.raises(ValueError, match=r"w3 must have w1's shape \(3, 4\)"):
        ag.swiglu_linear(x, np.ones((3, 4)), np.ones((3, 5)))


def test_embedding_gradient_accumulates_repeated_ids():
    rng = np.random.default_rng(10)
    table = rand(rng, 6, 4)
    ids = np.array([[1, 3, 1], [5, 1, 3]])            # id 1 three times, 3 twice; 0, 2, 4 never
    gradcheck(lambda t: ag.embedding(t, ids), lambda t: ref.embedding(t, ids), table, n=3, what="embedding")
    with ag.Tape() as tape:
        t = ag.tensor(table)
        out = ag.embedding(t, ids)
    g = rand(rng, *out.shape)
    tape.backward(out, grad=g)
    expected = np.zeros((6, 4))
    np.add.at(expected, ids.reshape(-1), g.reshape(-1, 4))
    assert_close(t.grad.numpy(), expected, rtol=4 * EPS32, atol=0, what="scatter-add")
    assert not t.grad.numpy()[[0, 2, 4]].any()


def cross_entropy64(z, targets):
    z = np.asarray(z, np.float64)
    m = z.max(axis=-1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))[..., 0]
    picked = np.take_along_axis(z, targets[..., None], axis=-1)[..., 0]
    return np.mean(lse - picked)


@pytest.mark.parametrize("vocab", [7, 37])
def test_cross_entropy_value_and_gradient(vocab):
    rng = np.random.default_rng(11)
    z = rand(rng, 2, 3, vocab) * 3
    targets = rng.integers(0, vocab, (2, 3))
    with ag.Tape():
        loss = ag.cross_entropy(ag.tensor(z), targets)
    assert loss.shape == ()
    assert abs(float(loss.numpy()) - cross_entropy64(z, targets)) <= 32 * EPS32 * 3
    gradcheck(lambda z: ag.cross_entropy(z, targets), lambda z: cross_entropy64(z, targets), z, n=vocab,
              what=f"cross_entropy V={vocab}")


def test_the_cross_entropy_gradient_the_forward_writes_has_the_backwards_bits(queue):
    """Under a tape the forward also writes the gradient for a loss gradient of 1, from the row in
    L1 (``gradient=True``); the backward keeps it for g = 1 and computes any other g afresh: both
    bit for bit what the backward alone gives, at a ragged vocabulary with an ignored row. A
    second backward (retain_graph) does not overwrite the first one's result."""
    rng = np.random.default_rng(12)
    z = rand(rng, 37, 29) * 3
    targets = rng.integers(0, 29, 37)
    targets[5] = -100
    tz = Tensor.from_host(queue, z)
    for g in (1.0, 2.5, 0.0):
        tg = Tensor.from_host(queue, np.full((), g, np.float32))
        fused_loss, saved = ops.cross_entropy_with_stats(tz, targets, gradient=True)
        plain_loss, plain = ops.cross_entropy_with_stats(tz, targets)
        fused, alone = ops.cross_entropy_backward(tg, saved).numpy(), ops.cross_entropy_backward(tg, plain).numpy()
        assert np.array_equal(fused, alone) and np.array_equal(fused_loss.numpy(), plain_loss.numpy()), f"g={g}"
        assert not alone[5].any() and (g == 0.0 or alone.any()), f"g={g}: the ignored row alone is zero"
    leaf = ag.tensor(z)
    with ag.Tape() as tape:
        loss = ag.cross_entropy(leaf, targets)
    tape.backward(loss, retain_graph=True)
    first = leaf.grad.numpy()
    tape.backward(loss, grad=np.full((), 2.0, np.float32))
    assert np.array_equal(leaf.grad.numpy(), first + 2 * first), "the second backward added 2x the first's gradient"
    for wrong in (1, "yes", np.True_):
        with pytest.raises(TypeError, match="gradient must be a bool"):
            ops.cross_entropy_with_stats(tz, targets, gradient=wrong)


def test_cross_entropy_rejects_bad_targets():
    z = ag.tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="targets"):
        ag.cross_entropy(z, [0, 3])
    with pytest.raises(ValueError, match="targets"):
        ag.cross_entropy(z, [0])


def test_sum_mean_reshape_swap_axes_and_head_helpers():
    rng = np.random.default_rng(12)
    x = rand(rng, 2, 3, 4, 5)
    gradcheck(ag.sum, lambda x: np.sum(x), x, n=120, what="sum")
    gradcheck(ag.mean, lambda x: np.mean(x), x, n=120, what="mean")
    gradcheck(lambda x: ag.reshape(x, (6, 20)), lambda x: x.reshape(6, 20), x, n=1, what="reshape")
    for i, j in [(1, 2), (0, 3), (1, 3), (-1, 0)]:
        gradcheck(lambda x, i=i, j=j: ag.swap_axes(x, i, j), lambda x, i=i, j=j: np.swapaxes(x, i, j), x, n=1,
                  what=f"swap {i},{j}")
    y = rand(rng, 2, 3, 8)
    split = lambda x: np.swapaxes(x.reshape(2, 3, 4, 2), 1, 2)
    gradcheck(lambda x: ag.split_heads(x, 4), split, y, n=1, what="split_heads")
    gradcheck(lambda x: ag.merge_heads(ag.split_heads(x, 4)), lambda x: x, y, n=1, what="merge_heads")
    w = rand(rng, 8, 5)
    gradcheck(ag.linear, lambda x, w: x @ w, y, w, n=8, what="linear")


# -- the tape itself ----------------------------------------------------------------------

def test_gradients_accumulate_across_uses_and_calls():
    x0 = np.array([1.0, -2.0, 3.0], np.float32)
    with ag.Tape() as tape:
        x = ag.tensor(x0)
        y = ag.add(ag.mul(x, x), x)          # x used three times: dy/dx = 2x + 1
        loss = ag.sum(y)
    tape.backward(loss, retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), 2 * x0 + 1)
    loss.backward()                           # a second call adds (the shorthand: the tape that recorded it)
    np.testing.assert_allclose(x.grad.numpy(), 2 * (2 * x0 + 1))
    ag.zero_grad([x])
    assert x.grad is None
    with pytest.raises(ValueError, match="released by an earlier backward"):
        loss.backward()                       # the record was released: memory does not grow step by step
    assert tape.nodes == []


def test_backward_raises_a_forward_error_before_touching_any_grad(queue):
    """backward() checks the forward's status behind the queue (no drain) and raises before
    any .grad changes, naming the op at fault; the record is released all the same."""
    table, w = ag.tensor(rand(np.random.default_rng(4), 5, 3)), ag.tensor(np.ones(3, np.float32))
    with ag.Tape() as tape:
        ids = Tensor.from_host(queue, np.array([1, 7, 2]), dtype=np.int32)   # id 7 of 5: found on the device
        rows = ag.embedding(table, ids)
        loss = ag.sum(ag.mul(rows, w))
    with pytest.raises(BadInputError, match=r"^embedding: ids must lie in \[0, 5\)"):
        tape.backward(loss)
    assert table.grad is None and w.grad is None
    with pytest.raises(ValueError, match="released by an earlier backward"):
        tape.backward(loss)
    x = ag.tensor(np.full(2, 1e20, np.float32))
    with ag.Tape() as tape:
        y = ag.sum(ag.mul(x, x))                                        # 1e40: inf in the forward
    with pytest.raises(NonFiniteError, match="^mul produced inf or NaN from finite inputs"):
        y.backward()
    assert x.grad is None
    ok = ag.tensor(np.full(2, 3.0, np.float32))                       # the flag was cleared
    with ag.Tape():
        z = ag.sum(ag.mul(ok, ok))
    z.backward()
    np.testing.assert_allclose(ok.grad.numpy(), 6.0)


def test_a_status_mark_checks_the_ops_before_it_and_not_after(queue):
    stream = stream_of(queue)
    stream.sync()
    big = Tensor.from_host(queue, np.full(4, 1e20, np.float32))
    before = stream.mark()
    product = ops.mul(big, big)                                         # overflows after the mark
    stream.check(before)                                                # does not see it
    after = stream.mark()
    with pytest.raises(NonFiniteError, match="^mul produced inf or NaN from finite inputs"):
        stream.check(after)
    del product
    stream.sync()                                                       # reported once, then cleared


def test_backward_with_an_output_gradient_and_its_errors():
    with ag.Tape() as tape:
        x = ag.tensor(np.ones((2, 3), np.float32))
        y = ag.mul(x, np.full((2, 3), 2.0, np.float32))
    with pytest.raises(ValueError, match="one-element"):
        tape.backward(y)
    with pytest.raises(ValueError, match="shape"):
        tape.backward(y, grad=np.ones((3, 2), np.float32))
    tape.backward(y, grad=np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.arange(6).reshape(2, 3))
    with pytest.raises(TypeError, match="Node"):
        tape.backward(y.value)


def test_nothing_is_recorded_without_a_tape_or_without_requires_grad(queue):
    x = ag.tensor(np.ones((2, 2), np.float32))
    y = ag.matmul(x, x)                                   # no tape active
    assert not y.requires_grad and y.parents == ()
    with ag.Tape() as tape:
        c = ag.tensor(np.ones((2, 2), np.float32), requires_grad=False)
        z = ag.matmul(c, c)
    assert not z.requires_grad and tape.nodes == []
    with pytest.raises(ValueError, match="requires_grad"):
        tape.backward(ag.sum(z))
    with pytest.raises(TypeError, match="float32"):
        ag.tensor(Tensor.from_host(queue, np.arange(3), dtype=np.int32))


def test_nested_tapes_outer_sees_everything_inner_sees_its_own():
    with ag.Tape() as outer:
        x = ag.tensor(np.array([2.0], np.float32))
        y = ag.mul(x, x)                                  # recorded on outer only
        with ag.Tape() as inner:
            z = ag.mul(y, y)                              # recorded on both
        assert ag.recording()
    assert not ag.recording()
    inner.backward(z, grad=np.ones(1, np.float32), retain_graph=True)
    assert x.grad is None and float(y.grad.numpy()[0]) == 2 * 4.0   # dz/dy = 2y; y is a constant to inner
    ag.zero_grad([x, y])
    outer.backward(z, grad=np.ones(1, np.float32))
    assert float(x.grad.numpy()[0]) == 4 * 2.0 ** 3                 # z = x⁴


def test_fused_gradient_accumulation_is_bitwise_the_separate_adds_with_fewer_passes(monkeypatch, queue):
    """A pre-norm block reads each residual stream twice (the norm and the branch's last product);
    W1 and W3 (one node, ``swiglu_linear``) and q, k and v (one node) each form their input's gradient
    as one sum. With FUSED_ACCUMULATION the second and later shares are added in the
    rules' own passes (linear's product epilogue, the norm's row pass): the gradients must be
    bitwise those of separate adds (one rounding of the same two float32 values either way),
    with fewer add launches."""
    from netcl_lite.core.stream import Stream                        # noqa: PLC0415
    from netcl_lite.nn.transformer import DecoderBlock               # noqa: PLC0415
    # 64 rows of width 64, hidden 96: every projection is large enough for the packed kernel
    block = DecoderBlock(queue, dim=64, n_heads=4, n_kv_heads=4, hidden=96, max_seq_len=32, seed=3)
    rng = np.random.default_rng(17)
    x, r = rand(rng, 2, 32, 64), rand(rng, 2, 32, 64)
    launch = Stream.launch

    def run(fused):
        monkeypatch.setattr(ag, "FUSED_ACCUMULATION", fused)
        adds = []

        def counting(self, filename, name, *args, **kw):
            adds.append(name == "binary_broadcast")
            return launch(self, filename, name, *args, **kw)

        monkeypatch.setattr(Stream, "launch", counting)
        block.zero_grad()
        with ag.Tape() as tape:
            xn = ag.tensor(x)
            loss = ag.sum(block(xn) * r)
        tape.backward(loss)
        monkeypatch.setattr(Stream, "launch", launch)
        grads = {name: p.grad.numpy() for name, p in block.parameters().items()}
        return grads, xn.grad.numpy(), sum(adds)

    fused, dx_fused, adds_fused = run(True)
    plain, dx_plain, adds_plain = run(False)
    np.testing.assert_array_equal(dx_fused, dx_plain)
    for name in plain:
        np.testing.assert_array_equal(fused[name], plain[name], err_msg=name)
    # the two residual streams: 2 adds (the product output r * out is a mul); W1/W3 and q/k/v: none
    # either way, as their nodes form x's gradient as one sum (swiglu_linear, rotary_attention_projected)
    assert adds_plain - adds_fused == 2, (adds_plain, adds_fused)


def test_linear_with_a_residual_is_the_add_and_passes_the_gradient_through():
    rng = np.random.default_rng(18)
    x, w, h = rand(rng, 2, 5, 7), rand(rng, 7, 3), rand(rng, 2, 5, 3)
    with ag.Tape():
        fused = ag.linear(ag.tensor(x), ag.tensor(w), ag.tensor(h)).numpy()
        separate = ag.add(ag.tensor(h), ag.linear(ag.tensor(x), ag.tensor(w))).numpy()
    np.testing.assert_array_equal(fused, separate)          # one rounding of the same two float32 values
    gradcheck(lambda x, w, h: ag.linear(x, w, h), lambda x, w, h: x @ w + h, x, w, h, n=7, what="linear + residual")
    with pytest.raises(ValueError, match=r"residual must have the output's shape \(2, 5, 3\)"):
        ag.linear(x, w, rand(rng, 2, 5, 7))
    with pytest.raises(ValueError, match="weight must be 2-D"):
        ag.linear(x, rand(rng, 7))
    with pytest.raises(ValueError, match="x's last axis must be weight's n=3"):
        ag.linear(x, rand(rng, 3, 3))


def test_a_second_backward_adds_to_the_gradients_of_the_first_in_the_rules_passes(monkeypatch):
    """Gradients add up across backward calls; a rule that can add (linear's epilogue, the
    norm's row pass) takes a leaf's earlier .grad as the gradient gathered so far. Two calls
    must give bitwise what separate adds give, and exactly twice one call's gradient here."""
    rng = np.random.default_rng(19)
    x, w, nw = rand(rng, 4, 6), rand(rng, 6, 5), rand(rng, 6)

    def two_calls(fused):
        monkeypatch.setattr(ag, "FUSED_ACCUMULATION", fused)
        xn, wn, nn_ = ag.tensor(x), ag.tensor(w), ag.tensor(nw)
        for _ in range(2):
            with ag.Tape() as tape:
                loss = ag.sum(ag.linear(ag.rms_norm(xn, nn_), wn))
            tape.backward(loss)
        return [n.grad.numpy() for n in (xn, wn, nn_)]

    fused, plain = two_calls(True), two_calls(False)
    monkeypatch.setattr(ag, "FUSED_ACCUMULATION", True)
    xn, wn, nn_ = ag.tensor(x), ag.tensor(w), ag.tensor(nw)
    with ag.Tape() as tape:
        loss = ag.sum(ag.linear(ag.rms_norm(xn, nn_), wn))
    tape.backward(loss)
    for got, expected, once in zip(fused, plain, (xn, wn, nn_)):
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(got, 2 * once.grad.numpy())    # g + g is exact in float32
