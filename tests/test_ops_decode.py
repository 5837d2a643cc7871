"""The fused decoding step (ops.decode_layer, ops.decode_logits) against its float64 references,
on random shapes with ragged widths, every head grouping, the embedding and both LM heads;
the model's decode_step against its full forward; and the bad inputs.

Tolerance: the layer chains norms, projections, attention and SwiGLU, stages whose longest
inner sum has n = max(D, F, positions) terms; ``tol_for(n)`` of the largest expected value,
as the block tests use (tests/kernel_cases.py). The cache entries written are one projection and
a rotation deep, checked the same way.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import tol_for

from netcl_lite import ops, reference
from netcl_lite.core.stream import BadInputError, NonFiniteError, sync
from netcl_lite.core.tensor import Tensor
from netcl_lite.nn import DecoderLM, KVCache, LMConfig
from netcl_lite.ops.decode import SLOTS, LayerLaunch, StepLaunch
from netcl_lite.testing import assert_close


def layer_case(rng, batch, dim, heads, groups, hidden, max_len, position, vocab=0, scale=1.0):
    d, kv = dim // heads, groups * (dim // heads)
    shapes = dict(norm1=(dim,), wq=(dim, dim), wk=(dim, kv), wv=(dim, kv), wo=(dim, dim), norm2=(dim,),
                  w1=(dim, hidden), w3=(dim, hidden), w2=(hidden, dim))
    weights = {k: np.asarray(rng.standard_normal(s) * (1.0 + 0.2 * rng.standard_normal(s) if k.startswith("norm")
                                                       else scale / np.sqrt(s[0])), np.float32)
               for k, s in shapes.items()}
    k_cache = np.zeros((batch, groups, max_len, d), np.float32)
    v_cache = np.zeros_like(k_cache)
    k_cache[:, :, :position] = rng.standard_normal((batch, groups, position, d))
    v_cache[:, :, :position] = rng.standard_normal((batch, groups, position, d))
    x = np.asarray(rng.standard_normal((batch, dim)), np.float32)
    table = np.asarray(rng.standard_normal((vocab, dim)), np.float32) if vocab else None
    ids = rng.integers(0, vocab, batch) if vocab else None
    return weights, k_cache, v_cache, x, table, ids


def run_layer(queue, weights, k_cache, v_cache, x, position, heads, table=None, ids=None, **kw):
    tk, tv, tx = (Tensor.from_host(queue, a) for a in (k_cache, v_cache, x))
    tw = {k: Tensor.from_host(queue, v) for k, v in weights.items()}
    first = dict(ids=ids, table=Tensor.from_host(queue, table)) if table is not None else {}
    out = ops.decode_layer(tx, tw, tk, tv, position, n_heads=heads, **first, **kw)
    assert out is tx
    return tx.numpy(), tk.numpy(), tv.numpy()


def test_decode_layer_matches_reference_on_random_shapes(queue):
    rng = np.random.default_rng(70)
    for i in range(40):
        heads = int(rng.choice([1, 2, 3, 4, 6]))
        groups = int(rng.choice([g for g in range(1, heads + 1) if heads % g == 0]))
        d = 2 * int(rng.choice([1, 3, 4, 5, 8, 16]))            # head widths 2 .. 32, ragged against 8 lanes
        dim, hidden = heads * d, int(rng.choice([1, 7, 20, 33, 64, 100]))
        max_len = int(rng.choice([1, 2, 9, 40, 130]))
        position = int(rng.choice([0, 1, max_len - 1, rng.integers(0, max_len)])) % max_len    # 0, 1, the last
        batch = int(rng.choice([1, 2, 3, 9, 17]))           # tiles of rows and the rows left over
        vocab = int(rng.choice([0, 5, 61]))
        eps, base = float(rng.choice([1e-6, 1e-5])), float(rng.choice([10000.0, 300.0]))
        weights, kc, vc, x, table, ids = layer_case(rng, batch, dim, heads, groups, hidden, max_len, position, vocab)
        got = run_layer(queue, weights, kc, vc, x, position, heads, table, ids, eps=eps, rope_base=base)
        expected = reference.decode_layer(x, weights, kc, vc, position, n_heads=heads, eps=eps, rope_base=base,
                                          ids=ids, table=table)
        n = max(dim, hidden, position + 1)
        case = f"case {i}: B={batch} D={dim} H={heads} G={groups} F={hidden} S={max_len} pos={position} V={vocab}"
        for what, g, e in zip(("x", "k_cache", "v_cache"), got, expected):
            assert_close(g, e, rtol=0, atol=tol_for(n) * max(1.0, float(np.abs(e).max())), what=f"{case}: {what}")


@pytest.mark.parametrize("tied", [True, False])
def test_decode_logits_match_reference(tied, queue):
    rng = np.random.default_rng(71 + tied)
    for batch, dim, vocab in [(1, 8, 5), (2, 13, 61), (3, 128, 2048), (1, 100, 1), (2, 1, 9), (17, 37, 70),
                              (33, 128, 1024), (9, 16, 17)]:
        x = np.asarray(rng.standard_normal((batch, dim)), np.float32)
        norm = np.asarray(1 + 0.3 * rng.standard_normal(dim), np.float32)
        head = np.asarray(rng.standard_normal((vocab, dim) if tied else (dim, vocab)) / np.sqrt(dim), np.float32)
        kw = dict(table=head) if tied else dict(output=head)
        expected = reference.decode_logits(x, norm, eps=1e-5, **kw)
        got = ops.decode_logits(x, norm, eps=1e-5, **kw)                                       # NumPy in and out
        on_device = ops.decode_logits(Tensor.from_host(queue, x), Tensor.from_host(queue, norm), eps=1e-5,
                                      **{k: Tensor.from_host(queue, v) for k, v in kw.items()})
        assert isinstance(got, np.ndarray) and isinstance(on_device, Tensor)
        atol = tol_for(dim) * float(np.abs(expected).max())
        assert_close(got, expected, rtol=0, atol=atol, what=f"logits B={batch} D={dim} V={vocab}")
        assert_close(on_device.numpy(), expected, rtol=0, atol=atol, what="logits from Tensors")


def step_case(rng, batch, layers, heads, groups, d, hidden, max_len, vocab, tied):
    """Random operands of a StepLaunch: x, per-layer weights and caches, the table, the norm and the head."""
    cases = [layer_case(rng, batch, heads * d, heads, groups, hidden, max_len, 0) for _ in range(layers)]
    table = np.asarray(rng.standard_normal((vocab, heads * d)), np.float32)
    norm = np.asarray(1 + 0.3 * rng.standard_normal(heads * d), np.float32)
    output = None if tied else np.asarray(rng.standard_normal((heads * d, vocab)) / np.sqrt(heads * d), np.float32)
    return [c[0] for c in cases], [c[1] for c in cases], [c[2] for c in cases], table, norm, output


def launch_step(queue, weights, ks, vs, table, norm, output, heads, **kw):
    """A StepLaunch over device copies of the operands; returns it with its x and caches."""
    batch, dim = ks[0].shape[0], table.shape[1]
    tx = Tensor.zeros(queue, (batch, dim))
    tk, tv = [Tensor.from_host(queue, k) for k in ks], [Tensor.from_host(queue, v) for v in vs]
    tw = [{k: Tensor.from_host(queue, v) for k, v in w.items()} for w in weights]
    head = dict(norm=Tensor.from_host(queue, norm), output=None if output is None else Tensor.from_host(queue, output))
    step = StepLaunch(tx, tw, tk, tv, n_heads=heads, table=Tensor.from_host(queue, table), **head, **kw)
    return step, tx, tk, tv


def test_a_step_of_many_streams_matches_the_reference(queue):
    """StepLaunch (embedding, every layer, the head; one launch per SLOTS layers) over several
    positions against reference.decode_step, on ragged batches (tiles of rows and rows left over),
    head widths, hidden sizes and vocabularies, both heads, and 1 to 6 layers (two launches).

    Tolerance: each layer adds the error of a chain of norms, products and attention with inner sums
    of n = max(D, F, positions) terms, tol_for(n) of the largest value; the head is one more such sum."""
    rng = np.random.default_rng(80)
    for i in range(12):
        heads = int(rng.choice([2, 4, 6]))
        groups = int(rng.choice([g for g in range(1, heads + 1) if heads % g == 0]))
        d = 2 * int(rng.choice([1, 4, 5, 16]))
        hidden, max_len = int(rng.choice([7, 33, 64])), int(rng.choice([3, 9, 70]))
        batch, layers = int(rng.choice([1, 5, 16, 17, 33])), int(rng.choice([1, 2, 4, 5, 6]))
        vocab, tied = int(rng.choice([5, 61, 300])), bool(rng.integers(0, 2))
        weights, ks, vs, table, norm, output = step_case(rng, batch, layers, heads, groups, d, hidden, max_len, vocab,
                                                         tied)
        step, _, tk, tv = launch_step(queue, weights, ks, vs, table, norm, output, heads, eps=1e-5, rope_base=500.0)
        assert step.launches == -(-layers // SLOTS)
        case = f"case {i}: B={batch} L={layers} H={heads} G={groups} d={d} F={hidden} S={max_len} V={vocab} tied={tied}"
        for position in range(max_len):
            ids = rng.integers(0, vocab, batch)
            logits = step(position, ids=ids)
            expected, ks, vs = reference.decode_step(None, weights, ks, vs, position, n_heads=heads, eps=1e-5,
                                                     rope_base=500.0, ids=ids, table=table, norm=norm, output=output)
            if position not in (0, 1, max_len - 1):           # the cache's first entries and its last
                continue
            n = max(heads * d, hidden, position + 1)
            tol = (layers + 1) * tol_for(n) * max(1.0, float(np.abs(expected).max()))
            assert_close(logits.numpy(), expected, rtol=0, atol=tol, what=f"{case}: logits at {position}")
            for layer in range(layers):
                for what, g, e in (("k", tk[layer], ks[layer]), ("v", tv[layer], vs[layer])):
                    filled = e[:, :, :position + 1]
                    assert_close(g.numpy()[:, :, :position + 1], filled, rtol=0,
                                 atol=(layer + 1) * tol_for(n) * max(1.0, float(np.abs(filled).max())),
                                 what=f"{case}: {what} cache of layer {layer} at {position}")


def test_a_streams_values_do_not_depend_on_its_batch_or_on_the_grouping(queue, monkeypatch):
    """Every value of a stream is summed by one work-item in an order of its own, so its logits and
    cache entries are the same bits whether it is decoded alone or among 16 others, whatever the
    rows per work-group (the host picks them from the compute-unit count) or the local size."""
    from netcl_lite.ops import decode as decode_module

    rng = np.random.default_rng(81)
    heads, groups, d, hidden, max_len, vocab, batch = 4, 2, 8, 40, 6, 50, 17
    weights, ks, vs, table, norm, output = step_case(rng, batch, 2, heads, groups, d, hidden, max_len, vocab, True)
    ids = rng.integers(0, vocab, (3, batch))

    def decode(rows=None, local=None, only=None):
        if rows is not None:
            monkeypatch.setattr(decode_module, "_rows_per_group", lambda queue, b: min(rows, b))
        if local is not None:
            monkeypatch.setattr(decode_module, "_local_size", lambda queue: local)
        pick = slice(None) if only is None else slice(only, only + 1)
        step, _, tk, tv = launch_step(queue, weights, [k[pick] for k in ks], [v[pick] for v in vs], table, norm,
                                      output, heads)
        logits = [step(p, ids=ids[p, pick]).numpy() for p in range(3)]
        monkeypatch.undo()
        return np.stack(logits), [t.numpy() for t in tk + tv]

    base_logits, base_caches = decode()
    for variant in (dict(rows=1), dict(rows=5), dict(rows=batch), dict(rows=9, local=128)):
        logits, caches = decode(**variant)
        assert np.array_equal(logits, base_logits), f"logits differ with {variant}"
        assert all(np.array_equal(a, b) for a, b in zip(caches, base_caches)), f"caches differ with {variant}"
    alone_logits, alone_caches = decode(only=11)
    assert np.array_equal(alone_logits[:, 0], base_logits[:, 11]), "stream 11 alone differs from stream 11 in the batch"
    assert all(np.array_equal(a[0], b[11]) for a, b in zip(alone_caches, base_caches))


def test_a_prompt_filled_at_once_matches_the_reference(queue):
    """decode_prefill (the B·T rows (stream, position) in one launch per SLOTS layers, every row's
    K and V appended before any attends) against reference.decode_prefill, after positions already
    in the cache or none, on ragged batches and prompt lengths, 1 to 5 layers.

    Tolerance: as for a step (the same kernel): (layers + 1) · tol_for(n) of the largest value."""
    rng = np.random.default_rng(83)
    for i, (batch, span, start, layers, heads, groups, d, hidden, max_len) in enumerate(
            [(1, 1, 0, 1, 2, 1, 4, 7, 3), (3, 5, 0, 2, 4, 2, 6, 20, 9), (17, 3, 4, 5, 6, 3, 2, 33, 9),
             (33, 2, 1, 1, 2, 2, 16, 64, 4), (5, 9, 0, 4, 4, 1, 8, 40, 9)]):
        vocab = 37
        weights, ks, vs, table, norm, _ = step_case(rng, batch, layers, heads, groups, d, hidden, max_len, vocab, True)
        for k, v in zip(ks, vs):                           # positions before start already cached
            k[:, :, :start] = rng.standard_normal(k[:, :, :start].shape)
            v[:, :, :start] = rng.standard_normal(v[:, :, :start].shape)
        ids = rng.integers(0, vocab, (batch, span))
        tk, tv = [Tensor.from_host(queue, k) for k in ks], [Tensor.from_host(queue, v) for v in vs]
        tw = [{k: Tensor.from_host(queue, v) for k, v in w.items()} for w in weights]
        got = ops.decode.decode_prefill(ids, tw, tk, tv, start, n_heads=heads, table=Tensor.from_host(queue, table),
                                        norm=Tensor.from_host(queue, norm), eps=1e-5, rope_base=500.0).numpy()
        expected, eks, evs = reference.decode_prefill(ids, weights, ks, vs, start, n_heads=heads, table=table,
                                                      norm=norm, eps=1e-5, rope_base=500.0)
        n = max(heads * d, hidden, start + span)
        case = f"case {i}: B={batch} T={span} from {start} L={layers} H={heads} G={groups} d={d} F={hidden}"
        assert_close(got, expected, rtol=0, atol=(layers + 1) * tol_for(n) * max(1.0, float(np.abs(expected).max())),
                     what=f"{case}: hidden states")
        for layer in range(layers):
            for what, g, e in (("k", tk[layer], eks[layer]), ("v", tv[layer], evs[layer])):
                filled = e[:, :, :start + span]
                assert_close(g.numpy()[:, :, :start + span], filled, rtol=0,
                             atol=(layer + 1) * tol_for(n) * max(1.0, float(np.abs(filled).max())),
                             what=f"{case}: {what} cache of layer {layer}")


def test_a_prompt_filled_at_once_does_not_depend_on_the_grouping(queue, monkeypatch):
    """The prompt's rows are grouped by whole streams; its bits must not depend on how many."""
    from netcl_lite.ops import decode as decode_module

    rng = np.random.default_rng(84)
    weights, ks, vs, table, norm, _ = step_case(rng, 9, 2, 4, 2, 6, 20, 8, 40, True)
    ids = rng.integers(0, 40, (9, 5))

    def fill():
        tk, tv = [Tensor.from_host(queue, k) for k in ks], [Tensor.from_host(queue, v) for v in vs]
        tw = [{k: Tensor.from_host(queue, v) for k, v in w.items()} for w in weights]
        out = ops.decode.decode_prefill(ids, tw, tk, tv, 0, n_heads=4, table=Tensor.from_host(queue, table),
                                        norm=Tensor.from_host(queue, norm)).numpy()
        return out, [t.numpy() for t in tk + tv]

    base, base_caches = fill()
    for rows in (1, 4):
        monkeypatch.setattr(decode_module, "_rows_per_group", lambda queue, b, rows=rows: min(rows, b))
        out, caches = fill()
        monkeypatch.undo()
        assert np.array_equal(out, base), f"hidden states differ with {rows} streams per group"
        assert all(np.array_equal(a, b) for a, b in zip(caches, base_caches))


