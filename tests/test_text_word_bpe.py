"""Word BPE (Sennrich): the Week 22 drill's numbers, the tie rule, inference without retraining."""


import pytest

from netcl_lite.text import WordBPE
from netcl_lite.text.word_bpe import _merge

SHEET_CORPUS = "low low low low low lower lower newest newest newest widest widest"


def test_sheet_trace_six_merges():
    bpe = WordBPE()
    trace = bpe.train(SHEET_CORPUS, 6)
    # (l,o) and (o,w) both occur 5 (low) + 2 (lower) = 7 times; the lexical rule picks (l,o).
    # At count 5, (e,s) < (es,t) < (est,</w>) < (low,</w>) < (s,t) < (t,</w>) lexically.
    assert trace == [(("l", "o"), 7), (("lo", "w"), 7), (("e", "s"), 5), (("es", "t"), 5),
                     (("est", "</w>"), 5), (("low", "</w>"), 5)]
    assert bpe.merges == [pair for pair, _ in trace]
    assert sum(bpe.vocab.values()) == 12  # every word occurrence survives the merges
    assert bpe.vocab == {("low</w>",): 5, ("low", "e", "r", "</w>"): 2, ("n", "e", "w", "est</w>"): 3,
                         ("w", "i", "d", "est</w>"): 2}


def test_inference_applies_merges_to_new_words_without_retraining():
    bpe = WordBPE()
    bpe.train(SHEET_CORPUS, 6)
    merges = list(bpe.merges)
    assert bpe.segment("lowest") == ("low", "est</w>")
    assert bpe.segment("low") == ("low</w>",)
    assert bpe.segment("slow") == ("s", "low</w>")
    assert bpe.segment("zebra") == ("z", "e", "b", "r", "a", "</w>")  # unseen characters stay single symbols
    assert bpe.merges == merges  # segmenting learned nothing


def test_segment_equals_applying_each_merge_in_order():
    bpe = WordBPE()
    bpe.train(SHEET_CORPUS + " slowest newer lowlowlow", 12)
    for word in ["lowest", "newest", "lowlow", "wwidest", "estest", "lo"]:
        symbols = tuple(word) + ("</w>",)
        for pair in bpe.merges:
            symbols = _merge(symbols, pair)
        assert bpe.segment(word) == symbols


def test_merges_are_adjacent_symbols_only():
    assert _merge(("ab", "c", "a", "b"), ("a", "b")) == ("ab", "c", "ab")
    assert _merge(("a", "a", "a"), ("a", "a")) == ("aa", "a")  # left to right, non-overlapping


def test_training_stops_when_no_pairs_are_left_and_accepts_word_lists():
    bpe = WordBPE()
    trace = bpe.train(["a a", "a"], 10)
    assert trace == [(("a", "</w>"), 3)] and bpe.vocab == {("a</w>",): 3}
    assert WordBPE().train([], 3) == []


@pytest.mark.parametrize("call, err", [
    (lambda b: b.train(SHEET_CORPUS, -1), ValueError),
    (lambda b: b.train(SHEET_CORPUS, 2.0), TypeError),
    (lambda b: b.train([b"low"], 2), TypeError),
    (lambda b: b.train(7, 2), TypeError),
    (lambda b: b.segment("two words"), ValueError),
    (lambda b: b.segment(""), ValueError),
    (lambda b: b.segment(3), TypeError),
])
def test_bad_input(call, err):
    with pytest.raises(err):
        call(WordBPE())
