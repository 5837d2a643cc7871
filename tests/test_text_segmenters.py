"""WordPiece and unigram segmentation: their rules, and that they disagree with BPE on the same words."""

import math

import pytest

from netcl_lite.text import Unigram, WordBPE, WordPiece

WORDPIECE_VOCAB = {"low", "lo", "new", "wid", "##er", "##est", "##e", "##s", "##t", "##w"}


def test_wordpiece_takes_the_longest_prefix_then_continuation_pieces():
    wp = WordPiece(WORDPIECE_VOCAB)
    assert wp.tokenize("lowest newer widest") == ["low", "##est", "new", "##er", "wid", "##est"]
    assert wp.tokenize("lower xyz") == ["low", "##er", "[UNK]"]  # one uncovered word -> one unknown
    assert WordPiece(WORDPIECE_VOCAB, max_chars_per_word=5).tokenize("lowest low") == ["[UNK]", "low"]
    assert wp.tokenize("") == []


def test_unigram_viterbi_maximizes_total_log_probability():
    probs = {"l": 0.1, "o": 0.1, "w": 0.1, "e": 0.1, "s": 0.1, "t": 0.1, "lo": 0.2, "low": 0.05,
             "est": 0.3, "we": 0.3, "st": 0.2}
    uni = Unigram({piece: math.log(p) for piece, p in probs.items()})
    # low+est = log(0.05*0.3) = -4.2; lo+we+st = log(0.2*0.3*0.2) = -4.4; so low+est
    assert uni.segment("lowest") == ("low", "est")
    assert uni.segment("lowe") == ("lo", "we")
    assert uni.segment("") == ()


def test_equal_scores_prefer_the_longest_last_piece():
    uni = Unigram({"a": -1.0, "b": -1.0, "ab": -2.0})
    assert uni.segment("ab") == ("ab",)


def test_three_algorithms_segment_the_same_word_differently():
    bpe = WordBPE()
    bpe.train("low low low low low lower lower newest newest newest widest widest", 6)
    wp = WordPiece(WORDPIECE_VOCAB)
    uni = Unigram({"n": -3.0, "e": -3.0, "w": -3.0, "s": -3.0, "t": -3.0, "ne": -2.0, "west": -1.5,
                   "new": -2.0, "est": -2.0})
    assert bpe.segment("newest") == ("n", "e", "w", "est</w>")
    assert wp.tokenize("newest") == ["new", "##est"]
    assert uni.segment("newest") == ("ne", "west")  # -3.5 beats new + est at -4.0
    assert len({bpe.segment("newest"), tuple(wp.tokenize("newest")), uni.segment("newest")}) == 3


@pytest.mark.parametrize("make, err", [
    (lambda: WordPiece("abc"), TypeError),
    (lambda: WordPiece({"a", ""}), TypeError),
    (lambda: WordPiece({"a"}, max_chars_per_word=0), ValueError),
    (lambda: WordPiece({"a"}).tokenize(None), TypeError),
    (lambda: Unigram({"a": 0.5}), ValueError),
    (lambda: Unigram({"a": float("nan")}), ValueError),
    (lambda: Unigram({}), ValueError),
    (lambda: Unigram(["a"]), TypeError),
    (lambda: Unigram({"a": -1.0}).segment("ab"), ValueError),
    (lambda: Unigram({"a": -1.0}).segment(1), TypeError),
])
def test_bad_input(make, err):
    with pytest.raises(err):
        make()