def test_a_prompt_fill_checks_its_inputs(queue):
    rng = np.random.default_rng(85)
    weights, ks, vs, table, norm, _ = step_case(rng, 2, 1, 2, 1, 4, 12, 5, 10, True)
    tk, tv = [Tensor.from_host(queue, k) for k in ks], [Tensor.from_host(queue, v) for v in vs]
    tw = [{k: Tensor.from_host(queue, v) for k, v in w.items()} for w in weights]
    tt, tn = Tensor.from_host(queue, table), Tensor.from_host(queue, norm)

    def fill(ids, position=0, **changes):
        args = dict(layers=tw, k_caches=tk, v_caches=tv, n_heads=2, table=tt, norm=tn)
        args.update(changes)
        return ops.decode.decode_prefill(ids, args.pop("layers"), args.pop("k_caches"), args.pop("v_caches"),
                                         position, **args)

    with pytest.raises(ValueError, match=r"ids must be a \(batch, positions\) array"):
        fill([1, 2])
    with pytest.raises(TypeError, match="ids must hold integers"):
        fill([[1.5], [2.0]])
    with pytest.raises(ValueError, match=r"position must be an int in \[0, 2\)"):
        fill([[1, 2, 3, 4], [1, 2, 3, 4]], position=2)
    with pytest.raises(ValueError, match=r"ids has 3 rows \(streams\), the caches hold 2"):
        fill([[1], [2], [3]])
    with pytest.raises(ValueError, match=r"k_caches must be a list of one cache per layer \(1\)"):
        fill([[1], [2]], k_caches=tk * 2)
    with pytest.raises(ValueError, match=r"norm must have shape \(8,\)"):
        fill([[1], [2]], norm=Tensor.zeros(queue, (7,)))
    with pytest.raises(ValueError, match="ids must lie in"):
        fill(np.array([[1], [2**33]]))
    fill([[1, 9], [10, 2]])                               # out of range: found on the device
    with pytest.raises(BadInputError, match=r"^decode_prefill: ids must lie in \[0, 10\)"):
        sync(queue)


