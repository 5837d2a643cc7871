"""Round 38a: hostile inputs to the cache keys' fingerprint and to the compressor's adaptation; each test
fails on the code it was written against.

1. ``fingerprint.key`` of a ``source`` (or ``shared``) holding a lone surrogate that stands for no byte
   (U+D800..U+DC7F, U+DD00..U+DFFF: ``surrogateescape`` encodes only U+DC80..U+DCFF) is a bare
   UnicodeEncodeError naming neither parameter.
2. ``fingerprint.key`` with a path holding a NUL among ``reads`` is "ValueError: embedded null byte"
   (``Path.resolve`` runs before ``read_regular``'s own check), naming neither the path nor ``reads``.
3. ``fingerprint.files_digest``, public, checks nothing of ``paths``: one path given as a str is read as
   one path per character (the error then speaks of "/" as a folder), an int is os's TypeError.
4. ``fingerprint.environment(packages=[""])`` is importlib's "A distribution name is required.",
   naming no parameter.
5. ``Adapter.refill(cache, inputs)`` takes a NumPy masked array as the values under its mask (the rest of
   the adaptation refuses one by name since round 37a).
6. ``gradient_mean_squares(names=[[...]])`` is a bare "unhashable type: 'list'" naming no parameter.
7. ``dynamic_evaluation.coded_bits(..., config=None, train_ids=..., state=...)`` ignores ``train_ids`` and
   ``state`` silently, whatever they hold (a str, an int): no Adapter is made to read them.
8. ``fingerprint.key`` gives two different str sources one key: "\\u00e9" and "\\udcc3\\udca9" (the two
   lone surrogates that surrogateescape turns into the bytes C3 A9) both hash as b"\\xc3\\xa9".
9. ``match.last_wins`` checks the kind of ``slots`` only when one lies outside the table: float, NaN or
   object slots within it fail inside NumPy ("arrays used as indices must be of integer (or boolean) type"),
   and ``values`` given as a list fails with "only integer scalar arrays can be converted to a scalar index".
   ``add_in_order`` names its ``index`` for the same kinds.
10. ``fingerprint.key`` with a symlink loop among ``reads`` is "RuntimeError: Symlink loop from ..." (Python
    3.11's ``Path.resolve``, before ``read_regular`` looks), not the ValueError / OSError naming the path
    that every other unreadable entry gives; an ``os.PathLike`` whose ``__fspath__`` returns bytes passes
    ``key``'s check of ``reads`` and fails in pathlib naming no parameter.
"""

from __future__ import annotations

import numpy as np
import pytest

from cli_model import tiny_model


@pytest.fixture(scope="module")
def small(queue):
    return tiny_model(queue)


# --- 1. a lone surrogate that stands for no byte ----------------------------------------------------------


@pytest.mark.parametrize("where", ["source", "shared"])
@pytest.mark.parametrize("surrogate", ["\ud800", "\udc7f", "\udd00"])
def test_key_of_text_with_a_lone_surrogate_names_the_parameter_or_keys_it(where, surrogate):
    """``key("x\\ud800")`` fails with "UnicodeEncodeError: 'utf-8' codec can't encode character '\\ud800'
    ... surrogates not allowed": the round 37 ``surrogateescape`` keys U+DC80..U+DCFF only. Such a str
    should get a key of its own (e.g. hashed with surrogatepass where surrogateescape cannot), or be refused
    with a ValueError naming ``source`` / ``shared`` that is no UnicodeError."""
    from netcl_lite import fingerprint

    text = f"print(1)  # {surrogate}"
    kwargs = {"source": text, "shared": "s"} if where == "source" else {"source": "x", "shared": text}
    plain = {"source": "print(1)  # ", "shared": "s"} if where == "source" else {"source": "x", "shared": "s"}
    try:
        got = fingerprint.key(**kwargs)
    except UnicodeError as exc:
        pytest.fail(f"raw {type(exc).__name__} reached the caller: {exc}")
    except ValueError as exc:
        assert where in str(exc), exc
    else:
        assert got != fingerprint.key(**plain)


# --- 2. a NUL in a path among reads ----------------------------------------------------------------------


def test_key_of_a_path_with_a_nul_names_it_and_reads(tmp_path):
    """``key("x", [".../a\\0b"])`` is "ValueError: embedded null byte" from ``Path.resolve``, naming neither
    the path nor ``reads``; ``read_regular`` (which ``files_digest`` calls after resolving) names both, as
    ``files._no_nul`` does for every other reader."""
    from netcl_lite import fingerprint

    with pytest.raises(ValueError) as info:
        fingerprint.key("x", [str(tmp_path / "a\0b")], shared="s")
    assert "reads" in str(info.value) or "NUL" in str(info.value), info.value


