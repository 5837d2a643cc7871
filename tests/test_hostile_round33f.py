"""Round 33f: the compressor's host models called directly with hostile arguments.

1. ``GeometricMixer.mix`` keeps the caller's ``context``, ``prev`` and boost arrays by reference
   and ``update`` indexes the weights with them: a caller that reuses (mutates) its arrays between
   the two moves other weights than the ones ``mix`` used, never checked (-1 silently the last row).
2. ``ContextMixer.predict`` keeps the caller's ``p_model`` by reference (in its linear ``Mixer``),
   and ``update`` learns from it: a caller that reuses its buffer for the next step's model output
   before ``update`` gets other weights, so other predictions, than one that passes fresh arrays.
3. ``NGram`` accepts ``orders`` up to ``MAX_ORDERS`` = 15, but ``DISCOUNT`` has entries for orders
   0..8 only: ``predict`` with orders 9..15 fails with a bare NumPy broadcast error.
4. ``make_predictor`` keeps the caller's ``lengths`` array and reads it every step (which streams
   are active): a caller that reuses the array after making the predictor changes how many
   distributions each step returns, and the mixer then refuses a step as if the caller had erred.
5. ``ContextMixer.prepare()`` called between ``predict`` and ``update`` keeps a preparation made
   before the update, and the next ``predict`` uses it: counts from before the step's tokens,
   silently other probabilities than ``predict``, ``update``, ``predict``; with the word n-gram
   (the default techniques) the next ``update`` then raises "update follows predict: call
   predict(unigram)" after the linear and geometric mixers have already learned from the step.
6. ``AdaptConfig(decay=...)`` takes any finite decay >= 0. ``"rms"`` caps the pull toward the trained
   weights at 1 (a full pull), but ``"sgd"`` and ``"adam"`` use it as is: a decay of 3 moves the
   weights to the far side of the trained ones, twice as far each step, until they pass float32
   and are reset; the model codes with weights that have nothing to do with the text meanwhile.
7. ``copy.copy(Adapter)`` shares the history, the step count, the weights' dict and the model: each
   ``observe`` on the copy moves the original (its ``seen``, its weights, its model's parameters),
   as the host models did before their ``__copy__``; ``copy.deepcopy`` and ``pickle`` fail inside
   pyopencl ("cannot pickle 'CommandQueue' object"), naming nothing of the Adapter, where the
   predictor refuses a copy with a message that says what to do.
8. ``tokenizer_fingerprint`` (and so ``compress``/``decompress``) of a tokenizer holding a special
   token of 65,536 bytes or more, which ``BPETokenizer`` accepts, fails with ``struct.error``
   ("ushort format requires 0 <= number <= 65535"): each piece's length is packed in 16 bits.
9. ``ngram.sorted_search`` is documented as ``np.searchsorted(table, keys)``, but keys of two
   dimensions fail with a bare NumPy broadcast error and a 0-d key with "invalid index to scalar
   variable" (searchsorted takes both), and a NaN key in a float table lands at another index
   (32 of 40, where searchsorted puts NaN last).
10. ``masks.query_start`` checks nothing: ``query_start(1.5, 4)`` returns 2.5 (a position that is no
    int), ``query_start("a", "b")`` fails with a bare "unsupported operand" TypeError naming neither
    length. (A negative result, query_len > key_len, is meant: reference.causal_mask relies on it.)
11. ``files.atomic_write`` and ``files.write_new`` given a released memoryview fail with Python's
    own "operation forbidden on released memoryview object", naming no parameter (``compress``
    names ``data`` for the same view).
12. The other way round: ``ContextMixer.predict`` (techniques without ``"sse"``: the linear mix alone,
    or the geometric mix last) returns the very array its ``update`` then learns from (the linear
    ``Mixer``'s ``p_mix``, the ``GeometricMixer``'s ``p``); a caller that edits the distribution it
    was given in place (floors, renormalizes, reuses it) changes the weights learned.
    ``MatchModel.predict`` likewise returns its own ``predicted`` array (the length it copies): a
    caller that overwrites the predicted tokens makes ``update`` extend a match that did not hold.
13. ``TreeSSE`` on a float16 distribution emits NumPy's "overflow encountered in cast" warning (its
   1e200 bound cast to float16), an error under ``-W error``.
"""

import copy
import pickle
import warnings