def test_a_step_launch_checks_its_inputs(queue):
    rng = np.random.default_rng(82)
    weights, ks, vs, table, norm, output = step_case(rng, 2, 2, 2, 1, 4, 12, 5, 10, False)
    tx = Tensor.zeros(queue, (2, 8))
    tk, tv = [Tensor.from_host(queue, k) for k in ks], [Tensor.from_host(queue, v) for v in vs]
    tw = [{k: Tensor.from_host(queue, v) for k, v in w.items()} for w in weights]
    tt, tn, to = (Tensor.from_host(queue, a) for a in (table, norm, output))

    def make(**changes):
        args = dict(x=tx, layers=tw, k_caches=tk, v_caches=tv, n_heads=2, table=tt, norm=tn, output=to)
        args.update(changes)
        return StepLaunch(args.pop("x"), args.pop("layers"), args.pop("k_caches"), args.pop("v_caches"), **args)

    with pytest.raises(ValueError, match="layers must be a non-empty list"):
        make(layers=[])
    with pytest.raises(ValueError, match=r"k_caches must be a list of one cache per layer \(2\)"):
        make(k_caches=tk[:1])
    with pytest.raises(TypeError, match=r"layers\[1\]\['wq'\] must be a Tensor"):
        make(layers=[tw[0], dict(tw[1], wq=weights[1]["wq"])])
    with pytest.raises(ValueError, match=r"layers\[1\]\['wk'\] must have shape \(8, 4\)"):
        make(layers=[tw[0], dict(tw[1], wk=Tensor.zeros(queue, (8, 8)))])
    wider = dict(tw[1], w1=Tensor.zeros(queue, (8, 13)), w3=Tensor.zeros(queue, (8, 13)), w2=Tensor.zeros(queue, (13, 8)))
    with pytest.raises(ValueError, match=r"layers\[1\] has other sizes than layers\[0\]"):
        make(layers=[tw[0], wider])
    with pytest.raises(ValueError, match=r"norm must have shape \(8,\)"):
        make(norm=Tensor.zeros(queue, (7,)))
    with pytest.raises(ValueError, match=r"output must have shape \(8, 10\)"):
        make(output=Tensor.zeros(queue, (8, 11)))
    with pytest.raises(ValueError, match="a tied LM head reads the embedding table"):
        make(table=None, output=None)
    with pytest.raises(ValueError, match="pass the final norm's weight"):
        make(norm=None)
    step = make()
    assert step.launches == 1 and step.logits.shape == (2, 10)
    with pytest.raises(ValueError, match="pass one id per sequence"):
        step(0)
    with pytest.raises(ValueError, match=r"position must be an int in \[0, 5\)"):
        step(5, ids=[1, 2])
    with pytest.raises(ValueError, match="ids must lie in"):
        step(0, ids=np.array([1, 2**33]))
    with pytest.raises(ValueError, match="does not embed tokens"):
        make(table=None)(0, ids=[1, 2])
    step(0, ids=[3, 10])                                  # out of range: found on the device
    with pytest.raises(BadInputError, match=r"^decode_step: ids must lie in \[0, 10\) for a table of 10 rows; got 10 at \(1,\)$"):
        sync(queue)


