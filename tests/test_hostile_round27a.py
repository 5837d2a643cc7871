"""Hostile round 27a: the checkpoint loader's safetensors header and the compressor's inputs.

Covers a safetensors header that names one tensor twice with differing entries (JSON readers keep
either entry, so the weights read could differ from the ones meant), and compression.read_header
given a memoryview with a zero in its shape, and context_mixing.StreamCache given lengths as a list
or a masked prior, ContextMixer.predict given a masked p_model, and TreeSSE given a masked p or
rows that are no distribution (zeros, negative values), ngram.Mixer given masked parts, and the
host models' update given a masked active, WordNGram.predict given a masked unigram, and
StreamCache.predict given a prior whose finite values overflow, and an Adapter given a masked
optimizer state array; and train.load_checkpoint given a trainer_state.json that is no trainer
state (nested too deeply, not an object, keys missing)."""
import struct

import numpy as np
import pytest

from netcl_lite.nn import checkpoint


def _weights(path, header: str, data: bytes):
    raw = header.encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


_DOUBLED = ('{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},'
            '"w":{"dtype":"F16","shape":[8],"data_offsets":[0,16]}}')


@pytest.mark.parametrize("read", [checkpoint.read_header, checkpoint.read_tensors])
def test_a_weights_header_naming_a_tensor_twice_is_refused(tmp_path, read):
    """A header giving tensor 'w' twice (float32 of 4, then float16 of 8, over the same bytes) was
    read silently as the last entry: read_header said ('F16', (8,)) and read_tensors returned eight
    float16 values, while a reader keeping the first entry loads four float32 ones. config.json
    refuses a doubled key for this reason; the weights header now does too, naming the tensor."""
    file = _weights(tmp_path / "model.safetensors", _DOUBLED, np.arange(4, dtype=np.float32).tobytes())
    with pytest.raises(ValueError, match="'w' twice"):
        read(file)


def test_a_weights_header_naming_each_tensor_once_is_still_read(tmp_path):
    """The refusal leaves a well-formed file as it was."""
    header = '{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}'
    file = _weights(tmp_path / "model.safetensors", header, np.arange(4, dtype=np.float32).tobytes())
    assert checkpoint.read_header(file) == {"w": ("F32", (2, 2))}
    np.testing.assert_array_equal(checkpoint.read_tensors(file)["w"], np.arange(4, dtype=np.float32).reshape(2, 2))


@pytest.mark.parametrize("shape", [(0, 5), (3, 0)])
def test_read_header_of_an_empty_multidimensional_view_says_the_blob_is_truncated(shape):
    """A memoryview of shape (0, 5) or (3, 0) holds no bytes, yet read_header raised memoryview's own
    TypeError ('cannot cast view with zeros in shape or strides'), naming no parameter, where an
    empty 1-D view is named as a truncated blob."""
    from netcl_lite import compression

    with pytest.raises(ValueError, match="blob is truncated: 0 bytes"):
        compression.read_header(memoryview(np.zeros(shape, np.uint8)))


def test_stream_cache_takes_lengths_as_a_list_as_the_other_parts_do():
    """StreamCache(4, [3, 3]) passed the size checks (which read any integer sequence) and then
    raised AttributeError: 'list' object has no attribute 'size'; MatchModel takes the same list."""
    from netcl_lite.context_mixing import StreamCache

    assert StreamCache(4, [3, 3]).counts.shape == (2, 4)


def test_stream_cache_refuses_a_masked_prior_naming_it():
    """A masked prior was taken, and its mask carried into every stream's unigram and bigram: the
    prediction came back as a masked array, a token's chance hidden, with no error. Other inputs
    of the coder refuse a masked array naming it; the prior now does too."""
    from netcl_lite.context_mixing import StreamCache

    cache = StreamCache(4, np.array([2, 2]))
    with pytest.raises(TypeError, match="prior must not be a masked array"):
        cache.predict(np.ma.array(np.full(4, 0.25), mask=[True, False, False, False]))


