"""The compressor on text that repeats one byte: each step's work must not depend on how
repetitive the text is (the count models' buffers and caches stay bounded), so a megabyte of
one byte codes in about the time its token count says, and round-trips."""

from __future__ import annotations

import time

import numpy as np
import pytest

from netcl_lite import compression as cz
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer

TEXT = ("Counts of what followed each context sharpen the guesses as the text goes on.\n"
        "A run of one letter, aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, is text too.\n") * 8

#: a one-layer model over a 16-token window: the mixer's host work, not the model, is at stake
SMALL = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
             num_key_value_heads=1, max_position_embeddings=16)


@pytest.fixture(scope="module")
def runs(queue):
    """(model, tokenizer, primer ids): a 300-token BPE that learned runs of 'a' up to 64 long."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, **SMALL), queue=queue, seed=3)
    return model, tok, np.asarray(tok.encode_ordinary(TEXT[:400]), np.int64)


@pytest.mark.slow
def test_a_mebibyte_of_one_byte_round_trips_in_the_time_its_tokens_take(runs):
    """1 MiB of 'a' codes and decodes to itself; its seconds per token stay within 3x those of
    varied text of as many tokens coded in the same run (a ratio, not a timed limit)."""
    model, tok, primer = runs
    data = b"a" * (1 << 20)
    n_tokens = cz.tokenize(data, tok).size
    rng = np.random.default_rng(0)
    words = TEXT.replace(",", "").split()
    varied = b""
    while cz.tokenize(varied, tok).size < n_tokens:
        varied += " ".join(rng.choice(words, 2000)).encode() + b"\n"
    varied = varied[:len(varied) * n_tokens // cz.tokenize(varied, tok).size]

    def per_token(payload: bytes) -> float:
        began = time.perf_counter()
        blob = cz.compress(payload, model, tok, primer=primer)
        assert cz.decompress(blob, model, tok, primer=primer) == payload, "the round trip failed"
        return (time.perf_counter() - began) / cz.tokenize(payload, tok).size

    repeated, text = per_token(data), per_token(varied)
    assert repeated < 3 * text, f"a repeated byte costs {repeated / text:.1f}x varied text per token"