def llama(groups, tie):
    return LMConfig(vocab_size=61, hidden_size=36, intermediate_size=50, num_hidden_layers=2, num_attention_heads=6,
                    num_key_value_heads=groups, max_position_embeddings=24, rms_norm_eps=1e-5, rope_theta=500.0,
                    tie_word_embeddings=tie, initializer_range=0.2)


@pytest.mark.parametrize("groups, tie", [(6, True), (2, False), (1, True)], ids=["MHA-tied", "GQA-untied", "MQA-tied"])
def test_decode_step_equals_the_full_forward_for_a_batch(groups, tie, queue):
    model = DecoderLM(llama(groups, tie), queue=queue, seed=3)
    c = model.config
    ids = np.random.default_rng(groups).integers(0, c.vocab_size, size=(3, 12))
    cache = KVCache(queue, c.num_hidden_layers, 3, groups, c.head_dim, 12)
    with_cache = [model(ids[:, :5], cache).numpy()[:, -1]]
    with_cache += [model.decode_step(ids[:, t], cache) for t in range(5, 12)]
    assert cache.length(0) == cache.length(1) == 12
    expected = model(ids).numpy()[:, 4:]
    tol = tol_for(max(c.hidden_size, c.intermediate_size)) * float(np.abs(expected).max())
    assert_close(np.stack(with_cache, axis=1), expected, rtol=0, atol=tol, what="decode_step logits")


