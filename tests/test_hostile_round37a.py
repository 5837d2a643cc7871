"""Round 37a: hostile inputs to the compressor's adaptation and to the cache keys' fingerprint; each test
fails on the code it was written against.

1. ``adaptation.check_ids`` (the ids of ``dynamic_evaluation.coded_bits`` and
   ``adaptation.gradient_mean_squares``, the Adapter's ``train_ids``, ``Adapter.observe``'s tokens) reads
   a NumPy masked array as the values under its mask: the bits of masked tokens, gradients of masked
   windows, silently. The rest of the coder refuses a masked array by name (``checks.not_masked``).
2. ``adaptation.adapted_names`` and ``adaptation.window_of``, public, give an AttributeError for a model
   that is no DecoderLM or a config that is no AdaptConfig, naming no parameter.
3. ``adaptation.gradient_mean_squares`` lays out every window's positions at once: ``batches=2**40``
   is a MemoryError ("Unable to allocate 8.00 TiB") before any check names the parameter.
4. ``fingerprint.key`` of an existing file whose name is not UTF-8 (a Linux name with a byte such as
   0xFF) is a UnicodeEncodeError: the file cannot be keyed at all.
5. ``fingerprint.key`` with a named pipe among ``reads`` blocks for ever (``read_bytes`` waits for a
   writer); a folder there is a bare IsADirectoryError. Each should be a ValueError naming the path.
6. ``AdaptConfig(ms_batches=2**40)`` is accepted; the Adapter then fails with NumPy's MemoryError (as 3).
7. ``fingerprint.environment`` / ``context`` read ``packages="numpy"`` as the packages "n", "u", "m", ...,
   silently; ``device_facts`` / ``context`` of a device that is no OpenCL device give an AttributeError.
8. ``ngram.Mixer.update`` checks only ``p_mix``'s shape: a complex, bool or object mixture is learned from
   (or fails inside NumPy), not refused by name.
9. ``BPETokenizer`` takes a pre-split pattern holding a lone surrogate; ``tokenizer_fingerprint`` (so
   compress and decompress) then fails with a UnicodeEncodeError naming nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cli_model import environment, tiny_model


@pytest.fixture(scope="module")
def small(queue):
    return tiny_model(queue)


# --- 1. masked arrays taken as their values under the mask ---------------------------------------------


def _masked(ids):
    arr = np.ma.array(ids, mask=np.zeros(len(ids), bool))
    arr.mask[3] = True
    return arr


def test_coded_bits_refuses_masked_ids_naming_them(small):
    """``coded_bits(model, tokenizer, np.ma.array(ids, mask=...))`` returns bits for every id, the masked
    ones too (their values under the mask coded as if they were there). It should be a TypeError naming
    ``ids``, as compress's ``primer`` and the n-gram's ``primer`` are."""
    from netcl_lite.dynamic_evaluation import coded_bits

    model, tok, primer = small
    with pytest.raises(TypeError, match="ids must not be a masked array"):
        coded_bits(model, tok, _masked(primer[:40]))


def test_gradient_mean_squares_refuses_masked_ids_naming_them(small):
    """``gradient_mean_squares(model, masked_ids, ...)`` trains on the values under the mask, silently."""
    from netcl_lite.adaptation import gradient_mean_squares

    model, _, primer = small
    with pytest.raises(TypeError, match="ids must not be a masked array"):
        gradient_mean_squares(model, _masked(primer), batches=1, batch_size=1, block=4)


def test_an_adapter_refuses_masked_train_ids_naming_them(small):
    """``Adapter(..., train_ids=masked)`` scales its steps by gradients over the masked values."""
    from netcl_lite.adaptation import AdaptConfig, Adapter

    model, _, primer = small
    with pytest.raises(TypeError, match="train_ids must not be a masked array"):
        Adapter(model, 1, 0, AdaptConfig(window=4, ms_batches=1), train_ids=_masked(primer))


def test_adapter_observe_refuses_masked_tokens_naming_them(small):
    """``Adapter.observe(np.ma.array([5], mask=[True]))`` records token 5 as observed, and the next update
    trains on it; it should refuse the masked array, naming ``tokens``, and record nothing."""
    from netcl_lite.adaptation import AdaptConfig, Adapter

    model, _, primer = small
    adapter = Adapter(model, 1, 0, AdaptConfig(window=4, ms_batches=1, chunk=100), train_ids=primer)
    with pytest.raises(TypeError, match="tokens must not be a masked array"):
        adapter.observe(np.ma.array([5], mask=[True]))
    assert adapter.observed == 0


# --- 2. adapted_names / window_of of what is no model or no config ---------------------------------------


@pytest.mark.parametrize("call", ["adapted_names", "window_of_model", "window_of_config"])
def test_adapted_names_and_window_of_name_a_wrong_model_or_config(small, call):
    """``adapted_names(None, "all")`` is "AttributeError: 'NoneType' object has no attribute 'parameters'";
    ``window_of(AdaptConfig(), None)`` and ``window_of(None, model)`` the same about ``config`` and
    ``window``. Each should be a TypeError naming ``model`` or ``config``."""
    from netcl_lite.adaptation import AdaptConfig, adapted_names, window_of

    model = small[0]
    if call == "adapted_names":
        with pytest.raises(TypeError, match="model"):
            adapted_names(None, "all")
    elif call == "window_of_model":
        with pytest.raises(TypeError, match="model"):
            window_of(AdaptConfig(), None)
    else:
        with pytest.raises(TypeError, match="config"):
            window_of({"window": 4}, model)


# --- 3. gradient_mean_squares: every window laid out at once ------------------------------------------------


def test_gradient_mean_squares_of_a_huge_batch_count_is_a_value_error_not_a_memory_error(small):
    """``gradient_mean_squares(model, ids, batches=2**40, batch_size=1, block=4)`` builds the start of every
    window (2**40 int64: 8 TiB) before it runs one batch, and fails with NumPy's MemoryError (with
    ``batch_size=2**20`` too: NumPy's "array is too big" ValueError, naming nothing). A count past what can
    be run should be refused naming ``batches`` (and the windows laid out a batch at a time)."""
    from netcl_lite.adaptation import gradient_mean_squares

    model, _, primer = small
    try:
        gradient_mean_squares(model, primer, batches=2**40, batch_size=1, block=4)
    except ValueError as exc:
        assert "batches" in str(exc), exc
    except MemoryError as exc:
        pytest.fail(f"MemoryError reached the caller: {exc}")
    else:
        pytest.fail("2**40 batches measured")


# --- 4, 5. fingerprint.key of hostile files ----------------------------------------------------------------


def test_key_of_a_file_whose_name_is_not_utf8_is_a_key(tmp_path):
    """A file named with the byte 0xFF (valid on Linux: ``os.fsdecode`` gives the surrogate U+DCFF) makes
    ``key`` fail with "UnicodeEncodeError: 'utf-8' codec can't encode character '\\udcff'": the name is
    encoded strictly. Its name should be hashed as its bytes (``os.fsencode``), so it gets a key, distinct
    from another name's."""
    from netcl_lite import fingerprint

    bad = tmp_path / os.fsdecode(b"na\xffme.txt")
    other = tmp_path / "name.txt"
    try:
        bad.write_text("same bytes")
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system takes no such name")
    other.write_text("same bytes")
    assert fingerprint.key("x", [bad], shared="s") != fingerprint.key("x", [other], shared="s")


