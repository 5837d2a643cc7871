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

import copy
import math
import numbers
from collections.abc import Iterable, Mapping


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


def _finite(value) -> bool:
    """Whether the real ``value`` is finite as a float: an int too large for one (10**400) is not."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _shown(value) -> str:
    """``repr(value)`` for a message, at most 80 characters (an int of thousands of digits is not
    written out, nor one past the digits Python converts to text)."""
    try:
        text = repr(value)
    except ValueError:
        return f"an int of {value.bit_length():,} bits"
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text):,} characters)"


def finite_real(name: str, value, what: str = "") -> float:
    if not _is_real(value) or not _finite(value):
        raise ValueError(f"{name} must be a finite real number{_hint(what)}, got {_shown(value)}")
    return float(value)


def nonnegative_real(name: str, value, what: str = "") -> float:
    if not _is_real(value) or not _finite(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative finite number{_hint(what)}, got {_shown(value)}")
    return float(value)


def positive_real(name: str, value, what: str = "") -> float:
    if not _is_real(value) or not _finite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number{_hint(what)}, got {_shown(value)}")
    return float(value)


def within_float32(name: str, value: float, what: str = "", *, positive: bool = False) -> float:
    """``value`` (a finite Python float, already checked) when a kernel's float32 argument holds it:
    ValueError naming ``name`` when its magnitude is beyond float32's largest (the argument would be
    inf), or, with ``positive``, when it is below float32's smallest normal number (a kernel would
    read it as 0, or as a denormal that a device may flush to 0)."""
    import numpy as np

    info = np.finfo(np.float32)
    if abs(value) > float(info.max):
        raise ValueError(f"{name}={value!r} is beyond float32's range (largest {float(info.max):.4g}): the "
                         f"kernel, which computes in float32, would read it as inf{_hint(what)}")
    if positive and value < float(info.tiny):
        raise ValueError(f"{name}={value!r} is below float32's smallest normal number ({float(info.tiny):.4g}): "
                         f"the kernel, which computes in float32, would read it as 0{_hint(what)}")
    return value


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
    found = getattr(value, "dtype", None)
    if found is None or found != dtype:
        article = "an" if dtype[0] in "aeiou" else "a"
        shown = found if found is not None else type(value).__name__      # a list has no dtype
        raise TypeError(f"{name} must be {article} {dtype} {what}, got {shown}")
    return value


#: largest element count or index the kernels' 32-bit ints address
INT_MAX = 2**31 - 1


def int32_range(**sizes: int) -> None:
    """Refuse sizes the kernels cannot index with 32-bit ints (TypeError, naming it, for a non-int)."""
    for name, value in sizes.items():
        integer(name, value, "a size the kernels index")
        if value > INT_MAX:
            raise ValueError(f"{name}={value} exceeds the 32-bit index range of the kernels")


def not_masked(name: str, value) -> None:
    """TypeError naming ``name`` for a NumPy masked array (or a memoryview of one): its mask would be
    ignored, and the values under it taken as if they were there."""
    import numpy as np

    def masked(v) -> bool:
        return isinstance(v, np.ma.MaskedArray) or isinstance(getattr(v, "obj", None), np.ma.MaskedArray)

    found = masked(value)
    # A list or tuple of them too: np.asarray of [masked] drops the mask as well.
    stack = [value] if isinstance(value, (list, tuple)) else []
    while stack and not found:
        for item in stack.pop():
            if isinstance(item, (list, tuple)):
                stack.append(item)
            elif masked(item):
                found = True
                break
    if found:
        raise TypeError(f"{name} must not be a masked array: its mask would be ignored; pass the values "
                        f"meant, e.g. {name}.compressed() (the unmasked ones) or {name}.filled(value)")


def plain_array(name: str, value):
    """``value`` as the host models read an array: TypeError naming ``name`` for a NumPy masked array
    (:func:`not_masked`), any other ndarray subclass read as the plain ndarray it holds (a view, no copy:
    ``np.matrix`` makes ``*`` a matrix product and keeps its reductions 2-D, which failed inside NumPy,
    naming no parameter), anything else (a plain ndarray, a list...) returned as it is, for the caller's
    own checks."""
    import numpy as np

    not_masked(name, value)
    if isinstance(value, np.ndarray) and type(value) is not np.ndarray:
        return np.asarray(value)
    return value


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
    not_masked(name, ids)                              # tolist() gives None where it masks
    if hasattr(ids, "dtype") and hasattr(ids, "tolist"):  # NumPy array
        if ids.dtype.kind not in "iu":
            raise TypeError(f"{name} must be integers, got an array of {ids.dtype}")
        if getattr(ids, "ndim", 1) != 1:                # tolist() gives nested lists, or one int for 0-D
            raise TypeError(f"{name} must be a 1-D sequence of token ids, got an array of shape "
                            f"{tuple(ids.shape)}; pass one sequence (e.g. {name}.ravel(), or decode_batch "
                            f"for one sequence per row)")
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

    not_masked(name, value)
    arr = np.asarray(value) if not isinstance(value, (str, bytes)) else None
    if arr is None or arr.ndim != 1 or (arr.size and (arr.dtype.kind not in "iu" or arr.dtype == np.bool_)):
        shown = f"{arr.dtype} of shape {arr.shape}" if arr is not None else type(value).__name__
        raise TypeError(f"{name} must be a 1-D array of integer {what}, got {shown}")
    if arr.size and (arr.min() < 0 or (high is not None and arr.max() >= high)):
        bound = f"[0, {high})" if high is not None else "[0, ∞)"
        raise ValueError(f"{name} must hold {what} in {bound}, got values from {int(arr.min())} to {int(arr.max())}")
    if arr.size and arr.max() > np.iinfo(np.int64).max:     # uint64: the int64 copy wrapped them negative
        raise ValueError(f"{name} must hold {what} below 2^63 (they are kept as int64), got values up to "
                         f"{int(arr.max())}")
    return arr.astype(np.int64, copy=False)



def step_ids(tokens, active, streams: int, high: int | None = None):
    """(``tokens``, ``active``) of one coding step of ``streams`` streams as a host model's ``update``
    takes them: one integer id per stream in [0, ``high``) (:func:`id_array`: TypeError, ValueError)
    and a bool per stream saying whether it is still coding; ValueError for other shapes or kinds.

    >>> step_ids([3, 1], [True, False], 2, 4)
    (array([3, 1]), array([ True, False]))
    """
    import numpy as np

    tokens = id_array("tokens", tokens, high)
    not_masked("active", active)          # asarray drops the mask: a masked-out stream was coded as active
    active = np.asarray(active)
    if tokens.shape != (streams,) or active.shape != (streams,) or active.dtype != np.bool_:
        raise ValueError(f"tokens and active must each hold one entry per stream ({streams}), active as bools; got "
                         f"{tokens.size} tokens and active {active.dtype} of shape {active.shape}")
    return tokens, active

# -- sizes of the compressor's host models (netcl_lite.ngram, .match, .context_mixing) --------------------

#: streams the host models are sized for, at most (the compressor codes in at most 32)
MAX_STREAMS = 1024
#: tokens they are sized for, the streams' count times the longest stream, at most: 16 times the most
#: the compressor codes (MAX_INPUT_BYTES, 2^20 bytes, at least one byte a token)
MAX_STREAM_TOKENS = 1 << 24
#: the largest vocabulary they take: they keep (vocab,) and (streams, vocab) tables (o200k, the largest
#: tokenizer in use, has about 200,000 ids)
MAX_TOKEN_VOCAB = 1 << 20
#: float64 cells one of their tables may hold, at most (1 GiB): the streams' caches and the n-gram's
#: scratch hold one per stream, token id (and order)
MAX_TABLE_CELLS = 1 << 27


def coder_sizes(*, vocab=None, lengths=None, streams=None, orders=1, pieces=None) -> None:
    """Refuse, naming the parameter, the sizes that no input of the compressor has, before a host model
    allocates by them: a ``vocab`` over :data:`MAX_TOKEN_VOCAB`, ``lengths`` (each stream's token
    count) of more streams than :data:`MAX_STREAMS` or more tokens than :data:`MAX_STREAM_TOKENS`,
    ``streams`` over :data:`MAX_STREAMS`, tables of ``streams × vocab × orders`` float64 cells over
    :data:`MAX_TABLE_CELLS`, and ``pieces`` that do not map int ids to bytes. Arguments left None are
    not checked; ``orders`` counts only when it is an int (its own range is its model's to check).

    >>> coder_sizes(lengths=np.array([10**12]))
    Traceback (most recent call last):
    ...
    ValueError: lengths must give at most MAX_STREAM_TOKENS = 16,777,216 tokens (the streams' count
    times the longest stream's), got 1 stream, the longest of 1,000,000,000,000 tokens
    """
    import numpy as np

    if vocab is not None:
        positive_int("vocab", vocab, "the model's vocab_size")
        if vocab > MAX_TOKEN_VOCAB:
            raise ValueError(f"vocab must be at most MAX_TOKEN_VOCAB = {MAX_TOKEN_VOCAB:,} (the model's vocab_size; "
                             f"the counts keep tables of one entry per token id), got {vocab:,}")
    if streams is not None:
        positive_int("streams", streams)
        if streams > MAX_STREAMS:
            raise ValueError(f"streams must be at most MAX_STREAMS = {MAX_STREAMS:,} (the compressor codes in at "
                             f"most 32), got {streams:,}")
    if lengths is not None:
        id_array("lengths", lengths, what="token counts, one per stream")      # integers, none negative
        raw = np.asarray(lengths)                   # as given: an int64 copy would wrap uint64 counts
        if raw.size == 0:
            raise ValueError("lengths must give at least one stream's token count, got none")
        if raw.size > MAX_STREAMS:
            raise ValueError(f"lengths must give at most MAX_STREAMS = {MAX_STREAMS:,} streams' token counts "
                             f"(the compressor codes in at most 32), got {raw.size:,}")
        longest = int(raw.max())
        if raw.size * longest > MAX_STREAM_TOKENS:
            raise ValueError(f"lengths must give at most MAX_STREAM_TOKENS = {MAX_STREAM_TOKENS:,} tokens (the "
                             f"streams' count times the longest stream's), got {raw.size:,} "
                             f"stream{'s' * (raw.size > 1)}, the longest of {longest:,} tokens")
        streams = raw.size
    if vocab is not None and streams is not None and _is_int(orders) and orders > 0:
        # in Python's ints: NumPy integers would wrap the product
        vocab, streams, orders = int(vocab), int(streams), int(orders)
    if vocab is not None and streams is not None and _is_int(orders) and orders > 0 \
            and streams * vocab * orders > MAX_TABLE_CELLS:
        raise ValueError(f"vocab={vocab:,} with streams={streams:,}" + (f" and orders={orders}" if orders > 1 else "")
                         + f" makes a table of {streams * vocab * orders:,} float64 cells, over MAX_TABLE_CELLS = "
                         f"{MAX_TABLE_CELLS:,} (1 GiB): pass fewer streams or a smaller vocabulary")
    if pieces is not None:
        if not isinstance(pieces, Mapping):
            raise TypeError(f"pieces must be a mapping of token id -> bytes (the tokenizer's vocab), "
                            f"got {type(pieces).__name__}")
        for key, piece in pieces.items():
            if not _is_int(key) or not isinstance(piece, bytes):
                raise TypeError(f"pieces must map token ids (int) to their bytes (the tokenizer's vocab), got "
                                f"{type(key).__name__} {key!r:.40} -> {type(piece).__name__} {piece!r:.40}")


def whole_copy(obj):
    """``copy.copy`` of a coder's part (a counts model, a mixer, a cache): a deep copy. The parts update
    their arrays and the parts they hold in place, so a shallow copy shared them and each step coded on
    the copy moved the original too (its counts, weights and step), silently, out of step with the
    other side of the coder."""
    return copy.deepcopy(obj)
