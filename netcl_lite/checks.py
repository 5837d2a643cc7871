"""The argument checks every public function shares: each names the parameter and what to pass.

Every message reads "NAME must be WHAT[ (HINT)], got VALUE". A value of the wrong kind raises
ValueError, except through :func:`integer`, :func:`count` and :func:`real`, which raise TypeError
for a value of the wrong type (a float or a bool for an int, a str for a number) and ValueError
for one out of range.

    >>> positive_int("n_heads", 4)
    4
    >>> positive_int("n_heads", 0)
    Traceback (most recent call last):
    ...
    ValueError: n_heads must be a positive int, got 0
    >>> count("top_k", 2.5)
    Traceback (most recent call last):
    ...
    TypeError: top_k must be an int, got float 2.5
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable


def _hint(what: str) -> str:
    return f" ({what})" if what else ""


def _is_int(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Integral)


def _is_real(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Real)


def positive_int(name: str, value, what: str = "") -> int:
    """``value`` as an int >= 1 (ValueError otherwise, bools refused)."""
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name} must be a positive int{_hint(what)}, got {value!r}")
    return int(value)


def nonnegative_int(name: str, value, what: str = "") -> int:
    """``value`` as an int >= 0 (ValueError otherwise, bools refused)."""
    if not _is_int(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative int{_hint(what)}, got {value!r}")
    return int(value)


def int_in(name: str, value, low: int, high: int, what: str = "") -> int:
    """``value`` as an int in ``[low, high)`` (ValueError otherwise, bools refused)."""
    if not _is_int(value) or not low <= value < high:
        raise ValueError(f"{name} must be an int in [{low}, {high}){_hint(what)}, got {value!r}")
    return int(value)


def integer(name: str, value, what: str = "") -> int:
    """``value`` as an int; TypeError for anything else (floats and bools included)."""
    if not _is_int(value):
        raise TypeError(f"{name} must be an int{_hint(what)}, got {type(value).__name__} {value!r}")
    return int(value)


def count(name: str, value, minimum: int = 1, what: str = "") -> int:
    """``value`` as an int >= ``minimum``: TypeError when it is no int, ValueError when too small."""
    integer(name, value, what)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}{_hint(what)}, got {value!r}")
    return int(value)


def real(name: str, value, what: str = "") -> float:
    """``value`` as a float; TypeError for anything that is not a real number (bools included)."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number{_hint(what)}, got {type(value).__name__}")
    return float(value)


def finite_real(name: str, value, what: str = "") -> float:
    if not _is_real(value) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number{_hint(what)}, got {value!r}")
    return float(value)


def nonnegative_real(name: str, value, what: str = "") -> float:
    if not _is_real(value) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative finite number{_hint(what)}, got {value!r}")
    return float(value)


def positive_real(name: str, value, what: str = "") -> float:
    if not _is_real(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number{_hint(what)}, got {value!r}")
    return float(value)


def flag(name: str, value) -> bool:
    if not isinstance(value, bool):
        kind = type(value)
        if kind.__module__ != "builtins":         # NumPy 2 names its own bool type 'bool'
            raise TypeError(f"{name} must be a bool, got {kind.__module__}.{kind.__qualname__}; "
                            f"pass True or False (bool(...) of it)")
        raise TypeError(f"{name} must be a bool, got {kind.__name__}")
    return value


def one_of(name: str, value, choices, what: str = ""):
    """``value`` if it is one of ``choices`` (strings; a dict's keys, a set or a tuple)."""
    listed = sorted(choices) if isinstance(choices, (set, frozenset, dict)) else choices
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {listed}{_hint(what)}, got {value!r}")
    return value


def dtype_is(name: str, value, dtype: str, what: str = "Tensor"):
    """``value`` when its ``dtype`` is ``dtype`` (a NumPy dtype name such as ``"float32"``);
    TypeError naming the dtype found otherwise."""
    if value.dtype != dtype:
        article = "an" if dtype[0] in "aeiou" else "a"
        raise TypeError(f"{name} must be {article} {dtype} {what}, got {value.dtype}")
    return value


#: largest element count or index the kernels' 32-bit ints address
INT_MAX = 2**31 - 1


def int32_range(**sizes: int) -> None:
    """Refuse sizes the kernels cannot index with 32-bit ints."""
    for name, value in sizes.items():
        if value > INT_MAX:
            raise ValueError(f"{name}={value} exceeds the 32-bit index range of the kernels")


def token_ids(ids, name: str = "ids") -> list[int]:
    """Token ids as a list of ``int``, from any iterable of integers (a NumPy array included).

    >>> token_ids(np.array([3, 1]))
    [3, 1]
    >>> token_ids([1.0])
    Traceback (most recent call last):
    ...
    TypeError: ids must be ints, got an element of type float
    """
    if isinstance(ids, (str, bytes, bytearray)) or not isinstance(ids, Iterable):
        raise TypeError(f"{name} must be a sequence of int token ids, got {type(ids).__name__}")
    if hasattr(ids, "dtype") and hasattr(ids, "tolist"):  # NumPy array
        if ids.dtype.kind not in "iu":
            raise TypeError(f"{name} must be integers, got an array of {ids.dtype}")
        return ids.tolist()
    ids = ids if isinstance(ids, list) else list(ids)
    kinds = set(map(type, ids))
    if kinds <= {int}:
        return ids
    bad = next((k for k in kinds if k is bool or not issubclass(k, numbers.Integral)), None)
    if bad is not None:
        raise TypeError(f"{name} must be ints, got an element of type {bad.__name__}")
    return list(map(int, ids))  # e.g. NumPy integer scalars


def id_array(name: str, value, high: int | None = None, *, what: str = "token ids") -> np.ndarray:
    """``value`` as a 1-D int64 array of integers in [0, ``high``) (no upper bound when ``high`` is
    None): TypeError when it is no integer array, ValueError for a value out of range.

    >>> id_array("primer", [3, 1], 4)
    array([3, 1])
    >>> id_array("primer", [3, 4], 4)
    Traceback (most recent call last):
    ...
    ValueError: primer must hold token ids in [0, 4), got values from 3 to 4
    """
    import numpy as np

    arr = np.asarray(value) if not isinstance(value, (str, bytes)) else None
    if arr is None or arr.ndim != 1 or (arr.size and (arr.dtype.kind not in "iu" or arr.dtype == np.bool_)):
        shown = f"{arr.dtype} of shape {arr.shape}" if arr is not None else type(value).__name__
        raise TypeError(f"{name} must be a 1-D array of integer {what}, got {shown}")
    if arr.size and (arr.min() < 0 or (high is not None and arr.max() >= high)):
        bound = f"[0, {high})" if high is not None else "[0, ∞)"
        raise ValueError(f"{name} must hold {what} in {bound}, got values from {int(arr.min())} to {int(arr.max())}")
    return arr.astype(np.int64, copy=False)