# --- 3. files_digest of a str or of something that is no path -----------------------------------------------


def test_files_digest_of_one_path_as_a_str_is_refused_naming_paths(tmp_path):
    """``files_digest("/tmp/.../a.txt")`` iterates the str: it digests "/" (refused as "/ is a directory"),
    or, for a relative name whose characters exist as files, digests those files, silently. ``key`` refuses a
    str ``reads`` with "wrap a single path as [path]" since round 21a; ``files_digest`` is public too and
    should refuse a str (or bytes, or a path) with a TypeError naming ``paths``."""
    from netcl_lite import fingerprint

    one = tmp_path / "a.txt"
    one.write_text("hello")
    with pytest.raises(TypeError, match="paths"):
        fingerprint.files_digest(str(one))


def test_files_digest_of_a_path_that_is_no_path_names_paths():
    """``files_digest([3])`` is os's "TypeError: expected str, bytes or os.PathLike object, not int", naming
    no parameter; it should name ``paths`` (as ``key``'s "reads must hold paths" does)."""
    from netcl_lite import fingerprint

    with pytest.raises(TypeError, match="paths"):
        fingerprint.files_digest([3])


# --- 4. an empty package name -------------------------------------------------------------------------------


def test_environment_of_an_empty_package_name_names_packages():
    """``environment(packages=[""])`` (and ``context``) fails in importlib with "ValueError: A distribution name
    is required.", naming no parameter; ``_package_names`` refuses non-str names by name but lets "" through.
    It should be a ValueError naming ``packages`` (or "" listed as absent, as an unknown name is)."""
    from netcl_lite import fingerprint

    try:
        text = fingerprint.environment(packages=[""])
    except ValueError as exc:
        assert "packages" in str(exc), exc
    else:
        assert " absent" in text


# --- 5. Adapter.refill of a masked array --------------------------------------------------------------------


def test_adapter_refill_refuses_masked_inputs_naming_them(small, queue):
    """``Adapter.refill(cache, np.ma.array(inputs, mask=...))`` runs the values under the mask through the
    model into the cache, silently (``observe``, ``train_ids`` and ``coded_bits``'s ids refuse a masked
    array with ``checks.not_masked`` since round 37a). It should be a TypeError naming ``inputs``."""
    from netcl_lite.adaptation import AdaptConfig, Adapter
    from netcl_lite.nn import KVCache

    model, _, primer = small
    adapter = Adapter(model, 2, 0, AdaptConfig(window=4, ms_batches=1, chunk=2, refill=True), train_ids=primer)
    c = model.config
    cache = KVCache(queue, c.num_hidden_layers, 2, c.num_key_value_heads, c.head_dim, c.max_position_embeddings)
    inputs = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    adapter.model.hidden(inputs, cache).numpy()
    masked = np.ma.array(inputs, mask=np.zeros(inputs.shape, bool))
    masked.mask[0, 1] = True
    with pytest.raises(TypeError, match="inputs must not be a masked array"):
        adapter.refill(cache, masked)


# --- 6. gradient_mean_squares of unhashable names ----------------------------------------------------------


def test_gradient_mean_squares_of_unhashable_names_names_them(small):
    """``gradient_mean_squares(..., names=[["norm.weight"]])`` is "TypeError: unhashable type: 'list'" from
    ``set(names)``, naming no parameter; it should be a TypeError (or ValueError) naming ``names``."""
    from netcl_lite.adaptation import gradient_mean_squares

    model, _, primer = small
    with pytest.raises((TypeError, ValueError), match="names"):
        gradient_mean_squares(model, primer, batches=1, batch_size=1, block=4, names=[["norm.weight"]])


# --- 7. coded_bits without a config ignores train_ids and state -----------------------------------------------


@pytest.mark.parametrize("given", [{"train_ids": "not token ids"}, {"state": 42}])
def test_coded_bits_without_a_config_refuses_train_ids_or_state_it_would_ignore(small, given):
    """``coded_bits(model, tok, ids, None, train_ids="not token ids")`` (or ``state=42``) returns bits as if the
    argument were not there: with no config no Adapter is made, so nothing reads, checks or uses it. A caller
    who meant to adapt (and forgot ``config``) gets unadapted bits, silently. ``Adapter`` refuses a ``state``
    its optimizer does not read (``'sgd'``) by name; ``coded_bits`` should refuse ``train_ids`` / ``state``
    without a ``config`` the same way (a ValueError or TypeError naming the argument)."""
    from netcl_lite.dynamic_evaluation import coded_bits

    model, tok, primer = small
    name = next(iter(given))
    with pytest.raises((ValueError, TypeError), match=name):
        coded_bits(model, tok, primer[:20], None, **given)


