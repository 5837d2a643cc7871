"""Round 34f: the compressor's predictor (``make_predictor``), its host models and its adaptation driven
by a hostile caller.

1. ``probabilities()`` that fails part way (the model ran into a NaN: ``NonFiniteError``) has already
   fed the step's input to the model and moved the key-value cache and the window one position on,
   yet leaves the step "not asked": the predictor is neither as it was nor refused. Called again once
   the weights are fine (the same bytes as before, the model's fingerprint unchanged), it feeds the
   input a second time over a cache holding the failed step's non-finite keys and values, and fails
   again with a message that blames the model's weights ("its weights hold a NaN or an infinity ...
   check or retrain its weights"), which are fine: a fresh predictor of the same model runs. The call
   should leave the predictor as it was (the retry then predicts what a fresh one does) or refuse every
   later call, saying to make a new predictor. With the NaN in the final norm's weight (the cache's keys
   and values stay finite) the retry is worse: it returns finite probabilities that differ from a fresh
   predictor's (the step's input fed twice), silently: a decoder that retried so decodes other tokens.
2. Past the end: once every stream has coded its ``lengths`` tokens, ``probabilities()`` goes on
   running the model (a decoding step on the device, window refills) and returns an empty (0, vocab)
   array, step after step, and ``advance`` takes an empty step, without end: a caller's loop that runs
   one step too many (or ``lengths`` of all zeros) codes nothing and is never told. It should refuse,
   naming the streams' lengths, as ``advance`` before ``probabilities`` is refused.
3. A NumPy ``matrix`` (an ndarray subclass whose ``*`` is the matrix product and whose ``max`` takes no
   ``keepdims``) passes the host models' ndarray checks, then fails inside NumPy, naming no parameter:
   ``ContextMixer.predict`` and ``ngram.Mixer.mix`` of two or more streams with "shapes (2,1) and (2,16)
   not aligned", ``TreeSSE(p)`` with "matrix.max() got an unexpected keyword argument 'keepdims'"
   (``GeometricMixer.mix`` takes it as an array). Each should read it as the array it holds (np.asarray)
   or refuse it naming ``p_model``, ``parts`` or ``p``.
4. ``Adapter.update()`` (and ``batch()``), public, called before ``chunk`` steps were observed builds
   ceil(chunk / w) training windows per stream whatever was observed: with ``AdaptConfig(chunk=2**20)``
   and two observed steps of two streams, a (1,048,576, 2) batch of which 4 targets count (the rest
   IGNORE), and the gradient step runs the model over all of it: memory and time grow with ``chunk``,
   not with the tokens there are to train on (2**24 and 32 streams: gigabytes). Windows that hold no
   counted target should not be built.
5. ``match.add_in_order`` is documented as ``np.add.at(table, index, values)`` bit for bit, and
   ``match.last_wins`` as ``table[slots[i]] = values[i]`` with the last ``i`` winning where slots repeat;
   a negative index that names the same row as a non-negative one (-1 and 4 of five rows) is taken as
   another index: ``add_in_order`` adds only one of the two rows' values (``np.add.at`` adds both), and
   ``last_wins`` keeps the first value, silently. Either should treat -1 as NumPy does or refuse a
   negative index by name.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from netcl_lite import compression as cz
from netcl_lite.adaptation import AdaptConfig, Adapter, copy_model
from netcl_lite.context_mixing import TECHNIQUES, ContextMixer, TreeSSE
from netcl_lite.core.stream import NonFiniteError
from netcl_lite.match import add_in_order, last_wins
from netcl_lite.ngram import MIX_ORDERS, Mixer
from netcl_lite.nn.checkpoint import write

from cli_model import tiny_model


@pytest.fixture(scope="module")
def small(queue):
    return tiny_model(queue)


# (the mixed mode's float32 geometric mix hides the model's 1e-10 change after a NaN in norm.weight)
@pytest.mark.parametrize("mix, weight", [(False, "norm.weight"), (False, "embed.table"), (True, "embed.table")])
def test_probabilities_that_failed_leaves_the_predictor_as_it_was_or_refuses_it(small, mix, weight):
    model, tok, primer = small
    model = copy_model(model)                       # its weights are written below
    table = model.parameters()[weight]
    good = table.numpy().copy()
    lengths = np.array([5, 5])

    fresh = cz.make_predictor(model, tok, lengths, cz.kept_positions(model), mix, primer)
    expected = fresh.probabilities()
    fresh.close()

    predictor = cz.make_predictor(model, tok, lengths, cz.kept_positions(model), mix, primer)
    try:
        write(table, np.full_like(good, np.nan))
        with pytest.raises(NonFiniteError):
            predictor.probabilities()
        write(table, good)                          # the weights are as they were: the same fingerprint
        assert np.array_equal(table.numpy(), good)
        try:
            again = predictor.probabilities()
        except ValueError as exc:
            # refused as a predictor that cannot go on, not blamed on the (now fine) weights
            assert not isinstance(exc, NonFiniteError) and "make_predictor" in str(exc), str(exc)
        else:
            assert np.array_equal(again, expected), "the retry fed the step's input to the model twice"
    finally:
        predictor.close()


@pytest.mark.parametrize("mix", [False, True])
def test_probabilities_past_the_last_step_is_refused(small, mix):
    model, tok, primer = small
    lengths = np.array([2, 1])
    predictor = cz.make_predictor(model, tok, lengths, cz.kept_positions(model), mix, primer)
    try:
        for _ in range(int(lengths[0])):
            p = predictor.probabilities()
            predictor.advance(np.argmax(p, axis=1))
        with pytest.raises(ValueError, match="lengths|coded|finished"):
            predictor.probabilities()               # was: an empty (0, vocab) array, every step, without end
    finally:
        predictor.close()


def test_a_predictor_of_no_tokens_is_refused_or_predicts_nothing_once(small):
    model, tok, primer = small
    try:
        predictor = cz.make_predictor(model, tok, np.array([0]), cz.kept_positions(model), False, None)
    except ValueError as exc:
        assert "lengths" in str(exc)
        return
    try:
        with pytest.raises(ValueError, match="lengths|coded|finished"):
            predictor.probabilities()               # was: (0, vocab), a model step on the device each call
    finally:
        predictor.close()


V = 16
PIECES = {i: bytes([97 + i % 26]) + (b" " if i % 3 == 0 else b"") for i in range(V)}
PRIMER = np.arange(200) % V


def _dist(rng, b=2):
    p = rng.random((b, V))
    return p / p.sum(axis=1, keepdims=True)


def _matrix(a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.matrix(a)


def _same_or_named(call, array_input, matrix_input, names):
    expected = np.asarray(call(array_input))
    try:
        got = call(matrix_input)
    except (ValueError, TypeError) as exc:
        assert any(name in str(exc) for name in names), f"refused naming no parameter: {exc}"
        return
    assert np.allclose(np.asarray(got), expected)


@pytest.mark.parametrize("techniques", [(), TECHNIQUES])
def test_context_mixer_predict_of_a_numpy_matrix_works_or_names_p_model(techniques):
    p = _dist(np.random.default_rng(0))
    _same_or_named(lambda pm: ContextMixer(PRIMER, V, np.array([5, 5]), PIECES, techniques).predict(pm),
                   p.copy(), _matrix(p), ["p_model"])


def test_linear_mixer_mix_of_numpy_matrices_works_or_names_parts():
    rng = np.random.default_rng(1)
    parts = [_dist(rng) for _ in range(len(MIX_ORDERS) + 3)]
    _same_or_named(lambda ps: Mixer(4).mix(ps, np.array([1, 2]), np.array([3.0, 5.0])),
                   [p.copy() for p in parts], [_matrix(p) for p in parts], ["parts"])


def test_tree_sse_of_a_numpy_matrix_works_or_names_p():
    p = _dist(np.random.default_rng(2))
    _same_or_named(lambda x: TreeSSE(V)(x), p.copy(), _matrix(p), ["p must", "p:"])


def test_adapter_batch_before_a_chunk_holds_only_windows_with_targets(small):
    model, _, primer = small
    adapter = Adapter(model, 2, 10, AdaptConfig(chunk=1 << 20), train_ids=primer)
    adapter.observe(np.array([1, 2]))
    adapter.observe(np.array([3, 4]))
    x, y = adapter.batch()
    counted = int((y >= 0).sum())
    assert counted == 4
    # each window holds at least one counted target: the batch is bounded by what was observed
    assert x.shape[0] <= 2 * counted, f"a batch of {x.shape} windows for {counted} targets"


@pytest.mark.parametrize("index", [[-1, 4, 0], [-1, 4, 4, -1]])
def test_add_in_order_is_np_add_at_for_a_negative_index_or_refuses_it(index):
    index = np.array(index)
    values = np.random.default_rng(3).random((index.size, 3))
    expected = np.zeros((5, 3))
    np.add.at(expected, index, values)
    table = np.zeros((5, 3))
    try:
        add_in_order(table, index, values)
    except (ValueError, IndexError) as exc:
        assert "index" in str(exc)
        return
    assert np.array_equal(table, expected), "one of the rows -1 and 4 name was not added"


@pytest.mark.parametrize("slots", [[4, -1], [0, 4, -1]])
def test_last_wins_lets_the_last_win_for_a_negative_slot_or_refuses_it(slots):
    table = np.full(5, -9)
    values = np.arange(10, 10 * (len(slots) + 1), 10)        # the last, for row 4 (-1), is the largest
    try:
        last_wins(np.array(slots), values, table)
    except (ValueError, IndexError) as exc:
        assert "slots" in str(exc)
        return
    assert table[4] == values[-1], f"slots {slots} name row 4 twice; the last value, {values[-1]}, should win"
