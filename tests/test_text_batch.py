"""The batch API (``encode_ordinary_batch``, ``encode_batch``, ``decode_batch``) against a loop of
single calls and against tiktoken's own batch calls, on the host path and on the device path.

A tokenizer with ``kernel_text_min_bytes = 0`` sends every batch to the device as one text with
its documents' offsets (``DeviceMerger.merge_documents``); one with ``None`` loops over single
calls on the host. Documents are chosen so that, joined, they would split or merge differently:
a document boundary must stop both.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from text_cases import EDGE_CASES, HARD_STRINGS, MULTILINGUAL, RANDOM_TEXT, TRICKY_TEXT

from netcl_lite.text import GPT2_PATTERN, BPETokenizer, device_merge, dispatch
from netcl_lite.text.device_merge import MAX_CHUNK

#: Pairs of documents that, joined, would split or merge across the boundary.
ACROSS = [("hel", "lo"), (" ", "x"), ("\r", "\n"), ("12", "34"), ("'", "s"), ("don'", "t"), ("we'", "ll"),
          ("  ", "x"), ("caf", "é"), (" ", " "), ("\n", "\n\n"), ("...", "!!"), ("日本", "語"),
          ("a" * MAX_CHUNK, "a"), ("é" * 150, "é" * 150), ("   ", ""), ("", "hello"), ("1", "2"), ("1", "23"),
          ("Th", "e"), (" the", "re"), ("\t", "x"), ("👍", "\U0001f3fd")]

#: Fragments a random batch is drawn from: the pairs above, and text dense in what the pattern
#: treats specially.
FRAGMENT = st.sampled_from([piece for pair in ACROSS for piece in pair]) | TRICKY_TEXT | RANDOM_TEXT
DOCUMENTS = st.lists(FRAGMENT, max_size=12)


def host_and_device(tok: BPETokenizer) -> tuple[BPETokenizer, BPETokenizer]:
    """Two fresh copies of ``tok``: one that loops on the host, one that sends every batch to the device."""
    host, device = pickle.loads(pickle.dumps(tok)), pickle.loads(pickle.dumps(tok))
    host.kernel_text_min_bytes, device.kernel_text_min_bytes = None, 0
    return host, device


@pytest.fixture(scope="module")
def cl100k_paths(cl100k):
    return host_and_device(cl100k[0])


@pytest.fixture(scope="module")
def small_paths(small):
    return host_and_device(small)


class Calls:
    """Counts the device calls of a tokenizer's merger (its batches' groups)."""

    def __init__(self, tok: BPETokenizer):
        merger = tok._dispatch.merger()
        self.sizes, merge_documents = [], merger.merge_documents
        merger.merge_documents = lambda data, starts: (self.sizes.append(len(starts) - 1),
                                                       merge_documents(data, starts))[1]


# -- equal to single calls and to tiktoken ---------------------------------------------------------

@pytest.mark.parametrize("pair", ACROSS, ids=repr)
def test_no_split_or_merge_crosses_a_document_boundary(cl100k, cl100k_paths, pair):
    _, enc = cl100k
    expected = [enc.encode_ordinary(doc) for doc in pair]
    for tok in cl100k_paths:
        assert tok.encode_ordinary_batch(list(pair)) == expected
        assert tok.encode_ordinary_batch(list(pair) * 3) == expected * 3


def test_the_boundary_pairs_would_split_or_merge_differently_joined(cl100k):
    """The pairs above test something: joined, each but those with an empty side splits or encodes
    otherwise than its two documents apart."""
    tok, enc = cl100k
    same = [(a, b) for a, b in ACROSS if enc.encode_ordinary(a + b) == enc.encode_ordinary(a) + enc.encode_ordinary(b)
            and tok._split(a + b) == tok._split(a) + tok._split(b)]
    assert same == [("   ", ""), ("", "hello")]


@settings(max_examples=300, deadline=None)
@given(docs=DOCUMENTS)
@pytest.mark.slow
def test_batch_equals_single_calls_equals_tiktoken(cl100k, cl100k_paths, docs):
    _, enc = cl100k
    expected = enc.encode_ordinary_batch(docs)
    host, device = cl100k_paths
    assert [host.encode_ordinary(doc) for doc in docs] == expected
    assert host.encode_ordinary_batch(docs) == expected
    assert device.encode_ordinary_batch(docs) == expected


@settings(max_examples=150, deadline=None)
@given(docs=DOCUMENTS)
def test_batch_on_the_four_launch_path(cl100k, cl100k_paths, docs):
    _, enc = cl100k
    one_group, device_merge.ONE_GROUP_BYTES = device_merge.ONE_GROUP_BYTES, 0
    try:
        assert cl100k_paths[1].encode_ordinary_batch(docs) == enc.encode_ordinary_batch(docs)
    finally:
        device_merge.ONE_GROUP_BYTES = one_group


@pytest.mark.parametrize("kind", ["english", "code", "multilingual", "edge"])
def test_paragraphs_of_real_text_identical_to_tiktoken(cl100k, cl100k_paths, texts, kind):  # noqa: F811
    _, enc = cl100k
    paragraphs = [p for doc in texts[kind] for p in doc.split("\n\n")]
    expected = enc.encode_ordinary_batch(paragraphs)
    for tok in cl100k_paths:
        got = tok.encode_ordinary_batch(paragraphs)
        differ = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
        assert len(got) == len(expected) and not differ, f"{len(differ)} differ, first {paragraphs[differ[0]]!r}"


@settings(max_examples=100, deadline=None)
@given(docs=st.lists(TRICKY_TEXT | st.sampled_from(HARD_STRINGS), max_size=10))
def test_a_trained_tokenizer_batch_equals_its_single_calls(small_paths, docs):
    host, device = small_paths
    expected = [host.encode_ordinary(doc) for doc in docs]
    assert host.encode_ordinary_batch(docs) == expected
    assert device.encode_ordinary_batch(docs) == expected


@pytest.mark.slow
def test_one_device_call_for_a_whole_batch(cl100k):
    tok = pickle.loads(pickle.dumps(cl100k[0]))
    calls = Calls(tok)
    docs = [line for text in MULTILINGUAL + EDGE_CASES for line in text.split()] * 20
    assert sum(map(len, map(str.encode, docs))) >= tok.kernel_text_min_bytes
    assert tok.encode_ordinary_batch(docs) == [tok.encode_ordinary(doc) for doc in docs]
    assert calls.sizes == [len(docs)]
    cached = len(tok._cache)
    tok.encode_ordinary_batch(docs)
    assert len(tok._cache) == cached and calls.sizes == [len(docs)] * 2   # the device path skips the cache


def test_a_short_batch_stays_on_the_cache(cl100k):
    tok = pickle.loads(pickle.dumps(cl100k[0]))
    calls = Calls(tok)
    assert tok.encode_ordinary_batch(["a short", "batch"]) == cl100k[1].encode_ordinary_batch(["a short", "batch"])
    assert calls.sizes == []


@pytest.mark.slow
def test_a_large_batch_takes_a_few_device_calls(cl100k, monkeypatch):
    tok, enc = pickle.loads(pickle.dumps(cl100k[0])), cl100k[1]
    calls = Calls(tok)
    monkeypatch.setattr(dispatch, "GROUP_BYTES", 1000)
    monkeypatch.setattr(device_merge, "MAX_TEXT_BYTES", 3000)
    docs = ["the river " * 30, "x", "", "road and fox " * 100, "日本語 " * 400, "café " * 100, "end"]
    sizes = [len(doc.encode()) for doc in docs]            # 300, 1, 0, 1300, 4000 (over the device's), 600, 3
    assert tok.encode_ordinary_batch(docs) == enc.encode_ordinary_batch(docs)
    assert calls.sizes == [3, 1, 2] and sizes[4] > 3000     # [river, x, ""], [road], then 日本語 on the host, [café, end]


def test_long_chunks_in_a_batch_are_spliced_into_their_documents(cl100k, cl100k_paths):
    _, enc = cl100k
    over = "ü" * (MAX_CHUNK // 2) + "x"                     # one chunk of MAX_CHUNK + 1 bytes: the host's loop
    docs = [over, "a", f"{over} {over}", "", "b " * 10, over + "!", "é" * 200, "y"]
    for tok in cl100k_paths:
        assert tok.encode_ordinary_batch(docs) == enc.encode_ordinary_batch(docs)
        assert tok.encode_ordinary_batch(docs[::-1]) == enc.encode_ordinary_batch(docs[::-1])


def test_other_patterns_and_merge_lists_loop_on_the_host(small, tmp_path):
    gpt2 = BPETokenizer(pattern=GPT2_PATTERN)
    gpt2.train_from_iterator(["the river and the road"] * 3, 270)
    path = tmp_path / "tokenizer.json"
    small.save_tokenizer_json(path)
    docs = ["the road", " and", "", "the river " * 300]
    for tok in (gpt2, BPETokenizer.from_tokenizer_json(path)):
        tok.kernel_text_min_bytes = 0
        assert tok.encode_ordinary_batch(docs) == [tok.encode_ordinary(doc) for doc in docs]
        assert tok._dispatch.built is None


# -- edge cases ------------------------------------------------------------------------------------

def test_empty_batches_and_empty_documents(cl100k_paths):
    for tok in cl100k_paths:
        assert tok.encode_ordinary_batch([]) == tok.encode_batch([]) == tok.decode_batch([]) == []
        assert tok.encode_ordinary_batch([""] * 5) == [[]] * 5
        assert tok.encode_ordinary_batch(("x", "")) == [[87], []]                # any iterable of str


def test_single_characters(cl100k, cl100k_paths):
    _, enc = cl100k
    chars = [chr(c) for c in range(1, 0x250)] + list("日本語👍\U0001f3fd\u0301\u200b\u3000")
    expected = enc.encode_ordinary_batch(chars)
    for tok in cl100k_paths:
        assert tok.encode_ordinary_batch(chars) == expected


@pytest.mark.slow
def test_a_ten_megabyte_document_among_small_ones(cl100k, cl100k_paths):
    _, enc = cl100k
    big = "The river runs past the road, 12 times a day; naïve café.\n" * 172_000
    assert len(big.encode()) > 10_000_000
    docs = ["hello", big, "", " world", "日本"]
    expected = enc.encode_ordinary_batch(docs, num_threads=2)
    calls = Calls(cl100k_paths[1])
    assert cl100k_paths[1].encode_ordinary_batch(docs) == expected
    assert calls.sizes == [1, 1, 3]                          # the big one is a call of its own
    assert cl100k_paths[0].encode_ordinary_batch(docs) == expected


@pytest.mark.parametrize("path", [0, 1], ids=["host", "device"])
def test_a_lone_surrogate_names_its_document(cl100k_paths, path):
    with pytest.raises(ValueError, match=r"text\[2\].*lone surrogate '\\udc80' at index 4"):
        cl100k_paths[path].encode_ordinary_batch(["fine " * 500, "ok", "bad \udc80 text"])


@pytest.mark.parametrize("path", [0, 1], ids=["host", "device"])
def test_items_that_are_not_str_are_named(cl100k_paths, path):
    tok = cl100k_paths[path]
    with pytest.raises(TypeError, match=r"text\[1\] must be a str, got bytes"):
        tok.encode_ordinary_batch(["ok", b"bytes"])
    with pytest.raises(TypeError, match=r"text\[2\] must be a str, got NoneType"):
        tok.encode_batch(["a", "b", None])
    with pytest.raises(TypeError, match="text must be a list of str .* got str; wrap a single text"):
        tok.encode_ordinary_batch("one text")
    with pytest.raises(TypeError, match="text must be a list of str .* got int"):
        tok.encode_ordinary_batch(3)


@pytest.mark.parametrize("value, err, match", [
    (0, ValueError, "num_threads must be >= 1 .*, got 0"),
    (2.0, TypeError, "num_threads must be an int .*, got float"),
    (True, TypeError, "num_threads must be an int .*, got bool"),
])
def test_bad_num_threads_is_named(cl100k_paths, value, err, match):
    tok = cl100k_paths[0]
    for call in (lambda: tok.encode_ordinary_batch(["x"], num_threads=value),
                 lambda: tok.encode_batch(["x"], num_threads=value),
                 lambda: tok.decode_batch([[1]], num_threads=value)):
        with pytest.raises(err, match=match):
            call()


def test_merge_documents_checks_its_offsets(small):
    merger = host_and_device(small)[1]._dispatch.merger()
    for starts in ([0, 2], [1, 3], [0, 2, 1, 3], [0], np.zeros((2, 2))):
        with pytest.raises(ValueError, match="doc_starts must run from 0 to len"):
            merger.merge_documents(b"abc", starts)


@settings(max_examples=100, deadline=None)
@given(docs=st.lists(TRICKY_TEXT, max_size=8))
@pytest.mark.slow
def test_merge_documents_equals_merge_text_of_each(small, docs):
    merger = host_and_device(small)[1]._dispatch.merger()
    datas = [doc.encode() for doc in docs]
    ids, firsts, longs = merger.merge_documents(b"".join(datas), np.cumsum([0] + list(map(len, datas))))
    each = [merger.merge_text(data) for data in datas]
    assert [ids[a:b].tolist() for a, b in zip(firsts[:-1], firsts[1:])] == [got.tolist() for got, _ in each]
    assert len(longs) == sum(len(found) for _, found in each)


# -- encode_batch and decode_batch -------------------------------------------------------------------

def test_encode_batch_with_special_tokens_equals_tiktoken(cl100k, cl100k_paths):
    _, enc = cl100k
    docs = ["a<|endoftext|>b", "<|fim_prefix|>x<|fim_suffix|>", "", "plain " * 400, "<|endoftext|>", "tail<|endofprompt|>"]
    for tok in cl100k_paths:
        assert tok.encode_batch(docs, allowed_special="all") == enc.encode_batch(docs, allowed_special="all")
        assert tok.encode_batch(docs, disallowed_special=()) == enc.encode_batch(docs, disallowed_special=())
        some = {"<|endoftext|>", "<|fim_prefix|>", "<|fim_suffix|>"}
        assert (tok.encode_batch(docs, allowed_special=some, disallowed_special=())
                == enc.encode_batch(docs, allowed_special=some, disallowed_special=()))
        assert tok.encode_batch(docs[2:4]) == enc.encode_batch(docs[2:4]) == tok.encode_ordinary_batch(docs[2:4])


def test_a_disallowed_special_token_names_its_document(cl100k, cl100k_paths):
    _, enc = cl100k
    docs = ["fine", "also fine", "not <|endofprompt|> fine"]
    for tok in cl100k_paths:
        with pytest.raises(ValueError, match=r"text\[2\] contains the special token '<\|endofprompt\|>' at index 4"):
            tok.encode_batch(docs)
        with pytest.raises(ValueError, match=r"text\[2\] contains the special token '<\|endofprompt\|>'"):
            tok.encode_batch(docs, allowed_special={"<|endoftext|>"})
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode_batch(docs)                                   # tiktoken refuses the same batch


def test_decode_batch_equals_tiktoken(cl100k, cl100k_paths):
    _, enc = cl100k
    docs = MULTILINGUAL + EDGE_CASES
    batches = enc.encode_ordinary_batch(docs) + [[100257, 15339], [1]]
    cut = [ids[:1] for ids in batches if ids]                       # may end inside a character
    for tok in cl100k_paths:
        assert tok.decode_batch(batches) == enc.decode_batch(batches)
        assert tok.decode_batch(cut) == enc.decode_batch(cut)
        assert tok.decode_batch(cut, errors="ignore") == enc.decode_batch(cut, errors="ignore")
        assert tok.decode_batch((np.array(ids, np.int64) for ids in batches)) == enc.decode_batch(batches)


def test_decode_batch_errors_name_the_document(cl100k_paths):
    tok = cl100k_paths[0]
    with pytest.raises(ValueError, match=r"batch\[1\]: decode: unknown token ids \[999999\]"):
        tok.decode_batch([[1], [999999]])
    with pytest.raises(TypeError, match=r"batch\[0\]: ids must be ints"):
        tok.decode_batch([["a"]])
    with pytest.raises(UnicodeDecodeError) as info:
        tok.decode_batch([[1], [tok._ids[b"\xe6"]]], errors="strict")       # a lead byte alone
    assert "in batch[1]" in info.value.__notes__
    with pytest.raises(TypeError, match="batch must be a list of token-id lists"):
        tok.decode_batch("abc")
    with pytest.raises(TypeError, match="errors must be a str"):
        tok.decode_batch([[1]], errors=None)


def test_signatures_match_tiktoken(cl100k):
    import inspect
    _, enc = cl100k
    tok = cl100k[0]
    for name in ("encode_ordinary_batch", "encode_batch", "decode_batch"):
        ours, theirs = inspect.signature(getattr(tok, name)), inspect.signature(getattr(enc, name))
        assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
               [(p.name, p.kind, p.default) for p in theirs.parameters.values()]
