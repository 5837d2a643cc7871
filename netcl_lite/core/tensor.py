"""``Tensor``: a float32 (or int32) array that lives in an OpenCL buffer.

    >>> import numpy as np
    >>> from netcl_lite.core.device import manager
    >>> q = manager.default().queue                                   # doctest: +SKIP
    >>> t = Tensor.from_host(q, np.arange(6.0).reshape(2, 3))         # doctest: +SKIP
    >>> t.shape, t.dtype                                              # doctest: +SKIP
    ((2, 3), dtype('float32'))
"""

from __future__ import annotations

import numbers
from typing import Iterable

import numpy as np
import pyopencl as cl

#: dtypes a Tensor can hold: float32 for values, int32 for token ids / positions.
DTYPES = (np.dtype(np.float32), np.dtype(np.int32))


def _check_queue(queue) -> cl.CommandQueue:
    if not isinstance(queue, cl.CommandQueue):
        raise TypeError(
            f"queue must be a pyopencl.CommandQueue (e.g. manager.default().queue), got {type(queue).__name__}"
        )
    return queue


def _check_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, Iterable):
        raise TypeError(f"shape must be a tuple of non-negative ints, got {shape!r}")
    out = []
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0:
            raise ValueError(f"shape must be a tuple of non-negative ints, got {tuple(shape)!r}")
        out.append(int(s))
    return tuple(out)


def _target_dtype(array: np.ndarray, dtype) -> np.dtype:
    if dtype is not None:
        dt = np.dtype(dtype)
        if dt not in DTYPES:
            raise TypeError(f"dtype must be float32 or int32, got {dt}")
        return dt
    kind = array.dtype.kind
    if kind in "fiub":  # real numbers and booleans become float32
        return np.dtype(np.float32)
    raise TypeError(
        f"array must hold real numbers, got dtype {array.dtype}; "
        "convert it with np.asarray(x, dtype=np.float32)"
    )


class Tensor:
    """A C-contiguous array in device memory with a NumPy-like shape and dtype."""

    __slots__ = ("queue", "buffer", "shape", "dtype", "abs_max")

    def __init__(self, queue: cl.CommandQueue, buffer: cl.Buffer | None, shape, dtype=np.float32, abs_max=None):
        self.queue = _check_queue(queue)
        #: max |value| when known on the host (set by from_host and zeros), for the ops' overflow checks
        self.abs_max = abs_max
        self.shape = _check_shape(shape)
        self.dtype = np.dtype(dtype)
        if self.dtype not in DTYPES:
            raise TypeError(f"dtype must be float32 or int32, got {self.dtype}")
        self.buffer = buffer

    # -- construction ---------------------------------------------------
    @classmethod
    def empty(cls, queue: cl.CommandQueue, shape, dtype=np.float32) -> "Tensor":
        """An uninitialized tensor of ``shape``."""
        t = cls(queue, None, shape, dtype)
        # OpenCL refuses zero-byte buffers: keep one element of slack for empty shapes.
        t.buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, max(t.nbytes, t.dtype.itemsize))
        return t

    @classmethod
    def from_host(cls, queue: cl.CommandQueue, array, dtype=None) -> "Tensor":
        """Copy a host array to the device.

        Real-valued inputs become float32 unless ``dtype=np.int32`` is asked
        for; complex, object and string arrays raise ``TypeError``.
        """
        _check_queue(queue)
        array = np.asarray(array)
        dt = _target_dtype(array, dtype)
        if dt == np.int32 and array.dtype.kind == "f":
            raise TypeError("an int32 tensor needs integer input, got floating point values")
        if dt == np.int32 and array.size and (array.min() < -(2**31) or array.max() >= 2**31):
            raise ValueError("values do not fit in int32")
        host = np.ascontiguousarray(array, dtype=dt)
        t = cls.empty(queue, host.shape, dt)
        if host.size:
            cl.enqueue_copy(queue, t.buffer, host)
        t.abs_max = float(np.abs(host).max(initial=0)) if dt == np.float32 else None  # inf if non-finite
        return t

    @classmethod
    def zeros(cls, queue: cl.CommandQueue, shape, dtype=np.float32) -> "Tensor":
        """A tensor of zeros."""
        t = cls.empty(queue, shape, dtype)
        if t.nbytes:
            cl.enqueue_fill_buffer(queue, t.buffer, np.zeros(1, t.dtype), 0, t.nbytes)
        t.abs_max = 0.0
        return t

    # -- inspection ------------------------------------------------------
    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def to_host(self) -> np.ndarray:
        """Copy back to a new NumPy array (waits for queued work on this buffer)."""
        out = np.empty(self.shape, self.dtype)
        if out.size:
            cl.enqueue_copy(self.queue, out, self.buffer)
        return out

    def reshape(self, *shape) -> "Tensor":
        """A view with a new shape over the same buffer (sizes must agree; one -1 allowed)."""
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = tuple(shape[0])
        shape = tuple(shape)
        if sum(1 for s in shape if s == -1) > 1:
            raise ValueError(f"reshape: at most one -1 in {shape}")
        known = _check_shape(tuple(s for s in shape if s != -1))
        rest = int(np.prod(known, dtype=np.int64))
        if -1 in shape:
            if rest == 0 or self.size % rest:
                raise ValueError(f"cannot reshape a tensor of {self.size} elements into {shape}")
            shape = tuple(self.size // rest if s == -1 else s for s in shape)
        if int(np.prod(shape, dtype=np.int64)) != self.size:
            raise ValueError(f"cannot reshape a tensor of {self.size} elements into {shape}")
        return Tensor(self.queue, self.buffer, shape, self.dtype, self.abs_max)

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, dtype={self.dtype})"

    def __array__(self, dtype=None, copy=None):
        host = self.to_host()
        return host if dtype is None else host.astype(dtype)