def test_ids_out_of_range_are_reported_by_the_device(queue):
    rng = np.random.default_rng(72)
    weights, kc, vc, x, table, _ = layer_case(rng, 2, 8, 2, 1, 12, 4, 0, vocab=5)
    with pytest.raises(BadInputError, match=r"^decode_layer: ids must lie in \[0, 5\) for a table of 5 rows; got 7 at \(1,\)$"):
        run_layer(queue, weights, kc, vc, x, 0, 2, table, np.array([1, 7]))


def test_overflow_is_reported_with_the_op_name(queue):
    rng = np.random.default_rng(73)
    weights, kc, vc, x, _, _ = layer_case(rng, 1, 8, 2, 2, 12, 4, 2, scale=1e20)
    with pytest.raises(NonFiniteError, match="decode_layer"):
        run_layer(queue, weights, kc, vc, x, 2, 2)
    sync(queue)                                           # the error was raised once and cleared


def test_bad_arguments_are_named(queue):
    rng = np.random.default_rng(74)
    weights, kc, vc, x, table, ids = layer_case(rng, 1, 8, 2, 1, 12, 4, 0, vocab=5)
    tk, tv, tx = (Tensor.from_host(queue, a) for a in (kc, vc, x))
    tw = {k: Tensor.from_host(queue, v) for k, v in weights.items()}

    def call(**changes):
        args = dict(x=tx, weights=tw, k_cache=tk, v_cache=tv, position=0, n_heads=2)
        args.update(changes)
        return ops.decode_layer(**args)

    with pytest.raises(TypeError, match="x must be a Tensor"):
        call(x=x)
    with pytest.raises(ValueError, match="position must be an int in \\[0, 4\\)"):
        call(position=4)
    with pytest.raises(ValueError, match="n_heads=3"):
        call(n_heads=3)
    with pytest.raises(ValueError, match="exactly the keys"):
        call(weights={k: v for k, v in tw.items() if k != "w2"})
    with pytest.raises(ValueError, match=r"weights\['wk'\] must have shape \(8, 4\)"):
        call(weights={**tw, "wk": Tensor.from_host(queue, np.zeros((8, 8)))})
    with pytest.raises(ValueError, match=r"weights\['w1'\] must have shape \(8, hidden\)"):
        call(weights={**tw, "w1": Tensor.from_host(queue, np.zeros(8))})
    with pytest.raises(ValueError, match=r"weights\['w2'\] must have shape \(12, 8\)"):
        call(weights={**tw, "w2": Tensor.from_host(queue, np.zeros((8, 12)))})
    with pytest.raises(ValueError, match="k_cache .* and v_cache .* must have the same shape"):
        call(v_cache=Tensor.zeros(queue, (1, 1, 5, 4)))
    with pytest.raises(ValueError, match="pass ids and table together"):
        call(ids=ids)
    with pytest.raises(ValueError, match=r"ids must have shape \(1,\)"):
        call(ids=np.array([1, 2]), table=Tensor.from_host(queue, table))
    with pytest.raises(TypeError, match="ids must hold integers"):
        call(ids=np.array([1.5]), table=Tensor.from_host(queue, table))
    with pytest.raises(ValueError, match="exactly one of table="):
        ops.decode_logits(x, np.ones(8))
    with pytest.raises(ValueError, match=r"output must have shape \(8, vocab\)"):
        ops.decode_logits(x, np.ones(8), output=np.ones((5, 8)))
    with pytest.raises(ValueError, match=r"norm must have shape \(8,\)"):
        ops.decode_logits(x, np.ones(7), table=table)


