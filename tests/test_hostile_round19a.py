"""Issue 58, an independent hostile check, round 19a: reproducers of defects in the compressor's file
helpers and its command line beyond the cases of earlier rounds (tests/test_hostile*.py,
tests/test_compression_hostile.py): a yes/no default read by truthiness, a byte limit too large for a
read, a replaced file that lost its permission bits, buffers the writers could not write.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from netcl_lite import files


# -- files.env_flag: the default ----------------------------------------------------------------------------

@pytest.mark.parametrize("default", ["no", "false", "0", 0.5, None, np.bool_(True)])
def test_env_flag_refuses_a_default_that_is_not_a_bool(monkeypatch, default):
    """``env_flag(name, default)`` gave ``bool(default)`` for an unset variable, so ``default="no"`` (or
    ``"false"``, ``"0"``) meant True: the opposite of what was written, which the function exists to
    prevent for the variable's own value. A default that is no bool is a TypeError naming it."""
    monkeypatch.delenv("NETCL_LITE_ROUND19A", raising=False)
    with pytest.raises(TypeError, match="default must be a bool"):
        files.env_flag("NETCL_LITE_ROUND19A", default)
    assert files.env_flag("NETCL_LITE_ROUND19A", False) is False
    assert files.env_flag("NETCL_LITE_ROUND19A", True) is True


# -- files.read_regular: a limit past what one read takes ---------------------------------------------------

@pytest.mark.parametrize("limit", [2**36, 2**45, 2**63 - 1, 2**63, 10**30])
def test_read_regular_takes_any_limit_above_the_file(tmp_path, limit):
    """``read_regular(path, max_bytes)`` asked one read for ``max_bytes + 1`` bytes, which allocates
    them first: a generous limit (64 GiB, any "no real limit" a caller passes) was a ``MemoryError``,
    and one of 2**63 or more an ``OverflowError: cannot fit 'int' into an index-sized integer``, for a
    3-byte file well under it. The file's bytes should come back, whatever the limit above them."""
    path = tmp_path / "small.txt"
    path.write_bytes(b"abc")
    assert files.read_regular(path, limit, "a text file") == b"abc"


def test_read_regular_still_refuses_a_file_past_its_limit_or_grown_past_it(tmp_path, monkeypatch):
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 10)
    assert files.read_regular(path, 10, "a text file") == b"x" * 10
    with pytest.raises(ValueError, match="10 bytes; a text file is read only up to 9 bytes"):
        files.read_regular(path, 9, "a text file")
    real_fstat = os.fstat                      # the file grows between the check and the read
    monkeypatch.setattr(files.os, "fstat", lambda fd: (path.write_bytes(b"y" * 20), real_fstat(fd))[1]
                        if path.stat().st_size == 10 else real_fstat(fd))
    with pytest.raises(ValueError, match="grew past 15 bytes"):
        files.read_regular(path, 15, "a text file")


# -- files.atomic_write: the replaced file's permission bits ------------------------------------------------