def _mixer(vocab=8):
    from netcl_lite.context_mixing import ContextMixer

    return ContextMixer(np.arange(vocab), vocab, np.array([3, 3]), {i: bytes([97 + i]) for i in range(vocab)})


def test_context_mixer_refuses_a_masked_p_model_naming_it():
    """ContextMixer.predict took a masked p_model with no error: the mask was ignored and the values
    under it mixed in as the model's chances of the tokens it hid."""
    p_model = np.ma.array(np.full((2, 8), 1 / 8), mask=np.eye(2, 8, dtype=bool))
    with pytest.raises(TypeError, match="p_model must not be a masked array"):
        _mixer().predict(p_model)


def test_tree_sse_refuses_a_masked_p_naming_it():
    """TreeSSE returned a masked array for a masked p: a token's refined chance hidden, no error."""
    from netcl_lite.context_mixing import TreeSSE

    with pytest.raises(TypeError, match="p must not be a masked array"):
        TreeSSE(8)(np.ma.array(np.full((2, 8), 1 / 8), mask=np.eye(2, 8, dtype=bool)))


@pytest.mark.parametrize("p", [np.zeros((2, 8)), np.full((2, 8), -1.0),
                               np.array([[0.5, -0.5] + [0.125] * 6] * 2)], ids=["zeros", "negative", "one-negative"])
def test_tree_sse_refuses_a_row_that_is_no_distribution(p):
    """TreeSSE gave NaNs for a row of zeros, a uniform distribution for a row of -1s and negative
    chances for a row holding one negative value, all with no error (a NaN or an infinity was
    already refused)."""
    from netcl_lite.context_mixing import TreeSSE

    with pytest.raises(ValueError, match="p must hold probabilities >= 0"):
        TreeSSE(8)(p)


def test_tree_sse_still_refines_an_unnormalized_distribution():
    """Positive rows that do not sum to 1 are still refined and normalized, as before."""
    from netcl_lite.context_mixing import TreeSSE

    np.testing.assert_allclose(TreeSSE(8)(np.full((2, 8), 5.0)).sum(axis=1), 1.0)


def test_the_linear_mixer_refuses_masked_parts_naming_them():
    """ngram.Mixer.mix returned a masked mixture for a masked parts[0] and dropped the mask of a
    masked parts[1] (its hidden values mixed in), both with no error."""
    from netcl_lite import ngram

    mixer = ngram.Mixer(ngram.ORDERS)
    parts = [np.full((2, 8), 1 / 8) for _ in range(mixer.w.shape[2])]
    for i in (0, 1):
        masked = list(parts)
        masked[i] = np.ma.array(parts[i], mask=np.eye(2, 8, dtype=bool))
        with pytest.raises(TypeError, match=rf"parts\[{i}\] must not be a masked array"):
            mixer.mix(masked, np.array([0, 0]), np.array([1, 1]))


def _match():
    from netcl_lite.match import MatchModel

    model = MatchModel(np.arange(8), np.array([3, 3]))
    model.predict()
    return model


def _ngram():
    from netcl_lite.ngram import NGram

    model = NGram(np.arange(8), 8, 2)
    model.predict()
    return model


@pytest.mark.parametrize("make", [_match, _ngram], ids=["MatchModel", "NGram"])
def test_an_update_refuses_a_masked_active_naming_it(make):
    """A masked active was read through np.asarray, which drops the mask: a stream masked out was
    coded as active (its token written and counted), with no error; tokens were already refused."""
    with pytest.raises(TypeError, match="active must not be a masked array"):
        make().update(np.array([1, 2]), np.ma.array([True, True], mask=[False, True]))