import numpy as np
import pytest

from netcl_lite import compression as cz
from netcl_lite import files, masks
from netcl_lite.adaptation import AdaptConfig, Adapter
from netcl_lite.context_mixing import ContextMixer, GeometricMixer, TreeSSE
from netcl_lite.match import MatchModel
from netcl_lite.ngram import MAX_ORDERS, NGram, sorted_search
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer

V = 16
PIECES = {i: bytes([97 + i % 26]) + (b" " if i % 3 == 0 else b"") for i in range(V)}
PRIMER = np.arange(200) % V


def _dist(rng, b=2, v=V):
    p = rng.random((b, v))
    return p / p.sum(axis=1, keepdims=True)


def test_geometric_mixer_update_does_not_read_the_callers_arrays_changed_after_mix():
    rng = np.random.default_rng(0)
    parts = [_dist(rng), _dist(rng)]
    tokens, active = np.array([1, 2]), np.array([True, True])

    def run(mutate):
        g = GeometricMixer(2, 3, [4], V, True)
        ctx, prev = np.array([0, 1]), np.array([0, 1])
        boost_tokens, boost_index = np.array([1, -1]), np.array([0, 3])
        g.mix([p.copy() for p in parts], ctx, [(0, boost_tokens, boost_index)], prev)
        if mutate:                                  # the caller reuses its arrays for the next step
            for arr in (ctx, prev, boost_tokens, boost_index):
                arr[:] = -1
        g.update(tokens, active)
        return g

    clean, reused = run(False), run(True)
    assert np.array_equal(clean.w, reused.w), "update moved the weight set the caller's mutated context names"
    assert np.array_equal(clean.v[0], reused.v[0]), "update moved the boost weight of the mutated index"
    assert np.array_equal(clean.bias, reused.bias), "update moved the bias row of the mutated prev"


def test_context_mixer_update_does_not_read_the_callers_p_model_changed_after_predict():
    rng = np.random.default_rng(1)
    steps = [_dist(rng) for _ in range(4)]
    tokens = [rng.integers(0, V, 2) for _ in range(4)]

    def run(reuse):
        cm = ContextMixer(PRIMER, V, np.array([20, 20]), PIECES)
        buf, outs = np.empty((2, V)), []
        for s in range(4):
            if reuse:
                buf[:] = steps[s]
            outs.append(cm.predict(buf if reuse else steps[s].copy()).copy())
            if reuse:
                buf[:] = 1.0 / V                    # the buffer refilled before update: a caller's own array
            cm.update(tokens[s], np.array([True, True]))
        return cm, outs

    (fresh, a), (reused, b) = run(False), run(True)
    assert np.array_equal(fresh.linear.w, reused.linear.w), "the linear mix learned from the mutated p_model"
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("orders", [9, MAX_ORDERS])
def test_ngram_orders_past_the_discounts_predict_or_are_refused_by_name(orders):
    try:
        ng = NGram(PRIMER, V, 2, orders)
    except ValueError as exc:
        assert "orders" in str(exc)
        return
    p, reached, _ = ng.predict()                    # was: operands could not be broadcast together
    assert p.shape == (2, V) and np.allclose(p.sum(axis=1), 1)
    ng.update(np.array([1, 2]), np.array([True, True]))
    p, _, _ = ng.predict()
    assert np.isfinite(p).all()


def test_tree_sse_on_float16_warns_nothing():
    p = np.full((2, V), 1.0 / V, np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = TreeSSE(V)(p)
    assert np.allclose(out.sum(axis=1), 1)


TEXT = ("Each stream is coded from the model's predictions; a header says how to read it back.\n"
        "Counts of what followed each context sharpen the guesses as the text goes on.\r\n") * 6


@pytest.mark.parametrize("mix", [False, True])
def test_make_predictor_does_not_read_the_callers_lengths_changed_after(queue, mix):
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16),
                      queue=queue, seed=1)
    primer = np.asarray(tok.encode_ordinary(TEXT[:300]), np.int64)
    ids = np.asarray(tok.encode_ordinary(TEXT), np.int64)

    def run(mutate):
        lengths = np.array([6, 6, 5])
        pred = cz.make_predictor(model, tok, lengths, cz.kept_positions(model), mix, primer)
        shapes = []
        try:
            for step in range(6):
                if mutate and step == 2:
                    lengths[:] = [6, 3, 6]          # the caller's array, reused for something else
                p = pred.probabilities()
                shapes.append(p.shape)
                pred.advance(ids[step * 3:step * 3 + p.shape[0]])
        finally:
            pred.close()
        return shapes

    assert run(True) == run(False) == [(3, 300)] * 5 + [(2, 300)]


