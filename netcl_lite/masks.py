"""Who may attend to whom: boolean visibility masks, True = allowed.

Every mask has shape (Tq, Tk): row i is query i, column j is key j. A `valid` argument is either an
int T (T positions, none of them padding) or a (T,) bool array with True for real tokens and False
for padding. The three families differ only in their mask:

    encoder(6)                  (6, 6)  every real token sees every real token      36 pairs
    causal(4)                   (4, 4)  query i sees keys j <= i                    10 pairs
    cross(4, [True] * 4 + [False] * 2)
                                (4, 6)  each target query sees every real source    16 pairs

subtle: a padding query's row is all False. Softmax over an all-blocked row is undefined, so drop
those rows (or their outputs) rather than feeding them to attention.
"""

from collections.abc import Sequence
import numbers

import numpy as np

from .checks import count, integer, not_masked

#: the most cells a mask built here may hold (256 MiB of bool): 16,384 queries by 16,384 keys. A
#: length of 2**40 asked NumPy for terabytes and failed with a bare MemoryError naming nothing.
MAX_CELLS = 1 << 28


def encoder(valid):
    """Bidirectional self-attention: each real query sees every real key.

    valid: int T or (T,) bool (True = real token). Returns (T, T) bool.

    >>> int(encoder([True, True, False]).sum())
    4
    """
    real = _positions("valid", valid)
    _check_cells("valid", "valid", real.size, real.size)
    return real[:, None] & real[None, :]


def query_start(query_len, key_len):
    """Where causal queries sit among the keys: query i is at position query_start + i.

    The queries are the *last* query_len of key_len positions (key_len - query_len), the layout of
    cached decoding (keys = cached prefix + new tokens). This is the one definition of causal
    alignment: :func:`causal`, the float64 references and every kernel (as its ``q_start``
    argument, with ``causal_allowed`` in ``kernels/common.h``) take it from here.

    >>> query_start(1, 5)           # one new token after four cached ones sits at position 4
    4
    """
    return (integer("key_len", key_len, "a count of key positions")
            - integer("query_len", query_len, "a count of query positions"))


def causal(query_len, key_len=None):
    """Decoder self-attention: query i sees key j when j <= query_start + i (no key from its future).

    key_len defaults to query_len, giving the square j <= i; with more keys than queries the queries
    are the last ones (:func:`query_start`). Returns (query_len, key_len) bool. Lengths are ints with
    0 <= query_len <= key_len.

    >>> print(render(causal(2, 4)))
    # # # .
    # # # #
    """
    query_len = _length("query_len", query_len)
    key_len = query_len if key_len is None else _length("key_len", key_len)
    if query_len > key_len:
        raise ValueError(
            f"query_len {query_len} > key_len {key_len}: the queries are the last query_len "
            "of key_len positions, so pass key_len >= query_len"
        )
    _check_cells("query_len", "key_len", query_len, key_len)
    return np.arange(key_len)[None, :] <= query_start(query_len, key_len) + np.arange(query_len)[:, None]


def cross(target_valid, source_valid):
    """Encoder-decoder cross-attention: each real target query sees every real source key.

    target_valid: int Tt or (Tt,) bool; source_valid: int Ts or (Ts,) bool. Returns (Tt, Ts) bool.

    >>> int(cross(4, [True, True, True, True, False, False]).sum())
    16
    """
    target = _positions("target_valid", target_valid)
    source = _positions("source_valid", source_valid)
    _check_cells("target_valid", "source_valid", target.size, source.size)
    return target[:, None] & source[None, :]


