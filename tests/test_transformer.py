"""nn.transformer: the chapter's example, whole-block gradients, parameter budgets,
permutation equivariance and its breaking, and cached decoding against the full forward."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import fd_grad, rand, tol_for

from netcl_lite import autograd as ag
from netcl_lite import budget
from netcl_lite import reference as ref
from netcl_lite.core.device import manager
from netcl_lite.core.tensor import Tensor, track_allocations
from netcl_lite.nn.transformer import (
    DecoderBlock,
    Embedding,
    FeedForward,
    KVCache,
    LayerNorm,
    RMSNorm,
    RotaryAttention,
)
from netcl_lite.testing import EPS32, assert_close


def host(params):
    return {name: p.numpy().astype(np.float64) for name, p in params.items()}


# -- float64 twins of the layers (from netcl_lite.reference's per-op functions) -------------------

def attention64(x, p, heads, groups, *, causal=True, rope=True, start=0, prefix="attn."):
    """x (B, T, D) → (B, T, D), the layer's math in float64."""
    b, t, dim = x.shape
    d = dim // heads
    split = lambda y, n: y.reshape(b, t, n, d).transpose(0, 2, 1, 3)
    q, k, v = (split(x @ p[prefix + w], n) for w, n in (("wq", heads), ("wk", groups), ("wv", groups)))
    if rope:
        q, k = ref.rope(q, offset=start), ref.rope(k, offset=start)
    o = ref.attention(q, k, v, causal=causal)
    return o.transpose(0, 2, 1, 3).reshape(b, t, dim) @ p[prefix + "wo"]


def block64(x, p, heads, groups, norm, kind):
    def n(i, y):
        w = p[f"norm{i}.weight"]
        return ref.rms_norm(y, w) if kind == "rms" else ref.layer_norm(y, w, p[f"norm{i}.bias"])

    ffn = lambda y: ref.swiglu(y @ p["ffn.w1"], y @ p["ffn.w3"]) @ p["ffn.w2"]
    if norm == "pre":
        h = x + attention64(n(1, x), p, heads, groups)
        return h + ffn(n(2, h))
    h = n(1, x + attention64(x, p, heads, groups))
    return n(2, h + ffn(h))


# -- the chapter's example, then a backward through it -------------------------------------------

def test_chapter_example_runs_as_written_and_backward_fills_every_parameter():
    q = manager.default("auto").queue
    attn = RotaryAttention(queue=q, dim=256, n_heads=4, n_kv_heads=4, max_seq_len=512)
    x_batch = Tensor.from_host(q, np.random.randn(2, 16, 256).astype(np.float32))
    with ag.Tape() as tape:
        x_node = ag.tensor(x_batch)
        out = attn(x_node)
        loss = ag.sum(ag.mul(out, out))
    assert out.value.shape == (2, 16, 256)
    assert isinstance(out.value, Tensor) and out.value.queue is q
    tape.backward(loss)
    params = attn.parameters()
    assert sorted(params) == ["wk", "wo", "wq", "wv"]
    for name, p in params.items():
        g = p.grad.numpy()
        assert g.shape == p.shape and np.isfinite(g).all() and np.abs(g).max() > 0, name
    assert x_node.grad.shape == (2, 16, 256)


# -- whole-block gradients against float64 finite differences ---------------------------------

@pytest.mark.parametrize("norm,kind,kernel", [("pre", "rms", "flash"), ("post", "layer", "flash"),
                                              ("pre", "layer", "dense"), ("post", "rms", "dense")])
