"""The merge kernel (``kernels/bpe.cl``) against the Python merge loop, its reference.

Every comparison runs a tokenizer with ``kernel_min_bytes = 0`` (each call's new chunks go to
the kernel) beside one with ``None`` (the Python loop only) or tiktoken, each with a fresh
cache, so no id of one path can leak into the other.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from text_cases import (EDGE_CASES, HARD_STRINGS, MULTILINGUAL, RANDOM_TEXT, TRICKY, TRICKY_TEXT, random_ranks,
                        text_without_surrogates, twins)

from netcl_lite.text import GPT2_PATTERN, GPT4_PATTERN, BPETokenizer, bpe, device_merge
from netcl_lite.text.byte_pair import chunk_encoder, listed_pair_table, rank_pair_table
from netcl_lite.text.device_merge import (MAX_CHUNK, DeviceMerger, home_slots, pair_entries, token_hashes,
                                          token_slots)


class Spy:
    """Wraps a tokenizer's merger and records the pieces each launch got."""

    def __init__(self, tok: BPETokenizer):
        tok.kernel_text_min_bytes = None
        limit, tok.kernel_min_bytes = tok.kernel_min_bytes, 0
        tok.encode_ordinary(" zqxqzjkv vkqvkqwz")           # chunks no vocabulary here holds whole
        tok.kernel_min_bytes = limit
        self.merger, self.calls = tok._dispatch.built, []
        assert self.merger is not None, "the kernel path did not run"
        merge = self.merger.merge
        self.merger.merge = lambda pieces: (self.calls.append(list(pieces)), merge(pieces))[1]


# -- the kernel alone, against the Python loop ---------------------------------------------------

def ragged_pieces(rng, n, alphabet=b"abcd"):
    """Pieces of every length 1..MAX_CHUNK at least once, the rest random, over a small alphabet."""
    lengths = np.concatenate([np.arange(1, MAX_CHUNK + 1), rng.integers(1, 40, n)])
    return [bytes(rng.choice(list(alphabet), k).tolist()) for k in rng.permutation(lengths)]


@settings(max_examples=60, deadline=None)
@given(draws=st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), max_size=60),
       seed=st.integers(0, 2**32 - 1))
@pytest.mark.slow
def test_kernel_equals_the_python_loop_on_random_ranks_and_ragged_chunks(draws, seed):
    ranks = random_ranks(draws)
    tokens = sorted(ranks, key=ranks.get)
    pairs = rank_pair_table(tokens)
    pieces = ragged_pieces(np.random.default_rng(seed), 200)
    encode = chunk_encoder(range(256), pairs)
    merger = DeviceMerger(range(256), tokens=tokens)
    assert merger.merge(pieces) == [tuple(encode(p)) for p in pieces]


@settings(max_examples=40, deadline=None)
@given(draws=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)), max_size=40),
       seed=st.integers(0, 2**32 - 1))
@pytest.mark.slow
def test_kernel_follows_a_merge_list_and_byte_ids_that_are_not_the_bytes(draws, seed):
    # a tokenizer.json's rule: only listed pairs, earliest first; its own ids for the bytes
    byte_ids = [(b * 37 + 11) % 256 + 1000 for b in range(256)]
    known, merges = [byte_ids[97 + i] for i in range(4)], []
    for i, j, k in draws:
        pair = (known[i % len(known)], known[j % len(known)])
        if pair not in {(a, b) for a, b, _ in merges}:
            merged = 2000 + (k * 7919) % 1000
            merges.append((*pair, merged))
            known.append(merged)
    pairs = listed_pair_table(merges, 1256)
    pieces = ragged_pieces(np.random.default_rng(seed), 100)
    encode = chunk_encoder(byte_ids, pairs)
    assert DeviceMerger(byte_ids, merges=merges).merge(pieces) == [tuple(encode(p)) for p in pieces]