def test_decode_step_refuses_a_mismatched_cache_or_batch(queue):
    model = DecoderLM(llama(2, True), queue=queue)
    c = model.config
    with pytest.raises(ValueError, match="this model needs 2, 2, 6"):
        model.decode_step([1], KVCache(queue, 2, 1, 3, c.head_dim, 8))
    cache = KVCache(queue, 2, 2, 2, c.head_dim, 1)
    with pytest.raises(ValueError, match=r"one token per cached sequence \(2\), got 1"):
        model.decode_step([1], cache)
    model.decode_step([1, 2], cache)
    with pytest.raises(ValueError, match="exceed max_position_embeddings|KV cache full"):
        model.decode_step([1, 2], cache)
    with pytest.raises(ValueError, match="ids must lie in"):
        model.decode_step([1, 99], KVCache(queue, 2, 2, 2, c.head_dim, 4))


def test_a_decode_step_allocates_the_same_at_every_cache_length(queue):
    from netcl_lite.core.tensor import track_allocations

    model = DecoderLM(llama(2, True), queue=queue, seed=1)
    c = model.config
    cache = KVCache(queue, c.num_hidden_layers, 1, 2, c.head_dim, c.max_position_embeddings)
    seen = {}
    for position in range(c.max_position_embeddings):
        with track_allocations() as step:
            model.decode_step([position % c.vocab_size], cache)
        seen[position] = (step.buffers, step.bytes)
    # the first step sets up the launch (its work buffer, the ids buffer, the logits it writes);
    # after that a step allocates nothing on the device, whatever the cache holds
    assert seen[0][0] > 0 and seen[1] == seen[c.max_position_embeddings - 1] == (0, 0), seen