def test_decoder_block_gradients_match_float64_finite_differences(queue, norm, kind, kernel):
    rng = np.random.default_rng(20)
    dim, heads, groups, hidden, b, t = 8, 4, 2, 12, 2, 5
    block = DecoderBlock(queue, dim, heads, groups, hidden, max_seq_len=8, norm=norm, seed=3, norm_kind=kind, kernel=kernel)
    params = block.parameters()
    for name, p in params.items():   # move norm parameters off 1 and 0 so their gradients are not special
        if name.startswith("norm"):
            p.value = Tensor.from_host(queue, 1 + 0.3 * rand(rng, *p.shape))
    x, r = rand(rng, b, t, dim), rand(rng, b, t, dim)
    with ag.Tape() as tape:
        xn = ag.tensor(x)
        out = block(xn)
    tape.backward(out, grad=r)
    p64 = host(params)
    names = list(p64)
    f64 = lambda x, *ws: block64(x, dict(zip(names, ws)), heads, groups, norm, kind)
    args = [x] + [p64[n] for n in names]
    assert_close(out.numpy(), f64(*args), rtol=0, atol=tol_for(dim + hidden) * np.abs(f64(*args)).max(), what="forward")
    n = dim + hidden + t * (dim // heads)   # the inner sums a gradient passes through, one after another
    for i, (what, node) in enumerate([("x", xn)] + [(nm, params[nm]) for nm in names]):
        g64 = fd_grad(f64, args, i, np.float64(r))
        assert_close(node.grad.numpy(), g64, rtol=0, atol=tol_for(n) * np.abs(g64).max(), what=f"{norm}/{kind} d/d {what}")


def test_tied_embedding_gradient_sums_the_lookup_and_the_output_projection(queue):
    emb = Embedding(queue, vocab=7, dim=4, tie=True, seed=1)
    ids, targets = np.array([[1, 3, 1]]), np.array([[3, 1, 6]])
    with ag.Tape() as tape:
        loss = ag.cross_entropy(emb.output_logits(emb(ids)), targets)
    tape.backward(loss)

    def f64(table):
        z = table[ids] @ table.T
        m = z.max(axis=-1, keepdims=True)
        lse = m[..., 0] + np.log(np.exp(z - m).sum(axis=-1))
        return np.mean(lse - np.take_along_axis(z, targets[..., None], -1)[..., 0])

    table = emb.table.numpy()
    g64 = fd_grad(f64, [table], 0, 1.0)
    assert_close(emb.table.grad.numpy(), g64, rtol=0, atol=tol_for(7) * np.abs(g64).max(), what="tied table")


# -- parameter budgets from the built modules -----------------------------------------------------

@pytest.mark.parametrize("heads", [1, 8, 16])
def test_mha_has_four_d_squared_weights(queue, heads):
    attn = RotaryAttention(queue, dim=512, n_heads=heads, n_kv_heads=heads, max_seq_len=8)
    assert attn.num_parameters() == 4 * 512**2 == budget.attention_parameters(512, heads)


@pytest.mark.parametrize("groups,expected", [(1, 384), (3, 576)])
def test_gqa_weights_at_d12(queue, groups, expected):
    attn = RotaryAttention(queue, dim=12, n_heads=3, n_kv_heads=groups, max_seq_len=8)
    shapes = {n: p.shape for n, p in attn.parameters().items()}
    assert shapes == {"wq": (12, 12), "wk": (12, groups * 4), "wv": (12, groups * 4), "wo": (12, 12)}
    assert attn.num_parameters() == expected == 2 * 12**2 + 2 * 12 * groups * 4 == budget.attention_parameters(12, 3, groups)


@pytest.mark.slow
def test_tying_saves_vocab_times_dim(queue):
    tied = Embedding(queue, vocab=32_000, dim=512, tie=True)
    untied = Embedding(queue, vocab=32_000, dim=512, tie=False)
    assert sorted(untied.parameters()) == ["output", "table"] and sorted(tied.parameters()) == ["table"]
    assert untied.num_parameters() - tied.num_parameters() == 16_384_000 == budget.tied_embedding_savings(32_000, 512)


def test_block_parameter_names_and_counts(queue):
    block = DecoderBlock(queue, 16, 4, 2, 40, max_seq_len=8, norm="post", norm_kind="layer")
    names = sorted(block.parameters())
    assert names == ["attn.wk", "attn.wo", "attn.wq", "attn.wv", "ffn.w1", "ffn.w2", "ffn.w3",
                     "norm1.bias", "norm1.weight", "norm2.bias", "norm2.weight"]
    assert block.num_parameters() == budget.attention_parameters(16, 4, 2) + 3 * 16 * 40 + 4 * 16
    assert FeedForward(queue, 16, 40).num_parameters() == 3 * 16 * 40
    assert RMSNorm(queue, 16).num_parameters() == 16 and LayerNorm(queue, 16).num_parameters() == 32


def test_initialization_is_seeded(queue):
    a = RotaryAttention(queue, 16, 4, 2, 8, seed=5).parameters()
    b = RotaryAttention(queue, 16, 4, 2, 8, seed=5).parameters()
    c = RotaryAttention(queue, 16, 4, 2, 8, seed=6).parameters()
    assert all(np.array_equal(a[n].numpy(), b[n].numpy()) for n in a)
    assert not np.array_equal(a["wq"].numpy(), c["wq"].numpy())
    assert abs(a["wq"].numpy().std() * np.sqrt(16) - 1) < 0.3    # normal / sqrt(fan_in)


# -- S110: equivariance without positions or masks, and what breaks it --------------------------

def _permuted_gap(queue, causal, rope):
    rng = np.random.default_rng(22)
    attn = RotaryAttention(queue, 16, 4, 2, 16, causal=causal, seed=2, rope=rope)
    x = rand(rng, 2, 7, 16)
    perm = rng.permutation(7)
    out = attn(Tensor.from_host(queue, x)).numpy()
    out_p = attn(Tensor.from_host(queue, x[:, perm])).numpy()
    return np.abs(out_p - out[:, perm]).max(), np.abs(out).max()


def test_attention_without_positions_or_mask_is_permutation_equivariant(queue):
    gap, size = _permuted_gap(queue, causal=False, rope=False)
    assert gap <= 64 * 16 * EPS32 * size      # equal up to float32 reassociation: P·out(x) = out(P·x)


@pytest.mark.parametrize("causal,rope", [(True, False), (False, True)])
def test_a_causal_mask_or_rope_breaks_the_symmetry(queue, causal, rope):
    gap, size = _permuted_gap(queue, causal=causal, rope=rope)
    assert gap > 1e-2 * size


# -- cached decoding equals the full causal forward ----------------------------------------------

@pytest.mark.parametrize("groups", [4, 2, 1], ids=["MHA", "GQA", "MQA"])
@pytest.mark.parametrize("kernel", ["flash", "dense"])
def test_cached_decoding_equals_the_full_forward(queue, groups, kernel):
    rng = np.random.default_rng(23)
    dim, heads, t = 32, 4, 11
    blocks = [DecoderBlock(queue, dim, heads, groups, 48, max_seq_len=16, seed=s, kernel=kernel) for s in (0, 7)]
    x = rand(rng, 2, t, dim)
    full = Tensor.from_host(queue, x)
    for blk in blocks:
        full = blk(full).value
    expected = full.numpy()
    cache = KVCache(queue, layers=2, batch=2, n_kv_heads=groups, head_dim=dim // heads, max_seq_len=16)
    pieces = []
    for lo, hi in [(0, 1), (1, 2), (2, 3), (3, 7), (7, 8), (8, 11)]:   # single tokens and chunks
        h = Tensor.from_host(queue, x[:, lo:hi])
        for layer, blk in enumerate(blocks):
            h = blk(h, cache, layer).value
        pieces.append(h.numpy())
    assert cache.lengths == [t, t]
    got = np.concatenate(pieces, axis=1)
    assert_close(got, expected, rtol=0, atol=tol_for(dim) * np.abs(expected).max(), what=f"cached {kernel} g={groups}")
    # Without the cache, a lone token would sit at position 0 and see only itself: not the same.
    alone = blocks[0](Tensor.from_host(queue, x[:, 5:6])).numpy()
    step = blocks[0](Tensor.from_host(queue, x[:, :6])).numpy()[:, 5:6]
    assert np.abs(alone - step).max() > 1e-3


def test_cache_allocates_exactly_k_and_v_and_refuses_to_overflow(queue):
    layers, batch, groups, d, max_len = 3, 2, 2, 8, 6
    cache = KVCache(queue, layers, batch, groups, d, max_len)
    assert cache.nbytes == 2 * layers * batch * groups * d * max_len * 4
    assert cache.nbytes == budget.kv_cache_bytes(layers, groups, d, max_len, batch=batch, bytes_per_element=4)
    attn = RotaryAttention(queue, 16, 2, groups, max_seq_len=max_len)
    attn(Tensor.from_host(queue, np.zeros((batch, 4, 16), np.float32)), cache)
    with pytest.raises(ValueError, match="max_seq_len"):
        attn(Tensor.from_host(queue, np.zeros((batch, 3, 16), np.float32)), cache)
    assert cache.length(0) == 4
    with pytest.raises(ValueError, match="max_seq_len"):
        cache.update(1, *(Tensor.from_host(queue, np.zeros((batch, groups, 7, d), np.float32)),) * 2)
    with pytest.raises(ValueError, match="layer"):
        cache.length(3)
    cache.reset()
    assert cache.lengths == [0, 0, 0]


@pytest.mark.parametrize("kernel", ["flash", "dense"])
def test_a_decode_step_allocates_the_same_whatever_the_cache_holds(queue, kernel):
    """O(1) allocations per token: the cache is appended in place and attention reads the
    prefix through kv_length, so a step at position 200 makes as many allocations as a step
    at position 10 (a copy of the K/V prefix would grow with it). With flash attention the
    bytes are equal too; dense attention's one growing buffer is its weights row, (H, T)."""
    dim, heads, groups, max_len = 32, 4, 2, 256
    block = DecoderBlock(queue, dim, heads, groups, 48, max_seq_len=max_len, kernel=kernel)
    cache = KVCache(queue, 1, 1, groups, dim // heads, max_len)
    x = np.random.default_rng(24).standard_normal((1, 1, dim)).astype(np.float32)
    seen = {}
    for position in range(201):
        with track_allocations() as step:
            block(x, cache, 0).numpy()
        if position in (10, 200):
            seen[position] = (step.buffers, step.bytes)
    assert cache.length(0) == 201
    assert seen[10][0] == seen[200][0], f"a decode step allocates {seen[10]} at position 10 but {seen[200]} at 200"
    grown = seen[200][1] - seen[10][1]
    assert grown == (0 if kernel == "flash" else 2 * heads * 190 * 4), f"{kernel}: {grown} more bytes at position 200"


def test_cached_decoding_is_inference_only(queue):
    attn = RotaryAttention(queue, 16, 2, 1, max_seq_len=8)
    cache = KVCache(queue, 1, 1, 1, 8, 8)
    with ag.Tape(), pytest.raises(ValueError, match="inference"):
        attn(ag.tensor(np.zeros((1, 2, 16), np.float32)), cache)


# -- errors name the parameter --------------------------------------------------------------------

def test_constructor_errors_name_the_parameter(queue):
    with pytest.raises(ValueError, match="dim=10 must be divisible by n_heads=4"):
        RotaryAttention(queue, 10, 4, 4, 8)
    with pytest.raises(ValueError, match="n_kv_heads=3 must divide n_heads=4"):
        RotaryAttention(queue, 16, 4, 3, 8)
    with pytest.raises(ValueError, match="max_seq_len"):
        RotaryAttention(queue, 16, 4, 4, 0)
    with pytest.raises(ValueError, match="norm must be one of"):
        DecoderBlock(queue, 16, 4, 4, 32, 8, norm="sandwich")
    with pytest.raises(ValueError, match="kernel"):
        RotaryAttention(queue, 16, 4, 4, 8, kernel="sparse")
    with pytest.raises(TypeError, match="queue"):
        RotaryAttention(None, 16, 4, 4, 8)
    with pytest.raises(TypeError, match="causal"):
        RotaryAttention(queue, 16, 4, 4, 8, causal="yes")


def test_call_errors_name_the_input(queue):
    attn = RotaryAttention(queue, 16, 4, 2, max_seq_len=8)
    with pytest.raises(ValueError, match="max_seq_len=8"):
        attn(Tensor.from_host(queue, np.zeros((1, 9, 16), np.float32)))
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, 16\)"):
        attn(Tensor.from_host(queue, np.zeros((1, 4, 12), np.float32)))
    with pytest.raises(ValueError, match=r"x must have shape"):
        attn(Tensor.from_host(queue, np.zeros((4, 16), np.float32)))
    with pytest.raises(TypeError, match="x must be a float32 Node or Tensor"):
        attn(Tensor.from_host(queue, np.zeros((1, 4, 16), np.int32), dtype=np.int32))
    with pytest.raises(TypeError, match="x must be a Node, a Tensor or an array of real numbers"):
        attn(np.full((1, 4, 16), "a"))
    block = DecoderBlock(queue, 16, 4, 2, 32, max_seq_len=8)
    with pytest.raises(ValueError, match="max_seq_len=8"):
        block(Tensor.from_host(queue, np.zeros((1, 9, 16), np.float32)))