def probe(table, shift, a, b):
    """The kernel's bpe_lookup in Python: from the home slot forward, wrapping around."""
    x, high = (a << 21 | b) & 0xFFFFFFFF, a >> 11
    slot = int(home_slots(np.array([a]), np.array([b]), shift)[0])
    for _ in range(len(table)):
        if table[slot, 0] == x and table[slot, 1] & 0x3FF == high:
            return int(table[slot, 1] >> 10)
        if table[slot, 0] == device_merge.EMPTY:
            return None
        slot = (slot + 1) % len(table)
    raise AssertionError("a probe went round the whole table")


def test_device_table_holds_exactly_the_listed_pairs_and_every_probe_finds_them(small):
    merges = [(left, right, merged) for (left, right), merged in small.merges.items()]
    pairs, merger = listed_pair_table(merges, 600), DeviceMerger(range(256), merges=merges)
    rows = merger.pairs()
    assert rows == pair_entries(pairs, listed=True) and merger.n_entries == len(rows) == len(merges)
    table = merger.table()
    assert 2 * len(rows) <= len(table)                              # at most half full
    shift = 32 - (len(table).bit_length() - 1)
    for left, right, priority, _ in rows:
        assert probe(table, shift, left, right) == priority
    rng = np.random.default_rng(1)
    absent = [(a, b) for a, b in rng.integers(0, 600, (500, 2)).tolist() if b not in pairs[a]]
    assert absent and all(probe(table, shift, a, b) is None for a, b in absent)
    with pytest.raises(ValueError, match="no token index"):
        merger.index()


def find(index, tokens, token):
    """The kernel's bpe_find_token in Python: from the home slot forward, wrapping around."""
    h = int(token_hashes([token])[0])
    slot = int(token_slots([h], [len(token)], len(index) - 1)[0])
    for _ in range(len(index)):
        t, hashed = (int(v) for v in index[slot])
        if t == device_merge.EMPTY:
            return None
        if hashed == h and tokens[t] == token:
            return t
        slot = (slot + 1) % len(index)
    raise AssertionError("a probe went round the whole index")


def test_device_index_holds_every_token_once_and_every_probe_finds_it(small):
    tokens = [small.vocab[i] for i in range(600)]
    merger = DeviceMerger(range(256), tokens=tokens)
    index = merger.index()
    taken = index[index[:, 0] != device_merge.EMPTY]
    assert sorted(taken[:, 0].tolist()) == list(range(600)) and merger.n_entries == 600
    assert 2 * 600 <= len(index)                                    # at most half full
    assert (taken[:, 1] == token_hashes(tokens)[taken[:, 0]]).all()  # the host's hash is the kernel's
    assert all(find(index, tokens, token) == t for t, token in enumerate(tokens))
    rng = np.random.default_rng(1)
    known = set(tokens)
    absent = [bytes(rng.integers(0, 256, k).tolist()) for k in rng.integers(1, 12, 500)]
    absent = [a for a in absent if a not in known]
    assert absent and all(find(index, tokens, a) is None for a in absent)
    with pytest.raises(ValueError, match="no pair table"):
        merger.table()


def colliding_pair(length: int, seed: int, low: int = 97, high: int = 123) -> tuple[bytes, bytes]:
    """Two different byte strings of one length whose polynomial hashes (the index's) are equal."""
    rng = np.random.default_rng(seed)
    strings = rng.integers(low, high, (400_000, length), dtype=np.uint64)   # a..z by default
    h = np.zeros(len(strings), np.uint64)
    for column in strings.T:
        h = (h * np.uint64(device_merge.P) + column) & np.uint64(0xFFFFFFFF)
    order = np.argsort(h, kind="stable")
    same = np.flatnonzero(h[order][1:] == h[order][:-1])
    for i in same:
        a, b = bytes(strings[order[i]].astype(np.uint8)), bytes(strings[order[i + 1]].astype(np.uint8))
        if a != b:
            return a, b
    raise AssertionError("no collision among the strings drawn; draw more")


