"""The argument checks every public function shares: each names the parameter and what to pass.

    >>> positive_int("n_heads", 4)
    4
    >>> positive_int("n_heads", 0)
    Traceback (most recent call last):
    ...
    ValueError: n_heads must be a positive int, got 0
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable


def positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def nonnegative_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return int(value)


def finite_real(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


def positive_real(name: str, value, why: str = "") -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number{why}, got {value!r}")
    return float(value)


def flag(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def one_of(name: str, value, choices: tuple):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


#: largest element count or index the kernels' 32-bit ints address
INT_MAX = 2**31 - 1


def int32_range(**sizes: int) -> None:
    """Refuse sizes the kernels cannot index with 32-bit ints."""
    for name, value in sizes.items():
        if value > INT_MAX:
            raise ValueError(f"{name}={value} exceeds the 32-bit index range of the kernels")


def int_at_least(name: str, value, minimum: int, why: str = "") -> int:
    """An int of at least ``minimum``: a ``TypeError`` for anything not an int (a bool included),
    a ``ValueError`` for one too small; ``why`` (``" (use 0 to ...)"``) follows the bound.

    >>> int_at_least("vocab_size", 255, 256)
    Traceback (most recent call last):
    ...
    ValueError: vocab_size must be an int >= 256, got 255
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}{why}, got {value!r}")
    return int(value)


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