def _prepare_between(techniques):
    rng = np.random.default_rng(1)
    ps, ts = [_dist(rng) for _ in range(3)], [rng.integers(0, V, 2) for _ in range(3)]
    both = np.array([True, True])
    ref = ContextMixer(PRIMER, V, np.array([9, 9]), PIECES, techniques)
    cm = ContextMixer(PRIMER, V, np.array([9, 9]), PIECES, techniques)
    ref.predict(ps[0])
    ref.update(ts[0], both)
    cm.predict(ps[0])
    cm.prepare()                                    # the next step's host work, started early
    cm.update(ts[0], both)
    return ref, cm, ps, ts, both


@pytest.mark.parametrize("techniques", [(), ("geometric", "sse", "match", "words", "streams", "bias")])
def test_context_mixer_prepare_before_update_does_not_give_a_stale_prediction(techniques):
    ref, cm, ps, _, _ = _prepare_between(techniques)
    assert np.array_equal(cm.predict(ps[1]), ref.predict(ps[1])), "predict used counts from before the update"


def test_context_mixer_after_prepare_before_update_the_next_step_codes_or_changes_nothing():
    ref, cm, ps, ts, both = _prepare_between(("geometric", "sse", "match", "words", "streams", "bias"))
    cm.predict(ps[1])
    linear, geometric = cm.linear.w.copy(), cm.geometric.w.copy()
    try:
        cm.update(ts[1], both)
    except ValueError:                              # refused: then nothing may have learned
        assert np.array_equal(cm.linear.w, linear) and np.array_equal(cm.geometric.w, geometric), \
            "update raised after the linear and geometric mixers had learned from the step"
        raise


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_decay_past_one_pulls_at_most_fully_back_or_is_refused(queue, optimizer):
    model = DecoderLM(LMConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16),
                      queue=queue, seed=1)
    tokens = np.random.default_rng(0).integers(0, 64, (16, 2))

    def farthest(decay):
        adapter = Adapter(model, 2, 0, AdaptConfig(optimizer=optimizer, decay=decay, lr=1e-4, chunk=1, window=8))
        far = 0.0
        for step in tokens:
            adapter.observe(step)
            far = max(far, *(np.abs(adapter.weights[n] - adapter.trained[n]).max() for n in adapter.names))
        return far, adapter.resets

    try:
        AdaptConfig(optimizer=optimizer, decay=3.0)
    except ValueError as exc:
        assert "decay" in str(exc)
        return
    full, _ = farthest(1.0)
    past, resets = farthest(3.0)
    assert resets == 0 and past <= 4 * full, (f"decay=3 moved the weights {past:.3g} from the trained ones "
                                              f"({resets} resets), a full pull (decay=1) {full:.3g}")


def _tiny_adapter(queue):
    model = DecoderLM(LMConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16),
                      queue=queue, seed=1)
    adapter = Adapter(model, 2, 0, AdaptConfig(optimizer="sgd", lr=1e-3, chunk=2, window=8))
    adapter.observe(np.array([3, 4]))
    return adapter


def test_a_shallow_copy_of_an_adapter_is_refused_or_leaves_the_original_as_it_was(queue):
    adapter = _tiny_adapter(queue)
    try:
        twin = copy.copy(adapter)
    except TypeError:
        return
    seen, observed = adapter.seen.copy(), adapter.observed
    weights = {n: adapter.weights[n].copy() for n in adapter.names}
    model = {n: p.numpy().copy() for n, p in adapter.model.parameters().items()}
    twin.observe(np.array([5, 6]))                 # the copy's second step: an update
    assert np.array_equal(adapter.seen, seen) and adapter.observed == observed, "the copy's step moved the original"
    assert all(np.array_equal(adapter.weights[n], weights[n]) for n in adapter.names), \
        "the copy's update wrote the original's weights"
    assert all(np.array_equal(p.numpy(), model[n]) for n, p in adapter.model.parameters().items()), \
        "the copy's update wrote the original's model"


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_deep_copy_of_an_adapter_works_or_is_refused_naming_it(queue, how):
    adapter = _tiny_adapter(queue)
    try:
        twin = copy.deepcopy(adapter) if how == "deepcopy" else pickle.loads(pickle.dumps(adapter))
    except TypeError as exc:
        assert "Adapter" in str(exc) or "adapter" in str(exc), f"refused without naming the Adapter: {exc}"
        return
    twin.observe(np.array([5, 6]))
    assert adapter.observed == 1


