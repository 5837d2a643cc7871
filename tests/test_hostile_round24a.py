"""Issue 58, an independent hostile check, round 24a: the adaptation's own arguments.

An :class:`~netcl_lite.adaptation.Adapter` (and :func:`~netcl_lite.dynamic_evaluation.coded_bits`,
which hands it ``train_ids``) refuses training ids it cannot read with an error naming
``train_ids``, the parameter the caller passed, whatever the optimizer.
"""

from __future__ import annotations

import numpy as np
import pytest

from netcl_lite.adaptation import AdaptConfig, Adapter
from netcl_lite.dynamic_evaluation import coded_bits
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer

TEXT = "Counts of what followed each context sharpen the guesses as the text goes on.\n" * 4


@pytest.fixture(scope="module")
def tiny(queue):
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 280, progress=False)
    model = DecoderLM(LMConfig(vocab_size=280, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16),
                      queue=queue, seed=3)
    return model, tok, np.asarray(tok.encode_ordinary(TEXT), np.int64)


BAD_TRAIN_IDS = [pytest.param("abc", id="a-string"), pytest.param(np.full(100, 0.5), id="floats"),
                 pytest.param(np.full(100, 10**6), id="past-the-vocabulary"),
                 pytest.param(np.zeros((4, 40), np.int64), id="two-dimensional")]


@pytest.mark.parametrize("optimizer", ["rms", "sgd", "adam"])
@pytest.mark.parametrize("train_ids", BAD_TRAIN_IDS)
def test_the_adapter_names_train_ids_it_cannot_read(tiny, optimizer, train_ids):
    model, _, _ = tiny
    with pytest.raises(ValueError, match=r"^train_ids "):
        Adapter(model, 2, 0, AdaptConfig(optimizer=optimizer), train_ids=train_ids)


def test_the_rms_adapter_names_train_ids_shorter_than_a_window(tiny):
    """The mean squares read one window of the training ids and its target: fewer are refused as
    ``train_ids``, the parameter given, not as ``ids``."""
    model, tok, ids = tiny
    with pytest.raises(ValueError, match=r"^train_ids holds 3 tokens"):
        Adapter(model, 2, 0, AdaptConfig(optimizer="rms"), train_ids=np.zeros(3, np.int64))
    with pytest.raises(ValueError, match=r"^train_ids holds 3 tokens"):
        coded_bits(model, tok, ids[:40], AdaptConfig(), train_ids=np.zeros(3, np.int64))


@pytest.mark.parametrize("train_ids", BAD_TRAIN_IDS)
def test_coded_bits_names_train_ids_it_cannot_read(tiny, train_ids):
    model, tok, ids = tiny
    with pytest.raises(ValueError, match=r"^train_ids "):
        coded_bits(model, tok, ids[:40], AdaptConfig(), train_ids=train_ids)


# -- the match model ----------------------------------------------------------------------------------------

def test_the_match_model_refuses_a_token_past_a_stream_s_length_and_keeps_its_text():
    """A stream marked active after its ``lengths`` tokens would write into the next stream's text
    (silently changing what the next stream had coded) or past the text's end (IndexError): it is
    refused naming ``active``, and the model is left as it was."""
    from netcl_lite.match import MatchModel

    m = MatchModel(np.arange(10), np.array([2, 5]))
    for _ in range(2):
        m.predict()
        m.update(np.array([7, 8]), np.array([True, True]))
    text = m.text.copy()
    m.predict()
    with pytest.raises(ValueError, match=r"^active marks stream 0 .* lengths gives it 2 tokens"):
        m.update(np.array([7, 8]), np.array([True, True]))
    np.testing.assert_array_equal(m.text, text)
    m.update(np.array([0, 8]), np.array([False, True]))             # the step goes on as it should
    assert m.text[10:].tolist() == [7, 7, 8, 8, 8, -1, -1]

    last = MatchModel(np.arange(10), np.array([2]))
    for _ in range(2):
        last.predict()
        last.update(np.array([1]), np.array([True]))
    last.predict()
    with pytest.raises(ValueError, match=r"^active marks stream 0 "):
        last.update(np.array([1]), np.array([True]))


