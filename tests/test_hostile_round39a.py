"""Round 39a: hostile inputs to the compressor's parts and the cache keys; each test fails on the code it was
written against.

1. ``fingerprint.environment`` / ``context`` take a package name holding a line break, and write it into the
   environment's lines as it is: ``packages=["a absent\\nb"]`` gives the very lines of ``packages=["a", "b"]``
   (both absent), so two different package lists share a context, and every key made of it.
2. ``corpus.stdlib_documents(root)`` of a library folder holding a source file whose name is not UTF-8
   (``b"\\xff.py"``, which any POSIX file system holds) fails with a raw UnicodeEncodeError naming nothing,
   when the stored corpus is written (``json.dumps(...).encode("utf-8")`` of the name as ``os.walk`` gives it).
   Likewise a valid UTF-8 source whose docstring spells a lone surrogate with an escape (``\\ud800``).
3. ``corpus.split_by_hash`` (and ``split_documents``) checks that ``documents`` is a non-empty dict but not its
   names: a name that is no str is "AttributeError: 'int' object has no attribute 'encode'", one holding a
   lone surrogate (as ``os.walk`` gives a name that is not UTF-8) a raw UnicodeEncodeError; neither names
   ``documents``.
4. ``capstone.token_losses(model, x, y)`` takes targets outside the vocabulary as NumPy indices: the module's
   own ``IGNORE`` (-100, which ``sliding_windows`` puts in its targets) is read as token ``vocab - 100`` and
   its loss returned as a finite number, silently; a target >= vocab is NumPy's "IndexError: index 300 is out
   of bounds for axis 2", naming no parameter.
5. ``capstone.ngram_bits_per_byte`` checks its id arrays and ``n_bytes`` by name, but not ``vocab_size`` (300.5 is
   "TypeError: 'float' object cannot be interpreted as an integer", 2**40 a MemoryError of 8 TiB), and takes a
   masked ``train_ids`` / ``held_ids`` as the values under the mask.
6. ``match.last_wins`` and ``match.add_in_order`` (whose kinds round 38a made them check by name) take a masked
   ``slots`` / ``index`` (or ``values``) as the values under the mask: a masked-out slot is written.
"""

from __future__ import annotations

import pytest


# --- 1. a package name holding a line break ----------------------------------------------------------------


@pytest.mark.parametrize("call", ["environment", "context"])
def test_a_package_name_with_a_line_break_gets_no_other_lists_context(call):
    """``environment(packages=["zzq-none absent\\nyyq-none"])`` is, line for line, ``environment(packages=
    ["zzq-none", "yyq-none"])``: the name is written into the text as it is, and its line break reads as the
    start of the next package's line. Round 38 keyed each environment variable apart for this very reason
    (a value with a line break), but not the package names. A name with a line break is no distribution name:
    it should be refused with a ValueError naming ``packages`` (as an empty one is since round 38a), or keyed
    so that no other list gives the same text."""
    from netcl_lite import fingerprint

    forged = ["zzq-none absent\nyyq-none"]
    plain = ["zzq-none", "yyq-none"]
    try:
        got = getattr(fingerprint, call)(packages=forged)
    except ValueError as exc:
        assert "packages" in str(exc), exc
        return
    assert got != getattr(fingerprint, call)(packages=plain)


# --- 2. a library file whose name is not UTF-8 ----------------------------------------------------------------


