"""The decoder computes the probabilities the encoder computed; when it does not (another model's
arithmetic, a changed forward pass), what it decodes is not the original, and decompress says so
rather than returning it. With a byte-level tokenizer (no merges: every id spells one byte) the
diverged decode spells exactly the original's length, so only the checksum can tell: the test reaches
that check with a model that predicts differently on the decoding side alone."""

from __future__ import annotations

import numpy as np
import pytest

from netcl_lite import compression as cz
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer

TEXT = ("A decoder that computes other probabilities than its encoder reads another text "
        "out of the same bits.\n") * 3


@pytest.fixture(scope="module")
def byte_level(queue):
    """(model, tokenizer): a BPE of the 256 byte tokens alone and a one-layer model of as many ids."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 256, progress=False)
    assert len(tok.vocab) == 256 and all(len(piece) == 1 for piece in tok.vocab.values())
    config = LMConfig(vocab_size=256, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16)
    return DecoderLM(config, queue=queue, seed=3), tok


def test_a_decoder_that_predicts_otherwise_is_refused_by_the_checksum(byte_level, monkeypatch):
    model, tok = byte_level
    data, primer = (TEXT * 2).encode(), np.asarray(tok.encode_ordinary(TEXT), np.int64)
    blob = cz.compress(data, model, tok, mix=True, primer=primer)     # the n-gram counts learn the repeats
    assert blob[5] == cz.MIXED and cz.decompress(blob, model, tok, primer=primer) == data   # in step: the original
    n_tokens = cz.read_header(blob)["tokens"]
    last = int(cz.segments(n_tokens, cz.stream_count(n_tokens))[0])     # the decoder's steps
    probabilities = cz._Predictor.probabilities
    steps = []

    def otherwise(self):
        """At the last step, the model's probabilities given each to the next id over: the same values,
        other ids, as a model with other arithmetic might give. (Earlier, the range decoder would
        read on from a state the encoder never left, and may find the payload invalid first.)"""
        p = probabilities(self)
        steps.append(1)
        return np.roll(p, 1, axis=-1) if len(steps) == last else p

    monkeypatch.setattr(cz._Predictor, "probabilities", otherwise)
    with pytest.raises(ValueError) as diverged:
        cz.decompress(blob, model, tok, primer=primer)
    message = str(diverged.value)
    assert message == ("blob is corrupted: the decoded bytes do not match the original's checksum (or the model "
                       "computes other probabilities than the compressing side's)"), message
    assert len(steps) == last, "the decoder did not reach the step that predicts otherwise"