def test_the_mixer_refuses_a_stream_past_its_length_before_any_part_learns():
    """The mix's parts learn in turn; the match model's refusal of a finished stream comes before
    any of them, so a refused step leaves the whole mixer as it was and can be retried."""
    import copy

    from netcl_lite.context_mixing import TECHNIQUES, ContextMixer

    pieces = {i: bytes([i]) for i in range(256)}
    mixer = ContextMixer(np.arange(50) % 256, 256, np.array([2, 3]), pieces, TECHNIQUES)
    p = np.full((2, 256), 1 / 256)
    for _ in range(2):
        mixer.predict(p)
        mixer.update(np.array([7, 8]), np.array([True, True]))
    mixer.predict(p)
    before = copy.deepcopy(mixer.__dict__)
    with pytest.raises(ValueError, match=r"^active marks stream 0 "):
        mixer.update(np.array([7, 8]), np.array([True, True]))
    after = mixer.__dict__
    for name, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(after[name], value, err_msg=name)
    for part in ("linear", "geometric", "sse", "words", "streams", "ngram"):
        if before.get(part) is None:
            continue
        for name, value in vars(before[part]).items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(getattr(after[part], name), value, err_msg=f"{part}.{name}")
    mixer.update(np.array([0, 8]), np.array([False, True]))


# -- the adapter's refill -----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [-3, 10**6])
def test_a_refused_refill_leaves_the_cache_it_was_given(tiny, bad):
    """Inputs past the vocabulary were refused only by the forward pass, after the cache had been
    emptied: a failed refill lost every position it held (and named ``ids``, not ``inputs``)."""
    from netcl_lite.nn import KVCache

    model, _, _ = tiny
    c = model.config
    adapter = Adapter(model, 2, 0, AdaptConfig(chunk=4, optimizer="sgd"))
    cache = KVCache(model.queue, c.num_hidden_layers, 2, c.num_key_value_heads, c.head_dim,
                    c.max_position_embeddings)
    adapter.model.hidden(np.zeros((2, 3), np.int64), cache).numpy()
    assert cache.length(0) == 3
    with pytest.raises(ValueError, match=r"^inputs must lie in \[0, 280\)"):
        adapter.refill(cache, np.full((2, 5), bad))
    assert cache.length(0) == 3
    adapter.refill(cache, np.zeros((2, 5), np.int64))
    assert cache.length(0) == 3


@pytest.mark.parametrize("other", [dict(num_hidden_layers=2), dict(num_key_value_heads=2)])
def test_a_refill_with_another_model_s_cache_is_refused_and_leaves_it_whole(tiny, other):
    """A cache of another model's shape was refused by the forward pass, after it had been emptied."""
    from netcl_lite.nn import KVCache

    model, _, _ = tiny
    adapter = Adapter(model, 2, 0, AdaptConfig(chunk=4, optimizer="sgd"))
    twin = DecoderLM(LMConfig(**{**model.config.__dict__, **other}), queue=model.queue, seed=4)
    c = twin.config
    cache = KVCache(model.queue, c.num_hidden_layers, 2, c.num_key_value_heads, c.head_dim,
                    c.max_position_embeddings)
    twin.hidden(np.zeros((2, 3), np.int64), cache).numpy()
    with pytest.raises(ValueError, match=r"^cache holds "):
        adapter.refill(cache, np.zeros((2, 5), np.int64))
    assert cache.length(0) == 3


def test_the_adapter_refuses_more_streams_than_a_coder_has_naming_streams(tiny):
    """The history is sized by ``streams`` (one row of tokens each): 10**12 streams was a MemoryError."""
    model, _, _ = tiny
    with pytest.raises(ValueError, match=r"^streams must be at most MAX_STREAMS"):
        Adapter(model, 10**12, 0, AdaptConfig(optimizer="sgd"))
    Adapter(model, 1024, 0, AdaptConfig(optimizer="sgd"))
