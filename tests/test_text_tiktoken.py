"""Identity with tiktoken: train here, hand tiktoken the same ranks and pattern, compare ids on held-out text.

The corpus is built from what every CPython install has: the standard library's
own source files (code), ``pydoc_data`` topics (English prose), plus the
multilingual lines below. Documents are split into training and held-out sets.
"""

import importlib
import inspect
import sysconfig
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings

from text_cases import budget, EDGE_CASES, MULTILINGUAL, RANDOM_TEXT, read

from netcl_lite.text import GPT2_PATTERN, GPT4_PATTERN, BPETokenizer

SPECIALS = {"<|endoftext|>": 5000, "<|fim_prefix|>": 5001}


@pytest.fixture(scope="module")
def corpus():
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    sources = sorted(stdlib.glob("*.py"))
    code_train = [read(p) for i, p in enumerate(sources) if i % 4 != 3]
    code_held = [read(p) for i, p in enumerate(sources) if i % 4 == 3]
    try:
        from pydoc_data.topics import topics
        prose = [topics[k] for k in sorted(topics)]
    except ImportError:  # a distribution that strips pydoc_data: module docstrings instead
        names = ("json", "textwrap", "argparse", "collections", "typing", "unittest", "logging")
        prose = [inspect.getdoc(importlib.import_module(name)) or "" for name in names]
    train = budget(code_train, 1_500_000) + budget(prose[::2], 250_000) + MULTILINGUAL[::2] * 20
    held = {"code": budget(code_held, 300_000), "prose": budget(prose[1::2], 200_000),
            "multilingual": MULTILINGUAL, "edge": EDGE_CASES}
    return train, held


@pytest.fixture(scope="module", params=[GPT4_PATTERN, GPT2_PATTERN], ids=["gpt4", "gpt2"])
def pair(request, corpus):
    train, _ = corpus
    tok = BPETokenizer(pattern=request.param, special_tokens=SPECIALS)
    tok.train_from_iterator(train, 4096)
    enc = tiktoken.Encoding(name=f"netcl_{id(tok)}", pat_str=request.param,
                            mergeable_ranks=tok.mergeable_ranks(), special_tokens=SPECIALS)
    return tok, enc


@pytest.mark.parametrize("kind", ["code", "prose", "multilingual", "edge"])
def test_identical_ids_on_held_out_text_line_by_line(pair, corpus, kind):
    tok, enc = pair
    assert len(tok.merges) == 4096 - 256
    mismatches = []
    for doc in corpus[1][kind]:
        for line in [*doc.splitlines(keepends=True), doc]:
            if tok.encode_ordinary(line) != enc.encode_ordinary(line):
                mismatches.append(line)
    assert not mismatches, f"{len(mismatches)} lines differ, first: {mismatches[0][:200]!r}"
    text = "".join(corpus[1][kind])
    ids = tok.encode_ordinary(text)
    assert tok.decode_bytes(ids) == enc.decode_bytes(ids) == text.encode()


@settings(max_examples=300, deadline=None)
@given(text=RANDOM_TEXT)
def test_identical_ids_on_random_text(pair, text):
    tok, enc = pair
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)


def test_special_token_policy_matches_tiktoken(pair):
    tok, enc = pair
    text = "doc one<|endoftext|>doc two<|fim_prefix|>x"
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert tok.encode(text, allowed_special={"<|endoftext|>"}, disallowed_special=()) == \
        enc.encode(text, allowed_special={"<|endoftext|>"}, disallowed_special=())
    assert tok.encode(text, disallowed_special=()) == enc.encode(text, disallowed_special=()) == \
        tok.encode_ordinary(text)
    for encoder in (tok, enc):
        with pytest.raises(ValueError):
            encoder.encode(text)


def test_tiktoken_ranks_rebuild_the_same_tokenizer(pair):
    tok, enc = pair
    rebuilt = BPETokenizer.from_mergeable_ranks(enc._mergeable_ranks, pattern=enc._pat_str,
                                                special_tokens=enc._special_tokens)
    assert dict(rebuilt.merges) == dict(tok.merges)
    assert dict(rebuilt.special_tokens) == SPECIALS
