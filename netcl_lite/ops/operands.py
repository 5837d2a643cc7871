"""What every op does before and after its kernels: accept NumPy or ``Tensor``
operands, validate them, put them on one device, launch, and hand results back
in the caller's type (NumPy in → NumPy out, ``Tensor`` in → ``Tensor`` out)."""

from __future__ import annotations

import math
import numbers

import numpy as np
import pyopencl as cl

from ..core.device import manager
from ..core.tensor import Tensor

INT_MAX = 2**31 - 1

_allocated: list[int] | None = None   # bytes of device buffers, counted while tracking


def device_empty(queue: cl.CommandQueue, shape, dtype=np.float32) -> Tensor:
    """``Tensor.empty`` that the benchmark can count (see :func:`track_allocations`)."""
    t = Tensor.empty(queue, shape, dtype)
    if _allocated is not None:
        _allocated.append(max(t.nbytes, t.dtype.itemsize))
    return t


_scratch: dict[tuple[int, str], cl.Buffer] = {}


def scratch(queue: cl.CommandQueue, name: str, n_floats: int) -> cl.Buffer:
    """A float32 work buffer of at least ``n_floats``, kept per (context, name) and reused.

    Packing panels into a fresh buffer on every call costs a page fault per 4 KiB
    page; reusing one is free. The caller must finish its kernels before returning,
    so the next call may overwrite the buffer. :func:`track_allocations` counts the
    bytes asked for on every call (the op's working set), grown or reused.
    """
    key = (queue.context.int_ptr, name)
    buf = _scratch.get(key)
    nbytes = max(4, 4 * int(n_floats))
    if buf is None or buf.size < nbytes:
        buf = _scratch[key] = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
    if _allocated is not None:
        _allocated.append(nbytes)
    return buf


class track_allocations:
    """Count the bytes of device buffers the ops allocate inside a ``with`` block.

    >>> with track_allocations() as seen:                    # doctest: +SKIP
    ...     flash_attention(q, k, v)
    >>> seen.bytes                                           # doctest: +SKIP
    """

    def __enter__(self):
        global _allocated
        self._outer, _allocated = _allocated, []
        return self

    def __exit__(self, *exc):
        global _allocated
        self.bytes, self.buffers = sum(_allocated), len(_allocated)
        _allocated = self._outer
        return False


def pick_queue(*operands, queue=None) -> tuple[cl.CommandQueue, bool]:
    """The queue to run on and whether the caller passed Tensors (→ return Tensors).

    Tensors must share one context; NumPy operands follow them (or the default device).
    """
    tensors = [x for x in operands if isinstance(x, Tensor)]
    if queue is not None and not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue must be a pyopencl.CommandQueue, got {type(queue).__name__}")
    if tensors:
        first = tensors[0].queue
        for t in tensors[1:]:
            if t.queue.context != first.context:
                raise ValueError("tensors live on different OpenCL contexts; copy them to one device first")
        return (queue or first), True
    return (queue or manager.default().queue), False


def as_host_float(name: str, x) -> np.ndarray:
    """Validate a NumPy-side operand: real, finite values as float32."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[:3].tolist()
        raise ValueError(f"{name} has non-finite values (first at indices {bad}); pass finite numbers, use a mask to exclude entries")
    return arr


def to_device(queue: cl.CommandQueue, name: str, x) -> Tensor:
    """A float32 Tensor on ``queue``'s device (Tensors pass through after a dtype check)."""
    if isinstance(x, Tensor):
        if x.dtype != np.float32:
            raise TypeError(f"{name} must be a float32 Tensor, got {x.dtype}")
        return x
    host = as_host_float(name, x)
    t = device_empty(queue, host.shape)
    if host.size:
        cl.enqueue_copy(queue, t.buffer, host)
    return t


def shape_of(name: str, x) -> tuple[int, ...]:
    if isinstance(x, Tensor):
        return x.shape
    if isinstance(x, np.ndarray):
        return x.shape
    return np.shape(x)


def check_int_range(**sizes: int) -> None:
    for name, value in sizes.items():
        if value > INT_MAX:
            raise ValueError(f"{name}={value} exceeds the 32-bit index range of the kernels")


def round_up(n: int, multiple: int) -> int:
    return max(multiple, -(-n // multiple) * multiple)


def i32(x) -> np.int32:
    return np.int32(x)


def f32(x) -> np.float32:
    return np.float32(x)


def bound(*factors: float | None, plus: float | None = 0.0) -> float | None:
    """A bound on an output's max |value|: the product of ``factors`` (+ ``plus``);
    None when any is unknown."""
    if plus is None or any(f is None for f in factors):
        return None
    return float(np.prod(factors)) + plus


def finish(out: Tensor, return_tensor: bool, abs_max: float | None = None):
    """Return ``out`` as the caller expects: the Tensor, or a host array.

    ``abs_max`` is the op's bound on its output's magnitude, derived from its
    inputs' bounds; the Tensor carries it so the next op's overflow check still
    applies to values that never left the device.
    """
    out.abs_max = abs_max
    if return_tensor:
        # Temporaries of this op may be collected when we return: let the device finish with them.
        out.queue.finish()
        return out
    return out.to_host()


def check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


FLOAT32_MAX = float(np.finfo(np.float32).max)


def host_values(x) -> np.ndarray | None:
    """``x`` as float64 when it is a finite real host array; None otherwise (Tensors, and
    inputs that ``to_device`` will refuse with its own error)."""
    if isinstance(x, Tensor):
        return None
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        return None
    arr = arr.astype(np.float64, copy=False)
    return arr if np.isfinite(arr).all() else None


def max_abs(x) -> float | None:
    """Largest |value| of a host array, or the bound a Tensor recorded when it was
    uploaded from the host (None when unknown: the check is then skipped)."""
    if isinstance(x, Tensor):
        return x.abs_max if x.dtype == np.float32 else None
    arr = host_values(x)
    return None if arr is None else float(np.abs(arr).max(initial=0.0))


def max_norm(x, axis: int) -> float | None:
    """Largest Euclidean norm along ``axis``; for a Tensor the bound sqrt(len)·max|x|."""
    if isinstance(x, Tensor):
        m = max_abs(x)
        return None if m is None or not x.ndim else math.sqrt(x.shape[axis]) * m
    arr = host_values(x)
    if arr is None:
        return None
    return float(np.sqrt(np.square(arr).sum(axis=axis)).max(initial=0.0))


def check_float32_range(what: str, *factors: float | None, hint: str) -> None:
    """Refuse a call whose exact result can exceed float32 (it would come back as inf or NaN).

    ``factors`` multiply to a bound on the result's magnitude (Cauchy–Schwarz
    for dot products). Host arrays give exact maxima; a Tensor gives the bound
    it carries (``abs_max``: from ``from_host``, or propagated by the op that made
    it), so chains of device ops stay checked without reading values back. A
    factor of None skips the check: an input the op rejects with its own error,
    or a Tensor made by a kernel outside ``ops`` (e.g. a backward rule), whose
    magnitude nothing recorded. The quarter-range margin covers float32 rounding.
    """
    if any(f is None for f in factors):
        return
    bound = float(np.prod(factors))
    if not bound < FLOAT32_MAX / 4:
        raise ValueError(f"{what} can reach {bound:.3g}, beyond float32's range (±{FLOAT32_MAX:.3g}); {hint}")