def test_a_library_file_whose_name_is_not_utf8_gives_documents_or_an_error_naming_it(tmp_path, monkeypatch):
    """``stdlib_documents(root)`` walks ``root`` with ``os.walk``, which gives a name that is not UTF-8 with
    ``surrogateescape`` characters (b"\\xff.py" as "\\udcff.py"). The key of the files handles such names
    (round 37), but the stored corpus is written as ``json.dumps(..., ensure_ascii=False).encode("utf-8")``:
    "UnicodeEncodeError: 'utf-8' codec can't encode character '\\udcff' ... surrogates not allowed", naming
    neither the file nor ``root``, and nothing is stored or returned. Right: the documents (that file's under
    a name kept as its bytes, or left out as the unreadable ones are), read back alike from the stored entry;
    or a ValueError / OSError naming the file. Never a UnicodeError."""
    import os

    from netcl_lite import corpus, fingerprint

    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "plain.py").write_text('"""A module with a plain name."""\n', encoding="utf-8")
    try:
        with open(os.path.join(os.fsencode(lib), b"\xff.py"), "wb") as f:
            f.write(b'"""A module whose name is not UTF-8."""\n')
    except (OSError, ValueError):
        pytest.skip("this file system takes no name that is not UTF-8")
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    corpus._documents.cache_clear()
    try:
        try:
            first = corpus.stdlib_documents(str(lib))
        except UnicodeError as exc:
            pytest.fail(f"raw {type(exc).__name__} reached the caller: {exc}")
        except (ValueError, OSError) as exc:
            assert "xff" in str(exc) or "\\udcff" in str(exc) or "\udcff" in str(exc), exc
            return
        assert "plain.py" in first
        corpus._documents.cache_clear()                      # another process: read back from the entry
        assert corpus.stdlib_documents(str(lib)) == first
    finally:
        corpus._documents.cache_clear()


def test_a_docstring_that_spells_a_lone_surrogate_gives_documents_not_a_unicode_error(tmp_path, monkeypatch):
    """A module of valid UTF-8 whose docstring is ``An escape \\ud800 here.`` (Python reads the escape
    as the lone surrogate U+D800) makes ``stdlib_documents(root)`` fail with "UnicodeEncodeError: 'utf-8'
    codec can't encode character '\\ud800' ... surrogates not allowed" as the stored corpus is written, naming
    neither the file nor ``root``; the documents were parsed fine. Right: the documents (that docstring kept,
    e.g. stored with its escape, or its file left out as undecodable ones are), read back alike from the
    stored entry; never a UnicodeError."""
    from netcl_lite import corpus, fingerprint

    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "plain.py").write_text('"""A module with a plain docstring."""\n', encoding="utf-8")
    (lib / "escaped.py").write_text('"""An escape \\ud800 here."""\n', encoding="utf-8")
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    corpus._documents.cache_clear()
    try:
        try:
            first = corpus.stdlib_documents(str(lib))
        except UnicodeError as exc:
            pytest.fail(f"raw {type(exc).__name__} reached the caller: {exc}")
        assert "plain.py" in first
        corpus._documents.cache_clear()                      # another process: read back from the entry
        assert corpus.stdlib_documents(str(lib)) == first
    finally:
        corpus._documents.cache_clear()


# --- 3. split_by_hash of names it cannot hash ------------------------------------------------------------------


@pytest.mark.parametrize("name", [1, "\udcff.py"], ids=["an int", "a lone surrogate"])
def test_split_by_hash_names_documents_for_a_name_it_cannot_hash(name):
    """``split_by_hash(documents, fractions)`` hashes each name as ``name.encode("utf-8")``: an int name is
    "AttributeError: 'int' object has no attribute 'encode'", and "\\udcff.py" (how ``os.walk`` gives the
    name b"\\xff.py") "UnicodeEncodeError: ... surrogates not allowed", naming neither ``documents`` nor the
    name. It refuses a ``documents`` that is no dict by name already. Right: a TypeError / ValueError naming
    ``documents`` (or, for the surrogate, the name hashed as the bytes it stands for); never a raw
    AttributeError or UnicodeError."""
    from netcl_lite import corpus

    documents = {name: "odd", "a": "x", "b": "y", "c": "z", "d": "w", "e": "v"}
    try:
        corpus.split_by_hash(documents, (0.3,))
    except (AttributeError, UnicodeError) as exc:
        pytest.fail(f"raw {type(exc).__name__} reached the caller: {exc}")
    except (TypeError, ValueError) as exc:
        assert "documents" in str(exc), exc


# --- 4. token_losses of targets outside the vocabulary ---------------------------------------------------------


@pytest.fixture(scope="module")
def small(queue):
    from cli_model import tiny_model

    return tiny_model(queue)