_FIFO_KEY = textwrap.dedent("""
    import os, sys
    from netcl_lite import fingerprint
    os.mkfifo(sys.argv[1])
    try:
        fingerprint.key("x", [sys.argv[1]], shared="s")
    except ValueError as exc:
        print("refused:", exc)
""")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX's")
def test_key_of_a_named_pipe_is_refused_not_a_hang(tmp_path):
    """``key("x", [fifo])`` reads the pipe with ``Path.read_bytes`` and waits for a writer for ever (a build
    whose snippet lists such a file hangs). It should refuse anything but a regular file with a ValueError
    naming the path."""
    fifo = tmp_path / "pipe"
    try:
        run = subprocess.run([sys.executable, "-c", _FIFO_KEY, str(fifo)], capture_output=True, text=True,
                             timeout=4, env=environment(), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("fingerprint.key blocked on a named pipe among reads")
    assert run.returncode == 0 and "refused:" in run.stdout and "pipe" in run.stdout, run.stderr[-1500:]


def test_key_of_a_folder_is_a_value_error_naming_it(tmp_path):
    """A folder among ``reads`` is a bare ``IsADirectoryError`` (an OSError, not the ValueError naming
    ``reads`` that every other wrong entry gives)."""
    from netcl_lite import fingerprint

    with pytest.raises(ValueError, match="reads"):
        fingerprint.key("x", [tmp_path], shared="s")


def test_an_adapter_whose_config_asks_for_2_to_the_40_mean_square_batches_names_ms_batches(small):
    """``AdaptConfig(ms_batches=2**40)`` is accepted, then ``Adapter(...)`` (and ``coded_bits`` with that
    config) fails in ``gradient_mean_squares`` with NumPy's "Unable to allocate 8.00 TiB" MemoryError
    (``2**62``: "Maximum allowed size exceeded"). The config, or the Adapter before it measures, should
    refuse it with a ValueError naming ``ms_batches``."""
    from netcl_lite.adaptation import AdaptConfig, Adapter

    model, _, primer = small
    try:
        Adapter(model, 1, 0, AdaptConfig(window=4, ms_batches=2**40), train_ids=primer)
    except ValueError as exc:
        assert "ms_batches" in str(exc), exc
    except MemoryError as exc:
        pytest.fail(f"MemoryError reached the caller: {exc}")
    else:
        pytest.fail("2**40 batches measured")


# --- 6, 7. fingerprint.environment / context / device_facts of a wrong argument ------------------------------


@pytest.mark.parametrize("call", ["environment", "context"])
def test_packages_given_as_one_name_is_read_as_that_package_or_refused(call):
    """``environment(packages="numpy")`` (and ``context(packages="numpy")``, which every cache key is made of)
    iterates the string: its lines say "n absent", "u absent", "m absent", ... and numpy's version is not
    in the key, silently (``key``'s ``reads`` refuses a string the same way since round 21a). A str (or
    bytes) should be refused with a TypeError naming ``packages``, or read as the one package it names."""
    from netcl_lite import fingerprint

    try:
        text = getattr(fingerprint, call)(packages="numpy")
    except TypeError as exc:
        assert "packages" in str(exc), exc
    else:
        assert "n absent" not in text.splitlines() and any(line.startswith("numpy==") for line in text.splitlines())


@pytest.mark.parametrize("call", ["device_facts", "context"])
def test_a_device_that_is_no_opencl_device_is_named(call):
    """``device_facts("cpu")`` and ``context(device=3)`` fail with "AttributeError: 'str' object has no
    attribute 'name'", naming no parameter; a TypeError naming ``device`` (a ``pyopencl.Device`` or None)
    is what every other public function gives."""
    from netcl_lite import fingerprint

    with pytest.raises(TypeError, match="device"):
        if call == "device_facts":
            fingerprint.device_facts("cpu")
        else:
            fingerprint.context(device=3)


# --- 8. ngram.Mixer.update: p_mix of any dtype --------------------------------------------------------------


@pytest.mark.parametrize("dtype", [complex, object, bool])
def test_mixer_update_refuses_a_p_mix_that_is_no_float_array_naming_it(dtype):
    """``Mixer.update`` checks only ``p_mix``'s shape (``mix`` refuses parts that are not floats): a complex
    mixture moves the weights by its real parts with NumPy's ComplexWarning, a bool one (every entry 1)
    moves them silently as if the coded token had probability 1, and an object one fails inside
    ``np.isfinite`` naming nothing. Each should be a ValueError (or TypeError) naming ``p_mix``, the
    weights left as they were."""
    import warnings

    from netcl_lite.ngram import Mixer

    mixer = Mixer(3)
    parts = [np.full((2, 5), 0.2) for _ in range(mixer.w.shape[2])]
    p = mixer.mix(parts, np.array([1, 2]), np.array([3.0, 4.0]))
    before = mixer.w.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises((ValueError, TypeError), match="p_mix"):
            mixer.update(np.array([1, 2]), p.astype(dtype), np.array([True, True]))
    assert np.array_equal(mixer.w, before)


# --- 9. tokenizer_fingerprint of a pre-split pattern holding a lone surrogate --------------------------------


def test_a_pattern_with_a_lone_surrogate_is_refused_by_the_tokenizer_or_fingerprinted():
    """``BPETokenizer(pattern="\\udc80|\\\\S+|\\\\s+")`` is accepted (special tokens holding a lone surrogate
    are refused since round 32c), and then ``tokenizer_fingerprint`` (so ``compress`` and ``decompress``)
    fails with "UnicodeEncodeError: 'utf-8' codec can't encode character '\\udc80'", naming neither the
    tokenizer nor its pattern. The tokenizer should refuse the pattern naming it, or the fingerprint hash
    it (e.g. with surrogatepass), distinct from another pattern's."""
    from netcl_lite.compression import tokenizer_fingerprint
    from netcl_lite.text import BPETokenizer

    try:
        tok = BPETokenizer(pattern="\udc80|\\S+|\\s+")
    except ValueError as exc:
        assert "pattern" in str(exc) and not isinstance(exc, UnicodeError), exc
        return
    other = BPETokenizer(pattern="\udc81|\\S+|\\s+")
    assert len(tokenizer_fingerprint(tok)) == 8 and tokenizer_fingerprint(tok) != tokenizer_fingerprint(other)
