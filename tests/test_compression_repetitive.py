"""The compressor on text that repeats one byte: each step's work must not depend on how
repetitive the text is. The coded counts' buffer holds each (context, token) pair once, with its
weight, so a lookup of a context visits at most one buffered entry per token that followed it; a
buffer holding one entry per addition made every lookup of a repeated pair span all its copies
(streams × steps since the last merge), and the step slowed as the text repeated.

The work is counted, not timed: the entries of the buffer each lookup's range spans, read from the
buffer itself before the lookup runs (performance as such is measured in ``benchmarks/``)."""

from __future__ import annotations

import numpy as np
import pytest

from netcl_lite import compression as cz
from netcl_lite import ngram
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer

TEXT = ("Counts of what followed each context sharpen the guesses as the text goes on.\n"
        "A run of one letter, aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, is text too.\n") * 8

#: a one-layer model over a 16-token window: the mixer's host work, not the model, is at stake
SMALL = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
             num_key_value_heads=1, max_position_embeddings=16)

#: bytes of one letter: several streams (their copies of one pair met in the buffer) over several
#: merges of the buffer into the coded table
REPEATED = 1 << 16


@pytest.fixture(scope="module")
def runs(queue):
    """(model, tokenizer, primer ids): a 300-token BPE that learned runs of 'a' up to 64 long."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, **SMALL), queue=queue, seed=3)
    return model, tok, np.asarray(tok.encode_ordinary(TEXT[:400]), np.int64)


@pytest.fixture
def visits(monkeypatch):
    """[queries, buffered entries their ranges span] over every count model's lookups (the token
    n-gram's and the word n-gram's), counted from the buffer as each lookup finds it."""
    seen = [0, 0]
    lookup = ngram._Counts.lookup

    def counting(self, keys):
        lo, hi = keys << self.tb, (keys + np.uint64(1)) << self.tb      # a context's (context, token) keys
        seen[0] += keys.size
        seen[1] += int((np.searchsorted(self.recent, hi) - np.searchsorted(self.recent, lo)).sum())
        return lookup(self, keys)

    monkeypatch.setattr(ngram._Counts, "lookup", counting)
    return seen


@pytest.mark.slow
def test_one_byte_repeated_codes_with_one_buffered_entry_per_lookup_and_round_trips(runs, visits):
    """64 KiB of 'a' is one token over and over, so each context has one successor: every lookup
    visits at most one buffered entry (the code that buffered each addition visited 125 per lookup
    here), and the file decodes to the input."""
    model, tok, primer = runs
    data = b"a" * REPEATED
    ids = cz.tokenize(data, tok)
    assert np.unique(ids).size == 1, "the input is one token repeated"
    assert cz.stream_count(ids.size) > 1, "several streams code it side by side"
    assert ids.size // cz.stream_count(ids.size) > 4 * ngram._MERGE_EVERY, "the buffer fills and merges several times"
    blob = cz.compress(data, model, tok, primer=primer)
    queries, spanned = visits
    assert queries > 0, "the count models looked nothing up"
    assert spanned <= queries, f"a lookup spans {spanned / queries:.1f} buffered entries of one pair on average"
    assert cz.decompress(blob, model, tok, primer=primer) == data, "the round trip failed"