def combine(*masks):
    """Allowed only where every mask allows: the elementwise AND of equal-shape (Tq, Tk) masks.

    Unlike a bare `a & b`, this refuses masks of different shapes instead of broadcasting them.
    Typical use: a padded decoder, combine(causal(T), encoder(target_valid)).

    >>> int(combine(causal(3), encoder([True, True, False])).sum())
    3
    """
    if not masks:
        raise ValueError("combine needs at least one mask")
    checked = [_mask(f"masks[{i}]", mask) for i, mask in enumerate(masks)]
    for i, mask in enumerate(checked[1:], start=1):
        if mask.shape != checked[0].shape:
            raise ValueError(
                f"masks[0] has shape {checked[0].shape} but masks[{i}] has {mask.shape}: "
                "combine masks over the same (Tq, Tk)"
            )
    return np.logical_and.reduce(checked)


def teacher_forcing(tokens):
    """Shift a sequence by one: inputs = tokens[:-1], targets = tokens[1:].

    Input position i sees tokens[:i + 1] under a causal mask and is trained to predict tokens[i + 1],
    so no position sees its own target. tokens: a sequence (list, tuple, str) of length T >= 2, or an
    array whose last axis is time, (..., T). Returns (inputs, targets), each of length T - 1.

    >>> teacher_forcing(['BOS', 'a', 'EOS'])
    (['BOS', 'a'], ['a', 'EOS'])
    """
    if isinstance(tokens, np.ndarray):
        if tokens.ndim == 0 or tokens.shape[-1] < 2:
            raise ValueError(f"tokens must have at least 2 positions on its last axis, got shape {tokens.shape}")
        return tokens[..., :-1], tokens[..., 1:]
    if not isinstance(tokens, Sequence):
        raise TypeError(f"tokens must be a sequence (list, tuple, str) or an array, got {type(tokens).__name__}")
    if len(tokens) < 2:
        raise ValueError(f"tokens needs at least 2 items (e.g. BOS and one token), got {len(tokens)}")
    return tokens[:-1], tokens[1:]


def render(mask):
    """Text picture of a (Tq, Tk) mask: '#' allowed, '.' blocked, one query row per line.

    >>> print(render(causal(3)))
    # . .
    # # .
    # # #
    """
    return "\n".join(" ".join("#" if allowed else "." for allowed in row) for row in _mask("mask", mask))


def _positions(name, valid):
    """int T -> T True values; a (T,) bool array-like -> itself as a bool array."""
    if isinstance(valid, numbers.Integral) and not isinstance(valid, (bool, np.bool_)):
        return np.ones(_length(name, valid), dtype=bool)
    not_masked(name, valid)            # asarray drops the mask: a masked-out flag read as the value under it
    array = np.asarray(valid)
    if array.dtype != bool:
        raise TypeError(
            f"{name} must be an int length or booleans (True = real token, False = padding), "
            f"got dtype {array.dtype}: convert with np.asarray(x, dtype=bool)"
        )
    if array.ndim != 1:
        raise ValueError(f"{name} must be an int length or 1-D (one flag per position), got shape {array.shape}")
    return array


def _length(name, value):
    value = count(name, value, 0)
    if value > MAX_CELLS:
        raise ValueError(f"{name} must be at most {MAX_CELLS:,} (a mask of that many positions already holds "
                         f"{MAX_CELLS:,} cells per row), got {value:,}")
    return value


def _check_cells(rows_name, cols_name, rows: int, cols: int) -> None:
    """Refuse a (rows, cols) mask past :data:`MAX_CELLS` before NumPy is asked for it."""
    if rows * cols > MAX_CELLS:
        raise ValueError(f"{rows_name} x {cols_name} is {rows:,} x {cols:,} = {rows * cols:,} cells; masks built "
                         f"here hold at most {MAX_CELLS:,} (16,384 x 16,384): build a smaller one, or a block of it")


def _mask(name, mask):
    not_masked(name, mask)             # asarray drops the mask: a masked-out cell read as the value under it
    array = np.asarray(mask)
    if array.dtype != bool:
        raise TypeError(f"{name} must be a bool array (True = allowed), got dtype {array.dtype}")
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D (Tq, Tk), got shape {array.shape}")
    return array