def test_tokenizer_fingerprint_of_a_long_special_token_is_a_fingerprint_or_a_value_error():
    try:
        tok = BPETokenizer(special_tokens={"<" + "x" * 70000 + ">": 256})
    except ValueError:
        return                                      # refused where it is made: fine too
    try:
        fingerprint = cz.tokenizer_fingerprint(tok)
    except ValueError as exc:
        assert "special" in str(exc) or "token" in str(exc)
        return
    other = BPETokenizer(special_tokens={"<" + "x" * 70001 + ">": 256})
    assert len(fingerprint) == 8 and fingerprint != cz.tokenizer_fingerprint(other)


@pytest.mark.parametrize("keys", [np.array([[5, 999], [0, 400]], np.uint64), np.uint64(500)], ids=["2-D", "0-d"])
def test_sorted_search_takes_the_keys_searchsorted_takes_or_names_them(keys):
    rng = np.random.default_rng(0)
    table = np.sort(rng.integers(0, 1000, 100)).astype(np.uint64)
    try:
        got = sorted_search(table, table[::16].copy(), keys)
    except (ValueError, TypeError) as exc:
        assert "keys" in str(exc), f"not named: {exc}"
        return
    assert np.array_equal(got, np.searchsorted(table, keys))


def test_sorted_search_puts_a_nan_key_where_searchsorted_does():
    table = np.sort(np.random.default_rng(0).random(40))
    keys = np.array([np.nan, 0.5])
    assert np.array_equal(sorted_search(table, table[::16].copy(), keys), np.searchsorted(table, keys))


@pytest.mark.parametrize("lengths", [(1.5, 4), (1, 4.0), ("a", "b"), (True, 3)])
def test_query_start_refuses_lengths_that_are_no_ints_naming_them(lengths):
    with pytest.raises(TypeError, match="query_len|key_len"):
        masks.query_start(*lengths)


@pytest.mark.parametrize("write", ["atomic_write", "write_new"])
def test_files_writers_name_data_for_a_released_memoryview(tmp_path, write):
    view = memoryview(b"abc")
    view.release()
    with pytest.raises(ValueError, match="data"):
        getattr(files, write)(tmp_path / "out.bin", view)
    assert not (tmp_path / "out.bin").exists()


@pytest.mark.parametrize("techniques", [(), ("geometric",), ("geometric", "match", "bias")])
def test_context_mixer_update_does_not_read_the_distribution_it_returned(techniques):
    rng = np.random.default_rng(1)
    steps, tokens = [_dist(rng) for _ in range(4)], [rng.integers(0, V, 2) for _ in range(4)]

    def run(edit):
        cm, outs = ContextMixer(PRIMER, V, np.array([9, 9]), PIECES, techniques), []
        for s in range(4):
            p = cm.predict(steps[s].copy())
            outs.append(p.copy())
            if edit:
                p[:] = 1.0 / V                      # the caller's array now: it may do with it what it likes
            cm.update(tokens[s], np.array([True, True]))
        return outs

    assert all(np.array_equal(x, y) for x, y in zip(run(False), run(True))), \
        "editing the returned distribution changed what the mixer learned"


def test_match_model_update_does_not_read_the_tokens_predict_returned():
    def run(edit):
        m = MatchModel(np.array([5, 1, 2, 3, 4, 5, 6, 7, 8, 9]), np.array([8]), min_length=3)
        seen = []
        for t in [2, 3, 4, 9, 9]:
            token, length = m.predict()
            seen.append((int(token[0]), int(length[0])))
            if edit:
                token[:] = 9                        # the caller's array: it may reuse it
            m.update(np.array([t]), np.array([True]))
        token, length = m.predict()
        return seen + [(int(token[0]), int(length[0]))]

    assert run(True) == run(False) == [(-1, 0), (-1, 0), (-1, 0), (5, 3), (-1, 0), (-1, 0)]