@pytest.mark.parametrize("bits", [0o600, 0o640, 0o444])
def test_atomic_write_keeps_the_permission_bits_of_the_file_it_replaces(tmp_path, bits):
    """``atomic_write`` replaces a file by a new one created with the umask's bits, so a private file
    (0600: a tokenizer, a config, a run's record) became readable by everyone (0644) once saved over.
    The new file should get the bits of the one it replaces (a new name gets the umask's, as before)."""
    path = tmp_path / "private.json"
    path.write_bytes(b"old")
    os.chmod(path, bits)
    files.atomic_write(path, b"new")
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(path).st_mode) == bits
    fresh = tmp_path / "fresh.json"
    files.atomic_write(fresh, b"x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o666 & ~umask


def test_atomic_write_through_a_link_keeps_the_target_s_bits(tmp_path):
    target = tmp_path / "target.json"
    target.write_bytes(b"old")
    os.chmod(target, 0o600)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    files.atomic_write(link, b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


# -- files.write_new / atomic_write: buffers of any layout --------------------------------------------------

@pytest.mark.parametrize("writer", ["write_new", "atomic_write"])
def test_the_writers_write_a_strided_or_typed_buffer_s_bytes(tmp_path, writer):
    """The writers take a memoryview, but one of a strided array (``memoryview(a[::2])``) ended in
    ``BufferError: memoryview: underlying buffer is not C-contiguous`` from inside the write: no
    TypeError or ValueError naming ``data``. Its bytes, in order, should be written, as for any
    other buffer (a typed one writes its raw bytes, as ``bytes(view)`` gives them)."""
    strided = np.arange(10, dtype=np.uint8)[::2]
    getattr(files, writer)(tmp_path / "strided.bin", memoryview(strided))
    assert (tmp_path / "strided.bin").read_bytes() == strided.tobytes()
    typed = np.arange(4, dtype=np.int32)
    getattr(files, writer)(tmp_path / "typed.bin", memoryview(typed))
    assert (tmp_path / "typed.bin").read_bytes() == typed.tobytes()


# -- the host models: arguments their constructors and steps took unchecked ---------------------------------

def test_the_match_model_refuses_primer_ids_its_text_cannot_hold():
    """The match model keeps the text in int32, -1 marking a position not coded yet; a primer id of 2**31
    or more was written there wrapped: 2**32 - 1 became -1 ("not coded yet") and 2**32 + 5 became 5, a
    token the primer never held, predicted silently. It should be refused naming ``primer``."""
    from netcl_lite.match import MatchModel

    for big in (2**31, 2**32 - 1, 2**32 + 5):
        with pytest.raises(ValueError, match="primer must hold token ids in"):
            MatchModel(np.array([7, 8, big, 1, 2, 3] * 3, np.int64), np.array([5]), 2)
    assert MatchModel(np.array([7, 8, 2**31 - 1] * 3, np.int64), np.array([5]), 2).text[2] == 2**31 - 1


@pytest.mark.parametrize("kind", [np.int64, np.uint16, np.int32])
def test_the_n_grams_take_a_numpy_integer_vocabulary(kind):
    """``NGram(primer, vocab, streams)`` checked ``vocab`` as an int (NumPy integers pass) and then
    computed with it: ``np.int64(10)`` ended in "unsupported operand type(s) for ** or pow()" from deep
    inside its hashing (and a narrow NumPy integer would wrap ``vocab + 1``). A NumPy integer should
    count as the int it is."""
    from netcl_lite.ngram import NGram, WordNGram

    primer = np.array([1, 2, 3, 1, 2, 3, 4], np.int64)
    ng = NGram(primer, kind(10), kind(2))
    reference = NGram(primer, 10, 2)
    assert np.array_equal(ng.predict()[0], reference.predict()[0])
    pieces = {i: bytes([97 + i]) for i in range(10)}
    words = WordNGram(primer, kind(10), kind(2), pieces)
    assert np.array_equal(words.predict(np.full(10, 0.1)), WordNGram(primer, 10, 2, pieces).predict(
        np.full(10, 0.1)))                      # the counts of each token, as NGram.unigram holds them


@pytest.mark.parametrize("args, error, match", [
    (({0: b"a"}, 10**12), ValueError, "vocab must be at most MAX_TOKEN_VOCAB"),
    (({0: b"a"}, "2"), ValueError, "vocab must be a positive int"),
    (([b"a"], 2), TypeError, "pieces must be a mapping"),
    (({0: "a"}, 2), TypeError, "pieces must map token ids"),
])
def test_word_classes_refuses_what_it_cannot_take_naming_it(args, error, match):
    """``word_classes(pieces, vocab)`` checked neither: a vocabulary of 10**12 ids tried to allocate 7 TiB
    (MemoryError), a list of pieces ended in an AttributeError ('list' object has no attribute 'items'),
    str pieces in "'in <string>' requires string as left operand"."""
    from netcl_lite.ngram import word_classes

    with pytest.raises(error, match=match):
        word_classes(*args)


@pytest.mark.parametrize("value", [float("nan"), "300", True, 0, -5])
def test_check_vocab_refuses_what_is_no_vocabulary_size(value):
    """``check_vocab(vocab)`` compared ``vocab > MAX_VOCAB`` alone: a NaN (never greater) and True passed as
    a size the mixed mode takes, and a str ended in "'>' not supported between instances"."""
    from netcl_lite.context_mixing import check_vocab

    with pytest.raises(ValueError, match="vocab must be a positive int"):
        check_vocab(value)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(vocab=10**9), ValueError, "MAX_VOCAB"),
    (dict(inputs=0), ValueError, "inputs must be a positive int"),
    (dict(contexts=10**9), ValueError, "contexts × inputs makes a table"),
    (dict(boosts=[-1]), TypeError, "boosts must be a list of positive ints"),
    (dict(boosts=[10**10]), ValueError, r"boosts\[0\] makes a table"),
    (dict(bias=np.bool_(True)), TypeError, "bias must be a bool"),
])
def test_the_geometric_mixer_refuses_sizes_it_cannot_keep_naming_them(kwargs, error, match):
    """``GeometricMixer(inputs, contexts, boosts, vocab, bias)`` allocated by its arguments unchecked: a
    vocabulary of 10**9 with the bias asked for a (vocab, vocab) table of 7 EiB (MemoryError), a negative
    boost size ended in "negative dimensions are not allowed", no inputs in an IndexError, and 10**9 weight
    sets were allocated (16 GB). Each should be refused naming the parameter, before any allocation."""
    from netcl_lite.context_mixing import GeometricMixer

    args = dict(inputs=2, contexts=3, boosts=[4], vocab=10, bias=True) | kwargs
    with pytest.raises(error, match=match):
        GeometricMixer(**args)


def test_tree_sse_refuses_sizes_and_distributions_it_cannot_refine():
    """``TreeSSE(vocab, depth)`` took a negative depth to "negative dimensions are not allowed" and a
    vocabulary of 10**12 (each call pads rows to 2**40 leaves); a call with a NaN in ``p`` ended in an
    IndexError (index -9223372036854775808), one of the wrong width in a broadcasting error."""
    from netcl_lite.context_mixing import TreeSSE

    with pytest.raises(ValueError, match="depth must be a positive int"):
        TreeSSE(10, -1)
    with pytest.raises(ValueError, match="vocab must be at most MAX_TOKEN_VOCAB"):
        TreeSSE(10**12)
    sse = TreeSSE(10)
    with pytest.raises(ValueError, match="p must hold probabilities, got a NaN"):
        sse(np.full((2, 10), np.nan))
    with pytest.raises(ValueError, match=r"p must be a float array of shape \(streams, 10\)"):
        sse(np.full((2, 11), 1 / 11))
    out = sse(np.full((2, 10), 0.1))
    assert np.allclose(out.sum(axis=1), 1.0)