@pytest.mark.parametrize("embeds", [True, False])
def test_a_prepared_layer_launch_is_bitwise_decode_layer_step_by_step(embeds, queue):
    """LayerLaunch sets the kernel's arguments once and changes only the position, the sequence
    number, the ids and (when the cached RoPE tables grow past 64 positions) the tables: over 70
    steps it must write exactly what decode_layer writes, x and both caches, bit for bit."""
    rng = np.random.default_rng(77 + embeds)
    batch, heads, groups, d, hidden, max_len, vocab = 2, 4, 2, 6, 20, 72, 11
    weights, kc, vc, x, table, _ = layer_case(rng, batch, heads * d, heads, groups, hidden, max_len, 0,
                                              vocab if embeds else 0)
    tw = {k: Tensor.from_host(queue, v) for k, v in weights.items()}
    ttable = Tensor.from_host(queue, table) if embeds else None
    mine = [Tensor.from_host(queue, a) for a in (x, kc, vc)]
    theirs = [Tensor.from_host(queue, a) for a in (x, kc, vc)]
    base = 317.0 + embeds                  # RoPE tables of their own: they start at 64 positions and grow
    step = LayerLaunch(*mine[:1], tw, *mine[1:], n_heads=heads, eps=1e-5, rope_base=base, table=ttable)
    assert step.uses(mine[0], tw, mine[1], mine[2], ttable)
    assert not step.uses(theirs[0], tw, mine[1], mine[2], ttable)
    assert not step.uses(mine[0], dict(tw, wq=Tensor.from_host(queue, weights["wq"])), mine[1], mine[2], ttable)
    for position in range(70):
        ids = rng.integers(0, vocab, batch) if embeds else None
        assert step(position, ids=ids) is mine[0]
        ops.decode_layer(theirs[0], tw, theirs[1], theirs[2], position, n_heads=heads, eps=1e-5, rope_base=base,
                         **({"ids": ids, "table": ttable} if embeds else {}))
        if position in (0, 1, 63, 64, 69):
            for what, a, b in zip(("x", "k_cache", "v_cache"), mine, theirs):
                assert np.array_equal(a.numpy(), b.numpy()), f"{what} differs at position {position}"