def test_the_context_mixer_update_refuses_a_masked_active_naming_it():
    """ContextMixer.update read a masked active through np.asarray too, coding a masked-out stream."""
    mixer = _mixer()
    mixer.predict(np.full((2, 8), 1 / 8))
    with pytest.raises(TypeError, match="active must not be a masked array"):
        mixer.update(np.array([1, 2]), np.ma.array([True, True], mask=[False, True]))


def test_the_word_ngram_refuses_a_masked_unigram_naming_it():
    """WordNGram.predict took a masked unigram and returned a masked distribution (the hidden token's
    chance masked in every stream's row), with no error."""
    from netcl_lite.ngram import WordNGram

    words = WordNGram(np.arange(8), 8, 2, {i: bytes([97 + i]) for i in range(8)})
    with pytest.raises(TypeError, match="unigram must not be a masked array"):
        words.predict(np.ma.array(np.ones(8), mask=[True] + [False] * 7))


def test_stream_cache_refuses_a_prior_past_one_that_overflowed_to_inf():
    """A prior of finite values far over 1 (1e308) passed the 'finite and >= 0' check, and the
    prior's weight overflowed: every stream's unigram and bigram came back as inf, no error."""
    from netcl_lite.context_mixing import StreamCache

    cache = StreamCache(4, np.array([2, 2]))
    with pytest.raises(ValueError, match="prior must hold finite probabilities >= 0"):
        cache.predict(np.full(4, 1e308))
    unigram, bigram = cache.predict(np.full(4, 0.25))          # a distribution is still taken
    assert np.isfinite(unigram).all() and np.isfinite(bigram).all()


def test_the_adapter_refuses_a_masked_optimizer_state_array_naming_it(queue):
    """An optimizer state whose exp_avg_sq array was masked passed the checks (np.asarray drops
    the mask) and the values under the mask were taken as the run's mean squares, with no error."""
    from netcl_lite.adaptation import AdaptConfig, Adapter
    from netcl_lite.nn import DecoderLM, LMConfig

    model = DecoderLM(LMConfig(vocab_size=16, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8),
                      queue=queue, seed=1)
    params = model.parameters()
    state = {"step": 1, "exp_avg": {n: np.zeros(p.shape) for n, p in params.items()},
             "exp_avg_sq": {n: np.ones(p.shape) for n, p in params.items()}}
    name = sorted(params)[0]
    state["exp_avg_sq"][name] = np.ma.array(state["exp_avg_sq"][name], mask=True)
    with pytest.raises(TypeError, match=rf"state exp_avg_sq\.{name} must not be a masked array"):
        Adapter(model, 1, 0, AdaptConfig(optimizer="adam", window=4), state=state)


@pytest.mark.parametrize("text", ["[" * 200_000 + "]" * 200_000, "[1]", '{"step": 3}'],
                         ids=["nested-too-deeply", "not-an-object", "keys-missing"])
def test_resuming_from_a_trainer_state_that_is_no_trainer_state_is_named(tmp_path, queue, text):
    """load_checkpoint raised RecursionError for a trainer_state.json nested too deeply, and
    returned a list, or an object without 'loader' and 'log', silently, so that train(resume=True)
    then failed with a TypeError or KeyError naming no file. It now raises ValueError naming it."""
    from netcl_lite.nn import DecoderLM, LMConfig
    from netcl_lite.optim import AdamW
    from netcl_lite.train import TRAINER_STATE, load_checkpoint, parameter_groups, save_checkpoint

    model = DecoderLM(LMConfig(vocab_size=16, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8),
                      queue=queue, seed=1)
    folder = tmp_path / "run"
    save_checkpoint(folder, model, AdamW(parameter_groups(model, 0.1), lr=1e-3), {"step": 1, "loader": {}, "log": []})
    assert load_checkpoint(folder, model, AdamW(parameter_groups(model, 0.1), lr=1e-3))["step"] == 1
    (folder / TRAINER_STATE).write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="trainer_state.json: not a trainer state"):
        load_checkpoint(folder, model, AdamW(parameter_groups(model, 0.1), lr=1e-3))