# --- 8. two str sources with one key ------------------------------------------------------------------------


def test_two_different_str_sources_get_two_keys():
    """``key("\\u00e9")`` equals ``key("\\udcc3\\udca9")``: surrogateescape encodes each of the two lone
    surrogates as the byte it stands for, and together they are the UTF-8 of U+00E9. Two different
    sources then share one key, so one's stored result would be served for the other. (No decoder gives
    the second str from bytes, so it takes a caller building it; still, ``key`` promises a new key for any
    edit.) Only a surrogate run that does not decode as UTF-8 should be keyed as its bytes, or such a str be
    refused naming ``source``."""
    from netcl_lite import fingerprint

    try:
        odd = fingerprint.key("x = '\udcc3\udca9'", shared="s")
    except ValueError as exc:
        assert "source" in str(exc) and not isinstance(exc, UnicodeError), exc
        return
    assert odd != fingerprint.key("x = '\u00e9'", shared="s")


# --- 9. match.last_wins of slots that are no integers, or values that are a list -----------------------------


@pytest.mark.parametrize("slots", [np.array([1.0, 2.0]), np.array([np.nan, 1.0]), np.array([1, 2], object)])
def test_last_wins_names_slots_that_are_no_integer_indices(slots):
    """``last_wins(np.array([1.0, 2.0]), values, table)`` fails inside NumPy with "IndexError: arrays used as
    indices must be of integer (or boolean) type", naming nothing: ``_rows``'s check of the kind runs only
    for a slot outside the table. ``add_in_order`` refuses a float index with "index must hold integer row
    indices"; ``last_wins`` should name ``slots`` the same way, the table left as it was."""
    from netcl_lite.match import last_wins

    table = np.zeros(4)
    with pytest.raises((IndexError, TypeError, ValueError), match="slots"):
        last_wins(slots, np.array([5.0, 6.0]), table)
    assert not table.any()


def test_last_wins_takes_values_as_a_list_or_names_them():
    """``last_wins(np.array([1, 1]), [5.0, 6.0], table)`` passes the shape check (``np.ndim`` of a list) and
    fails with "TypeError: only integer scalar arrays can be converted to a scalar index" (``values[order]``
    of a list). It should set ``table[1] = 6.0`` (the last wins) or refuse ``values`` by name."""
    from netcl_lite.match import last_wins

    table = np.zeros(4)
    try:
        last_wins(np.array([1, 1]), [5.0, 6.0], table)
    except (TypeError, ValueError) as exc:
        assert "values" in str(exc), exc
    else:
        assert table.tolist() == [0.0, 6.0, 0.0, 0.0]


# --- 10. reads: a symlink loop, a path-like of bytes --------------------------------------------------------


def test_key_of_a_symlink_loop_is_refused_naming_the_path_not_a_runtime_error(tmp_path):
    """``key("x", [loop])``, ``loop`` a symlink to a symlink to it, raises "RuntimeError: Symlink loop from
    '.../a'" on Python 3.11 (``Path(path).resolve()`` in ``files_digest``, before ``read_regular`` checks the
    entry): no ValueError or OSError, so a caller that handles a bad entry of ``reads`` lets it through. It
    should be an OSError (ELOOP) or a ValueError naming the path, as a missing file (FileNotFoundError) or a
    folder (ValueError) is."""
    import os

    from netcl_lite import fingerprint

    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    with pytest.raises((OSError, ValueError)) as info:
        fingerprint.key("x", [str(tmp_path / "a")], shared="s")
    assert str(tmp_path / "a") in str(info.value)


def test_key_of_a_path_like_that_gives_bytes_names_reads():
    """``key("x", [p])`` with ``p.__fspath__()`` returning bytes passes ``key``'s "reads must hold paths (str or
    os.PathLike)" check and fails in pathlib with "TypeError: argument should be a str object or an os.PathLike
    object returning str, not <class 'bytes'>", naming no parameter. It should be keyed (``os.fsdecode``) or
    refused with a TypeError naming ``reads``."""
    import os

    from netcl_lite import fingerprint

    class BytesPath(os.PathLike):
        def __fspath__(self):
            return os.fsencode(__file__)

    try:
        got = fingerprint.key("x", [BytesPath()], shared="s")
    except TypeError as exc:
        assert "reads" in str(exc), exc
    else:
        assert got == fingerprint.key("x", [__file__], shared="s")