def test_a_prepared_layer_launch_checks_its_inputs(queue):
    rng = np.random.default_rng(79)
    weights, kc, vc, x, table, _ = layer_case(rng, 1, 8, 2, 1, 12, 5, 0, vocab=10)
    tw = {k: Tensor.from_host(queue, v) for k, v in weights.items()}
    tx, tk, tv, tt = (Tensor.from_host(queue, a) for a in (x, kc, vc, table))
    with pytest.raises(TypeError, match="weights\\['wq'\\] must be a Tensor"):
        LayerLaunch(tx, dict(tw, wq=weights["wq"]), tk, tv, n_heads=2)
    with pytest.raises(ValueError, match="must have shape"):
        LayerLaunch(tx, dict(tw, wq=Tensor.from_host(queue, weights["wq"][:, :4])), tk, tv, n_heads=2)
    step = LayerLaunch(tx, tw, tk, tv, n_heads=2, table=tt)
    with pytest.raises(ValueError, match="pass one id per sequence"):
        step(0)
    with pytest.raises(ValueError, match="ids must have shape \\(1,\\)"):
        step(0, ids=[1, 2])
    with pytest.raises(TypeError, match="ids must hold integers"):
        step(0, ids=[1.5])
    for position in (-1, 5, True, 1.0):
        with pytest.raises(ValueError, match="position must be an int in \\[0, 5\\)"):
            step(position, ids=[1])
    for huge in (2**32 + 3, -(2**31) - 1):               # would wrap into range as int32
        with pytest.raises(ValueError, match="ids must lie in"):
            step(0, ids=np.array([huge], np.int64))
        with pytest.raises(ValueError, match="ids must lie in"):
            ops.decode_layer(tx, tw, tk, tv, 0, n_heads=2, ids=np.array([huge], np.int64), table=tt)
    with pytest.raises(ValueError, match="does not embed tokens"):
        LayerLaunch(tx, tw, tk, tv, n_heads=2)(0, ids=[1])
    sync(queue)
    step(0, ids=[3])
    step(1, ids=[10])                                     # out of range: found on the device, op 2 of 2
    with pytest.raises(BadInputError, match=r"^decode_layer: ids must lie in \[0, 10\) for a table of 10 rows; got 10 at \(0,\)$"):
        sync(queue)


def test_decode_step_sets_up_new_launches_for_other_tensors(queue):
    """decode_step reuses each layer's prepared launch while it sees the same tensors. Two caches
    decoded in turn must each get their own launches (a launch left on the other cache would
    write into it), and loading other weights must not leave the model reading the old ones."""
    config = llama(2, True)
    model, other = DecoderLM(config, queue=queue, seed=1), DecoderLM(config, queue=queue, seed=2)
    c = config

    def new_cache():
        return KVCache(queue, c.num_hidden_layers, 1, c.num_key_value_heads, c.head_dim, c.max_position_embeddings)

    def alone(m, tokens):
        cache = new_cache()
        return [m.decode_step([t], cache) for t in tokens]

    expected_a, expected_b = alone(model, (1, 4, 2)), alone(model, (5, 3, 7))
    a, b = new_cache(), new_cache()
    got_a, got_b = [], []
    for ta, tb in zip((1, 4, 2), (5, 3, 7), strict=True):
        got_a.append(model.decode_step([ta], a))
        got_b.append(model.decode_step([tb], b))
    for got, expected in ((got_a, expected_a), (got_b, expected_b)):
        for g, e in zip(got, expected, strict=True):
            assert np.array_equal(g, e)
    model.load_state_dict(other.state_dict())
    for g, e in zip(alone(model, (1, 4, 2)), alone(other, (1, 4, 2)), strict=True):
        assert np.array_equal(g, e)


def test_a_cache_the_caller_drops_is_freed_after_decoding(queue):
    """decode_step keeps each cache's prepared launches, which hold the cache's tensors; they
    must go with the cache, or every generate() would leave its cache alive on the device."""
    import gc

    from netcl_lite.core.tensor import device_bytes_in_use

    model = DecoderLM(llama(2, True), queue=queue, seed=1)
    c = model.config

    def decode(tokens):
        cache = KVCache(queue, c.num_hidden_layers, 1, c.num_key_value_heads, c.head_dim, c.max_position_embeddings)
        for t in tokens:
            model.decode_step([t], cache)
        return cache

    decode([1])                                           # the model's own decoding state, made once
    gc.collect()
    before = device_bytes_in_use(queue.context)
    cache = decode([1, 2, 3])
    assert device_bytes_in_use(queue.context)[0] > before[0]
    del cache
    sync(queue)
    gc.collect()
    assert device_bytes_in_use(queue.context) == before