@pytest.mark.parametrize("length", [4, 8])
def test_a_hash_collision_never_merges_into_the_wrong_token(length):
    # `made` is a token and `twin` (same length, same hash) is not, though both halves of each are:
    # joining twin's halves finds made's slot (same hash, same length), and only the bytes differ.
    # Four bytes is the shortest length at which the hash has collisions (three bytes: none).
    made, twin = colliding_pair(length, seed=0) if length == 8 else colliding_pair(4, seed=0, low=0, high=256)
    assert int(token_hashes([made])[0]) == int(token_hashes([twin])[0]) and made != twin
    tokens = [bytes([b]) for b in range(256)]
    for word in (made, twin):
        for size in (2, 4)[:length // 4]:
            tokens += [word[i:i + size] for i in range(0, length, size) if word[i:i + size] not in tokens]
    tokens.append(made)
    encode = chunk_encoder(range(256), rank_pair_table(tokens))
    merger = DeviceMerger(range(256), tokens=tokens)
    half = length // 2
    assert merger.merge([made, twin]) == [tuple(encode(made)), tuple(encode(twin))]
    assert merger.merge([twin]) == [(tokens.index(twin[:half]), tokens.index(twin[half:]))]


def test_ids_past_the_packed_range_are_refused_and_stay_in_python():
    big = device_merge.MAX_ID + 1
    with pytest.raises(ValueError, match="token ids must lie in"):
        DeviceMerger(range(256), merges=[(97, 98, big)])
    assert DeviceMerger(range(256), merges=[(97, 98, device_merge.MAX_ID)]).merge([b"ab"]) == [(device_merge.MAX_ID,)]


def test_more_merges_than_a_slot_packs_are_refused_and_stay_in_python(small, tmp_path, monkeypatch):
    merges = [(97, 98, 256), (256, 99, 257), (98, 98, 258)]
    monkeypatch.setattr(device_merge, "MAX_PRIORITY", 1)        # 2 positions: 0 and 1
    with pytest.raises(ValueError, match="3 merges"):
        DeviceMerger(range(256), merges=merges)
    small.save_tokenizer_json(tmp_path / "tokenizer.json")
    kernel, python = twins(BPETokenizer.from_tokenizer_json(tmp_path / "tokenizer.json"))
    text = Path(bpe.__file__).read_text(encoding="utf-8")
    assert kernel.encode_ordinary(text) == python.encode_ordinary(text)
    assert kernel._dispatch.built is None and kernel.kernel_min_bytes is None


def test_merger_refuses_pieces_it_cannot_take():
    merger = DeviceMerger(range(256), tokens=[bytes([b]) for b in range(256)])
    assert merger.merge([]) == []
    with pytest.raises(ValueError, match=r"pieces\[1\] has 0 bytes"):
        merger.merge([b"a", b""])
    with pytest.raises(ValueError, match=rf"pieces\[0\] has {MAX_CHUNK + 1} bytes"):
        merger.merge([b"a" * (MAX_CHUNK + 1)])
    with pytest.raises(ValueError, match="byte_ids"):
        DeviceMerger(range(255), tokens=[bytes([b]) for b in range(256)])
    with pytest.raises(TypeError, match="exactly one of tokens"):
        DeviceMerger(range(256))


# -- through the tokenizer -----------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(text=text_without_surrogates)
@pytest.mark.slow
def test_kernel_path_equals_python_path_on_random_unicode(small, text):
    kernel, python = twins(small)
    assert kernel.encode_ordinary(text) == python.encode_ordinary(text)


@pytest.mark.parametrize("pattern", [GPT4_PATTERN, GPT2_PATTERN, None], ids=["gpt4", "gpt2", "none"])
def test_kernel_path_on_the_stress_strings(small, pattern):
    tok = BPETokenizer.from_mergeable_ranks(small.mergeable_ranks(), pattern=pattern)
    for text in HARD_STRINGS + EDGE_CASES + MULTILINGUAL:
        kernel, python = twins(tok)
        ids = kernel.encode_ordinary(text)
        assert ids == python.encode_ordinary(text), text
        assert kernel.decode(ids) == text


def test_kernel_path_after_a_tokenizer_json_round_trip(small, tmp_path):
    small.save_tokenizer_json(tmp_path / "tokenizer.json")
    loaded = BPETokenizer.from_tokenizer_json(tmp_path / "tokenizer.json")
    text = Path(bpe.__file__).read_text(encoding="utf-8") + "".join(MULTILINGUAL)
    kernel, python = twins(loaded)
    assert kernel.encode_ordinary(text) == python.encode_ordinary(text) == small.encode_ordinary(text)


def test_long_chunks_fall_back_to_python(small):
    kernel, python = twins(small)
    spy = Spy(kernel)
    long_word = "ab" * 300                                 # one chunk of 600 bytes
    edge = "é" * (MAX_CHUNK // 2)                          # exactly MAX_CHUNK bytes: the kernel's
    over = "ü" * (MAX_CHUNK // 2) + "x"                    # MAX_CHUNK + 1: Python's
    text = f"{long_word} river\n{edge}\n{over} fox"        # a newline never joins a word's chunk
    assert kernel.encode_ordinary(text) == python.encode_ordinary(text)
    sent = [piece for call in spy.calls for piece in call]
    assert max(map(len, sent)) == MAX_CHUNK and edge.encode() in sent
    assert long_word.encode() not in sent and over.encode() not in sent
    assert kernel._cache[long_word] == tuple(python.encode_ordinary(long_word))   # cached by the Python loop


def test_threshold_keeps_small_calls_in_python(small):
    tok, python = twins(small)
    tok.kernel_min_bytes = 10_000
    tok.encode_ordinary("a short sentence stays on the host.")
    assert tok._dispatch.built is None
    spy = Spy(tok)                                         # builds the merger with the limit at 0
    tok.kernel_min_bytes = 1_000
    rng = np.random.default_rng(2)
    words = ["".join(rng.choice(list("bcdfghjklmnpqrstvwxz"), 8)) for _ in range(400)]   # new chunks
    for text in (" ".join(words[:50]), " ".join(words[50:]), " ".join(words)):
        assert tok.encode_ordinary(text) == python.encode_ordinary(text)
        # ~450 new bytes: below the limit (the Python loop); ~3,150: above it; all cached
        assert len(spy.calls) == (0 if text == " ".join(words[:50]) else 1)
    assert sum(map(len, spy.calls[0])) >= 1_000


def test_a_call_with_few_new_chunks_patches_their_places(small):
    kernel, python = twins(small)
    text = Path(bpe.__file__).read_text(encoding="utf-8")
    assert kernel.encode_ordinary(text) == python.encode_ordinary(text)
    lines = text.splitlines()
    lines[10] += " zqxjkv"                                    # two new chunks among thousands of cached ones
    lines[-3] += " vwkqzz"
    edited = "\n".join(lines)
    assert kernel.encode_ordinary(edited) == python.encode_ordinary(edited)


def test_kernel_fills_the_cache_with_the_python_ids(small):
    kernel, python = twins(small)
    text = Path(bpe.__file__).read_text(encoding="utf-8")
    seeded = len(kernel._cache)
    kernel.encode_ordinary(text)
    new = {chunk: ids for chunk, ids in list(kernel._cache.items())[seeded:]}
    assert len(new) > 500
    assert all(ids == tuple(python._encode_piece(chunk.encode())) for chunk, ids in new.items())


@pytest.mark.parametrize("value, err, match", [
    (-1, ValueError, "kernel_min_bytes must be >= 0 .*, got -1"),
    (1.5, TypeError, "kernel_min_bytes must be an int"),
    (True, TypeError, "kernel_min_bytes must be an int"),
    ("4096", TypeError, "kernel_min_bytes must be an int"),
])
def test_bad_threshold_is_named(value, err, match):
    with pytest.raises(err, match=match):
        BPETokenizer().kernel_min_bytes = value


def test_lone_surrogate_is_still_named_on_the_kernel_path(small):
    kernel, _ = twins(small)
    with pytest.raises(ValueError, match="lone surrogate"):
        kernel.encode_ordinary("fine text " * 50 + "\ud800 and more")


# -- cl100k_base against tiktoken, through the kernel --------------------------------------------

@pytest.mark.parametrize("kind", ["english", "code", "multilingual", "edge"])
def test_cl100k_kernel_path_identical_to_tiktoken(cl100k, texts, kind):  # noqa: F811 (fixture)
    tok, enc = cl100k
    fresh = pickle.loads(pickle.dumps(tok))                # an empty cache: each document's chunks are new
    fresh.kernel_min_bytes = 0
    spy = Spy(fresh)
    differ = [doc for doc in texts[kind] if fresh.encode_ordinary(doc) != enc.encode_ordinary(doc)]
    assert not differ, f"{len(differ)} {kind} documents differ, first: {differ[0][:200]!r}"
    assert kind == "edge" or sum(len(p) for call in spy.calls for p in call) > 10_000


@settings(max_examples=500, deadline=None)
@given(text=RANDOM_TEXT)
def test_cl100k_kernel_path_identical_to_tiktoken_on_random_text(cl100k, text):
    tok, enc = cl100k
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)


# -- a whole call on the device: the splitter, the merges, the gather -----------------------------
#
# A tokenizer with ``kernel_text_min_bytes = 0`` sends every call to DeviceMerger.merge_text; the
# Python path (both thresholds None) and tiktoken are the references.


def on_device(tok: BPETokenizer) -> BPETokenizer:
    """A fresh copy of ``tok`` that sends every call whole to the device."""
    fresh = pickle.loads(pickle.dumps(tok))
    fresh.kernel_text_min_bytes = 0
    return fresh


def byte_cuts(split, text: str) -> list[int]:
    return [0, *np.cumsum([len(c.encode()) for c in split(text)]).tolist()]


@pytest.fixture(scope="module")
def merger(small):
    return on_device(small)._dispatch.merger()


@settings(max_examples=400, deadline=None)
@given(text=TRICKY_TEXT)
def test_device_splitter_cuts_exactly_where_the_pattern_does(small, merger, text):
    assert merger.split_text(text.encode()).tolist() == byte_cuts(small._split, text)


@pytest.mark.parametrize("text", HARD_STRINGS + EDGE_CASES + MULTILINGUAL)
def test_device_splitter_on_the_stress_strings(small, merger, text):
    assert merger.split_text(text.encode()).tolist() == byte_cuts(small._split, text)


def test_device_splitter_on_a_long_text(small, merger):
    text = Path(bpe.__file__).read_text(encoding="utf-8") + "\n".join(MULTILINGUAL) + "".join(EDGE_CASES)
    assert merger.split_text(text.encode()).tolist() == byte_cuts(small._split, text)


@pytest.fixture(scope="module")
def small_twins(small):
    """``small`` on the whole-call path, and on the Python path (the whole-call path keeps no state)."""
    return on_device(small), twins(small)[1]


@pytest.fixture(params=["one launch", "four launches"])
def launches(request, monkeypatch):
    """Both ways merge_text runs: one work-group for a short text, four kernels for a long one."""
    if request.param == "four launches":
        monkeypatch.setattr(device_merge, "ONE_GROUP_BYTES", 0)
    return request.param


@settings(max_examples=300, deadline=None)
@given(text=TRICKY_TEXT)
def test_whole_call_path_equals_the_python_path(small_twins, text):
    device, python = small_twins
    expected = python.encode_ordinary(text)
    assert device.encode_ordinary(text) == expected
    one_group, device_merge.ONE_GROUP_BYTES = device_merge.ONE_GROUP_BYTES, 0   # the four-launch path too
    try:
        assert device.encode_ordinary(text) == expected
    finally:
        device_merge.ONE_GROUP_BYTES = one_group


@pytest.mark.parametrize("text", HARD_STRINGS + EDGE_CASES)
def test_whole_call_path_on_the_stress_strings(small_twins, text, launches):
    device, python = small_twins
    assert device.encode_ordinary(text) == python.encode_ordinary(text)


def test_whole_call_path_splices_long_chunks_from_the_python_loop(small, launches):
    _, python = twins(small)
    tok = on_device(small)
    seen = []
    merge_text = tok._dispatch.merger().merge_text
    tok._dispatch.built.merge_text = lambda data: (seen.append(merge_text(data)), seen[-1])[1]
    edge = "é" * (MAX_CHUNK // 2)                          # exactly MAX_CHUNK bytes: the kernel's
    over = "ü" * (MAX_CHUNK // 2) + "x"                    # MAX_CHUNK + 1: Python's
    for text in ("ab" * 300, f"{'ab' * 300} river\n{edge}\n{over} fox", f"{over}!{over}", f"x {over}"):
        assert tok.encode_ordinary(text) == python.encode_ordinary(text)
    longs = [len(found[1]) for found in seen]
    assert longs == [1, 2, 2, 1]                           # the long chunks went to Python, the rest not
    assert len(tok._cache) == len(tok._seed)               # the cache is neither read nor filled


def test_whole_call_threshold_keeps_short_calls_on_the_cache(small):
    tok = pickle.loads(pickle.dumps(small))
    assert tok.kernel_text_min_bytes == bpe.KERNEL_TEXT_MIN_BYTES
    calls = []
    merge_text = tok._dispatch.merger().merge_text
    tok._dispatch.built.merge_text = lambda data: (calls.append(len(data)), merge_text(data))[1]
    short, long = "a short sentence.", "the river and the road " * 400
    tok.encode_ordinary(short)
    assert calls == [] and " sentence" in tok._cache
    tok.encode_ordinary(long)
    assert calls == [len(long.encode())]
    tok.kernel_text_min_bytes = None
    tok.encode_ordinary(long)
    assert len(calls) == 1


@pytest.mark.parametrize("pattern", [GPT2_PATTERN, r"\w+|\W", None])
def test_other_patterns_never_take_the_whole_call_path(pattern):
    tok = BPETokenizer(pattern=pattern)
    tok.train_from_iterator(["the river and the road"] * 3, 270)
    tok.kernel_min_bytes, tok.kernel_text_min_bytes = None, 0
    text = "the road and the river " * 300
    assert not tok._dispatch.whole_text
    assert tok.decode(tok.encode_ordinary(text)) == text
    assert tok._dispatch.built is None                     # the whole-call path would have built it


def test_merge_lists_never_take_the_whole_call_path(small, tmp_path):
    path = tmp_path / "tokenizer.json"
    small.save_tokenizer_json(path)
    listed = BPETokenizer.from_tokenizer_json(path)
    listed.kernel_text_min_bytes = 0
    assert not listed._dispatch.whole_text
    text = "the river and the road " * 200
    assert listed.encode_ordinary(text) == small.encode_ordinary(text)
    with pytest.raises(ValueError, match="tiktoken's rule"):
        listed._dispatch.merger().merge_text(b"x")


@pytest.mark.parametrize("value, err, match", [
    (-1, ValueError, "kernel_text_min_bytes must be >= 0 .*, got -1"),
    (2.0, TypeError, "kernel_text_min_bytes must be an int"),
    (False, TypeError, "kernel_text_min_bytes must be an int"),
])
def test_bad_text_threshold_is_named(value, err, match):
    with pytest.raises(err, match=match):
        BPETokenizer().kernel_text_min_bytes = value


def test_lone_surrogate_is_named_on_the_whole_call_path(small):
    with pytest.raises(ValueError, match=r"lone surrogate '\\udc80' at index 50"):
        on_device(small).encode_ordinary("fine text " * 5 + "\udc80 and more")


def test_empty_text_on_the_whole_call_path(small, merger):
    assert on_device(small).encode_ordinary("") == []
    ids, longs = merger.merge_text(b"")
    assert ids.tolist() == [] and longs == []


@pytest.fixture(scope="module")
def cl100k_on_device(cl100k):
    return on_device(cl100k[0])


@pytest.mark.parametrize("kind", ["english", "code", "multilingual", "edge"])
def test_cl100k_whole_call_path_identical_to_tiktoken(cl100k, cl100k_on_device, texts, kind, launches):  # noqa: F811
    _, enc = cl100k
    fresh = cl100k_on_device
    differ = [doc for doc in texts[kind] if fresh.encode_ordinary(doc) != enc.encode_ordinary(doc)]
    assert not differ, f"{len(differ)} {kind} documents differ, first: {differ[0][:200]!r}"
    assert len(fresh._cache) == len(fresh._seed)           # nothing went through the cache


# unassigned code points (category Cn) are left out: the regex package's Unicode is newer than
# tiktoken's, and some of them are letters to one and not the other (U+3D000, for one)
@settings(max_examples=300, deadline=None)
@given(text=RANDOM_TEXT | st.text(alphabet=TRICKY, max_size=80))
def test_cl100k_whole_call_path_identical_to_tiktoken_on_random_text(cl100k, cl100k_on_device, text):
    assert cl100k_on_device.encode_ordinary(text) == cl100k[1].encode_ordinary(text)


def test_a_chunk_that_is_a_token_is_that_token_on_the_device(launches):
    import tiktoken
    # merging "abcd" by rank stops at [ab, c, d] (ab first, then nothing joins), yet it is a token
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"bc": 257, b"bcd": 258, b"abcd": 259}
    tok = on_device(BPETokenizer.from_mergeable_ranks(ranks))
    enc = tiktoken.Encoding("whole_chunk_test", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens={})
    text = "abcd abcd xabcd abcde"
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
    assert tok.encode_ordinary("abcd") == [259]
    # merge() follows the Python loop, which merges by rank: the tokenizer's cache holds such chunks
    assert tok._dispatch.merger().merge([b"abcd"]) == [tuple(tok._encode_piece(b"abcd"))] == [(256, 99, 100)]


def test_a_text_longer_than_the_device_takes_is_encoded_on_the_host(small, merger, monkeypatch):
    _, python = twins(small)
    tok = on_device(small)
    calls = []
    merge_text = tok._dispatch.merger().merge_text
    tok._dispatch.built.merge_text = lambda data: (calls.append(len(data)), merge_text(data))[1]
    monkeypatch.setattr(device_merge, "MAX_TEXT_BYTES", 100)
    text = "the river and the road " * 10                    # 230 bytes
    assert tok.encode_ordinary(text) == python.encode_ordinary(text) and calls == []
    assert tok.encode_ordinary(text[:100]) == python.encode_ordinary(text[:100]) and calls == [100]
    with pytest.raises(ValueError, match="merge_text takes at most 100 bytes"):
        merger.merge_text(text.encode())


def test_threads_sharing_a_tokenizer_get_their_own_ids(small):
    # the merger's kernels hold their arguments and its buffers are kept between calls: one call at a time
    from concurrent.futures import ThreadPoolExecutor
    _, python = twins(small)
    tok = on_device(small)
    texts = [" ".join(f"{word}{i}" for word in ("river", "road", "fox", "日本", "café")) * (40 + 7 * i)
             for i in range(6)]
    expected = [python.encode_ordinary(t) for t in texts]
    with ThreadPoolExecutor(6) as pool:
        for _ in range(5):
            assert list(pool.map(tok.encode_ordinary, texts)) == expected


def test_a_long_call_does_not_keep_its_device_memory(small, merger):
    text = ("the river and the road " * 6000).encode()          # 138 kB: four launches, buffers of its own
    short = b"the river and the road " * 100
    merger.merge_text(short)
    kept = {name: buf.size for name, buf in merger._buffers.items()}
    ids, _ = merger.merge_text(text)
    assert len(ids) > 0 and max(buf.size for buf in merger._buffers.values()) <= device_merge._KEPT_BYTES
    big = ("starts", "seen", "out", "result")                       # each over _KEPT_BYTES for this text
    assert {name: merger._buffers[name].size for name in big} == {name: kept[name] for name in big}