@pytest.mark.parametrize("target", ["IGNORE", "vocab_size"])
def test_token_losses_refuses_targets_outside_the_vocabulary_by_name(small, target):
    """``token_losses(model, x, y)`` gathers ``logits[..., y]`` with ``np.take_along_axis``: a target of
    ``IGNORE`` (-100: what ``sliding_windows``, beside it, marks already-scored targets with, and what
    ``model.loss`` skips by ``ignore_index``) wraps to token ``vocab_size - 100`` and its cross-entropy comes
    back as a finite loss, a wrong result with no error; a target of ``vocab_size`` is NumPy's "IndexError:
    index 300 is out of bounds for axis 2 with size 300", naming nothing. Right: a ValueError naming ``y``
    (its targets must be token ids in [0, vocab_size)), or, for IGNORE, no loss made up for it (NaN)."""
    import numpy as np

    from netcl_lite import capstone

    model, _, primer = small
    x, y = capstone.sliding_windows(primer[:40], 8, 4)
    y = y.copy()
    bad = capstone.IGNORE if target == "IGNORE" else model.config.vocab_size
    y[1, :2] = bad
    try:
        losses = capstone.token_losses(model, x, y)
    except IndexError as exc:
        pytest.fail(f"raw IndexError reached the caller: {exc}")
    except ValueError as exc:
        assert "y" in str(exc), exc
        return
    assert not np.isfinite(losses[1, :2]).any(), (f"targets {bad} got the finite losses {losses[1, :2]}: the "
                                                  f"loss of another token")


# --- 5. ngram_bits_per_byte's vocab_size and masked ids ----------------------------------------------------------


@pytest.mark.parametrize("case", ["vocab_size 300.5", "masked held_ids"])
def test_ngram_bits_per_byte_names_what_it_cannot_count(small, case):
    """``ngram_bits_per_byte(train_ids, held_ids, vocab_size, n_bytes)`` refuses ids outside [0, vocab_size)
    and a bad ``n_bytes`` naming them, but ``vocab_size`` itself goes to ``np.bincount(minlength=...)``
    unchecked: 300.5 is "TypeError: 'float' object cannot be interpreted as an integer" (naming nothing),
    2**40 asks for 8 TiB (MemoryError; not run here: with memory overcommitted it could be granted). A masked
    ``held_ids`` has its hidden values counted (the library refuses masked arrays by name elsewhere:
    ``checks.not_masked``). Right: ValueError / TypeError naming ``vocab_size`` (a positive int the counts can
    hold) or the masked array."""
    import numpy as np

    from netcl_lite import capstone

    _, _, primer = small
    held, vocab = primer, 300
    if case == "vocab_size 300.5":
        vocab = 300.5
    else:
        held = np.ma.array(primer, mask=primer > 100)
    name = "vocab_size" if case.startswith("vocab_size") else "held_ids"
    with pytest.raises((TypeError, ValueError)) as info:
        capstone.ngram_bits_per_byte(primer, held, vocab, 100)
    assert name in str(info.value), info.value


# --- 6. masked slots and indices in match's table writers -------------------------------------------------------


@pytest.mark.parametrize("call", ["last_wins", "add_in_order"])
def test_match_table_writers_refuse_a_masked_index_by_name(call):
    """``last_wins(slots, values, table)`` and ``add_in_order(table, index, values)`` read ``slots`` / ``index``
    with ``np.asarray``, which drops a mask: the masked-out entry's hidden value is written (or added) into
    the table like any other. Every other array input of the compressor's host models refuses a masked array
    by name (``checks.not_masked``, rounds 36-38), and these two name their ``slots`` / ``index`` for a
    wrong kind since round 38a. Right: TypeError naming ``slots`` / ``index``."""
    import numpy as np

    from netcl_lite import match

    table = np.zeros((4, 2)) if call == "add_in_order" else np.full(4, -1, np.int64)
    masked = np.ma.array([1, 2], mask=[False, True])
    name = "index" if call == "add_in_order" else "slots"
    with pytest.raises(TypeError) as info:
        if call == "add_in_order":
            match.add_in_order(table, masked, np.ones((2, 2)))
        else:
            match.last_wins(masked, np.array([5, 6]), table)
    assert name in str(info.value), info.value
