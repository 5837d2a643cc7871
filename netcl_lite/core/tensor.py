"""``Tensor``: a float32 (or int32) array that lives in an OpenCL buffer.

    >>> import numpy as np
    >>> import netcl_lite as nl
    >>> t = nl.Tensor.from_host(nl.device().queue, np.arange(6.0).reshape(2, 3))
    >>> t.shape, t.dtype
    ((2, 3), dtype('float32'))
    >>> t.numpy()
    array([[0., 1., 2.],
           [3., 4., 5.]], dtype=float32)

Every allocation is counted while it lives (:func:`device_bytes_in_use`), so a
test can check that a training loop's device memory stays flat.
"""

from __future__ import annotations

import itertools
import math
import mmap
import numbers
from collections import defaultdict
from typing import Iterable

import numpy as np
import pyopencl as cl

from ..checks import positive_int
from . import forking
from .stream import stream_of

#: dtypes a Tensor can hold: float32 for values, int32 for token ids / positions.
DTYPES = (np.dtype(np.float32), np.dtype(np.int32))

_live_bytes: dict[int, int] = defaultdict(int)
_live_buffers: dict[int, int] = defaultdict(int)


_trackers: list["track_allocations"] = []


def device_bytes_in_use(context: cl.Context) -> tuple[int, int]:
    """(bytes, buffers) of Tensor memory alive on ``context`` right now."""
    return _live_bytes[context.int_ptr], _live_buffers[context.int_ptr]


def pooled_bytes(context: cl.Context) -> int:
    """Bytes of released buffers kept for reuse on ``context`` (at most :data:`POOL_LIMIT`)."""
    return _pooled[context.int_ptr]


class track_allocations:
    """Count the buffers allocated inside a ``with`` block: ``.bytes`` and ``.buffers``; and
    ``.scratch_bytes``, what the ops used of work buffers kept from earlier calls (so that
    ``bytes + scratch_bytes`` is the block's working set).

    >>> import numpy as np, netcl_lite as nl
    >>> with track_allocations() as seen:
    ...     _ = nl.ops.add(nl.Tensor.zeros(nl.device().queue, (4, 4)), np.ones(4, np.float32))
    >>> seen.buffers               # the zeros, the uploaded b, the output
    3
    """

    def __enter__(self):
        self._sizes: list[int] = []
        self._scratch: list[int] = []
        _trackers.append(self)
        return self

    def __exit__(self, *exc):
        _trackers.remove(self)
        self.bytes, self.buffers = sum(self._sizes), len(self._sizes)
        self.scratch_bytes = sum(self._scratch)
        return False


def note_scratch(nbytes: int) -> None:
    """Tell the active trackers that an op uses ``nbytes`` of a reused work buffer."""
    for t in _trackers:
        t._scratch.append(int(nbytes))


#: bytes of released buffers kept for reuse, per context, at most
POOL_LIMIT = 256 * 2**20
_pool: dict[tuple[int, int], list[cl.Buffer]] = defaultdict(list)
_pooled: dict[int, int] = defaultdict(int)


#: buffers of at least this many bytes, on a context whose devices work in the host's memory
#: (PoCL's CPU driver), are placed by :func:`huge_page_block` rather than by the driver
HUGE_PAGE_MIN_BYTES = 4 << 20
_HUGE_PAGE = 2 << 20      # bytes of a transparent huge page (x86-64)
_START = 128              # bytes: PoCL's CL_DEVICE_MEM_BASE_ADDR_ALIGN (1024 bits)
_STAGGER = 4096           # bytes between successive blocks' starts, modulo 32 steps (see below)
_blocks = itertools.count()
_host_memory: dict[int, bool] = {}


def huge_page_block(nbytes: int) -> np.ndarray:
    """``nbytes`` of anonymous host memory advised for transparent huge pages, as uint8.

    It starts just past a 2 MiB boundary, so every 2 MiB page it spans can be a huge page when
    the kernel allows them (``/sys/kernel/mm/transparent_hugepage/enabled`` at ``always`` or
    ``madvise``); elsewhere it is plain memory. With 4 KiB pages, a GEMM over 2048 x 2048 operands
    misses the TLB on each of the 2048 rows of B it copies per panel (8 KiB apart) and on each new
    page of A's six row streams, so huge pages make ``matmul_packed`` faster at 1024³ and beyond
    (``benchmarks/results/tried.md``, "Huge pages for large buffers"). Successive blocks start 128 B
    + 0 .. 31 x 4 KiB past their boundary, so that the same element of A, B and C does not fall in
    the same L2 set (operands starting on 2 MiB boundaries would conflict in every set they share).
    The memory lives as long as the returned array (an OpenCL buffer made over it with
    ``USE_HOST_PTR`` keeps it).
    """
    nbytes, start = positive_int("nbytes", nbytes), _START + next(_blocks) % 32 * _STAGGER
    if not hasattr(mmap, "MAP_PRIVATE"):                   # not a POSIX system: plain aligned memory
        raw = np.empty(nbytes + start, np.uint8)
        return raw[-raw.ctypes.data % _START:][:nbytes]
    # Private: a shared anonymous mapping (mmap's default) is shmem, which THP leaves alone.
    block = mmap.mmap(-1, _HUGE_PAGE + start + nbytes, flags=mmap.MAP_PRIVATE)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        block.madvise(mmap.MADV_HUGEPAGE)
    raw = np.frombuffer(block, np.uint8)
    start += -raw.ctypes.data % _HUGE_PAGE
    return raw[start:start + nbytes]


def host_array(shape, dtype) -> np.ndarray:
    """An uninitialized C-contiguous host array that a buffer can be made over (``USE_HOST_PTR``):
    its start on a :data:`_START` boundary, and from :data:`HUGE_PAGE_MIN_BYTES` on a
    :func:`huge_page_block`."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes >= HUGE_PAGE_MIN_BYTES:
        raw = huge_page_block(nbytes)
    else:
        raw = np.empty(nbytes + _START, np.uint8)
        raw = raw[-raw.ctypes.data % _START:][:nbytes]
    return raw.view(dtype).reshape(shape)


_limits: dict[int, tuple[int, int]] = {}


def allocation_limits(context: cl.Context) -> tuple[int, int]:
    """(largest buffer, global memory) in bytes that every device of ``context`` takes
    (``CL_DEVICE_MAX_MEM_ALLOC_SIZE``, ``CL_DEVICE_GLOBAL_MEM_SIZE``), asked once per context."""
    key = context.int_ptr
    if key not in _limits:
        _limits[key] = (min(d.max_mem_alloc_size for d in context.devices),
                        min(d.global_mem_size for d in context.devices))
    return _limits[key]


def check_fits(context: cl.Context, nbytes: int, what: str, buffers: int = 1) -> None:
    """Raise ``ValueError`` naming ``what`` (the shape asked for) if ``buffers`` buffers of
    ``nbytes`` each exceed the device's largest buffer or, together, its global memory: the
    driver would otherwise fail deep inside (PoCL's CPU driver: an ``OSError`` from mmap)."""
    largest, total = allocation_limits(context)
    if nbytes > largest:
        raise ValueError(f"{what} needs {nbytes:,} bytes, more than the device's largest buffer "
                         f"({largest:,} bytes, CL_DEVICE_MAX_MEM_ALLOC_SIZE): use a smaller shape, or "
                         f"split the data into several tensors")
    if nbytes * buffers > total:
        raise ValueError(f"{what} needs {nbytes * buffers:,} bytes in {buffers} buffers, more than the "
                         f"device's memory ({total:,} bytes, CL_DEVICE_GLOBAL_MEM_SIZE): use a smaller shape")


def _works_in_host_memory(context: cl.Context) -> bool:
    """Whether every device of ``context`` runs its kernels in the host's own memory (a CPU)."""
    key = context.int_ptr
    if key not in _host_memory:
        _host_memory[key] = all(d.type & cl.device_type.CPU and d.host_unified_memory for d in context.devices)
    return _host_memory[key]


class DeviceMemory:
    """One buffer, counted in :func:`device_bytes_in_use` until the last Tensor using it lets go.

    Released buffers go to a pool and come back for the next allocation of the same size (a
    training step allocates the same sizes every time): a fresh buffer costs PoCL an allocation
    at its first launch, a reused one nothing. Reuse is safe because a queue runs its commands
    in order: whatever writes a recycled buffer was enqueued after everything that read it.

    ``host`` is set when the buffer *is* a caller's host array (``USE_HOST_PTR`` on a device that
    shares the host's memory, e.g. PoCL's CPU driver): kernels then read and write that array in
    place. Those are never pooled. On such a device a new buffer of
    :data:`HUGE_PAGE_MIN_BYTES` or more is made over a :func:`huge_page_block` the same way.
    ``fresh`` skips the pool: a buffer that is surely none of the pooled ones (which old commands
    may still name, as a recorded stretch's do).
    """

    __slots__ = ("buffer", "nbytes", "host", "_ctx", "_size")

    def __init__(self, context: cl.Context, nbytes: int, host: np.ndarray | None = None, fresh: bool = False):
        flags = cl.mem_flags.READ_WRITE
        self._ctx, self._size = context.int_ptr, max(int(nbytes), 4)   # OpenCL refuses zero-byte buffers
        if host is not None:
            self.buffer = cl.Buffer(context, flags | cl.mem_flags.USE_HOST_PTR, hostbuf=host)
        else:
            free = None if fresh else _pool.get((self._ctx, self._size))
            if free:
                self.buffer = free.pop()
                _pooled[self._ctx] -= self._size
            elif self._size >= HUGE_PAGE_MIN_BYTES and _works_in_host_memory(context):
                self.buffer = cl.Buffer(context, flags | cl.mem_flags.USE_HOST_PTR,
                                        hostbuf=huge_page_block(self._size))
            else:
                self.buffer = cl.Buffer(context, flags, self._size)
        self.nbytes, self.host = int(nbytes), host
        for t in _trackers:
            t._sizes.append(self.nbytes)
        _live_bytes[self._ctx] += self.nbytes
        _live_buffers[self._ctx] += 1

    @classmethod
    def claim_pooled(cls, context: cl.Context, buffer: cl.Buffer) -> "DeviceMemory | None":
        """``buffer`` taken out of the pool, as a new owner's memory (counted, and pooled again when
        that owner lets go); None where the pool does not hold it (some live object still uses it).
        A pooled buffer belongs to nobody, so its new owner may go on naming it in commands that
        outlive the allocation that first held it (a recorded stretch's)."""
        ctx, size = context.int_ptr, max(int(buffer.size), 4)
        free = _pool.get((ctx, size))
        if not free:
            return None
        ptr = buffer.int_ptr
        for i, b in enumerate(free):
            if b.int_ptr == ptr:
                break
        else:
            return None
        del free[i]
        _pooled[ctx] -= size
        mem = object.__new__(cls)
        mem.buffer, mem.nbytes, mem.host, mem._ctx, mem._size = buffer, size, None, ctx, size
        for t in _trackers:
            t._sizes.append(mem.nbytes)
        _live_bytes[ctx] += mem.nbytes
        _live_buffers[ctx] += 1
        return mem

    def __del__(self):
        try:
            _live_bytes[self._ctx] -= self.nbytes
            _live_buffers[self._ctx] -= 1
            if self.host is None and _pooled[self._ctx] + self._size <= POOL_LIMIT:
                _pool[(self._ctx, self._size)].append(self.buffer)
                _pooled[self._ctx] += self._size
        except (TypeError, AttributeError):   # interpreter shutdown: the module's state is gone already
            pass


def check_queue(queue) -> cl.CommandQueue:
    forking.check()                          # a forked child: refused before anything is queued
    if not isinstance(queue, cl.CommandQueue):
        raise TypeError(
            f"queue must be a pyopencl.CommandQueue (e.g. nl.device().queue), got {type(queue).__name__}"
        )
    return queue


def check_shape(shape) -> tuple[int, ...]:
    if type(shape) is tuple and all(type(s) is int and s >= 0 for s in shape):
        return shape                                     # the common case, checked cheaply
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
    if array.dtype.kind in "fiub":  # real numbers and booleans become float32
        return np.dtype(np.float32)
    raise TypeError(
        f"array must hold real numbers, got dtype {array.dtype}; "
        "convert it with np.asarray(x, dtype=np.float32)"
    )


def shares_host_memory(queue: cl.CommandQueue) -> bool:
    """Whether kernels on this queue's device can work on host arrays in place (a CPU device)."""
    return bool(queue.device.type & cl.device_type.CPU) and bool(queue.device.host_unified_memory)


class Tensor:
    """A C-contiguous array in device memory with a NumPy-like shape and dtype."""

    __slots__ = ("queue", "memory", "shape", "dtype")

    def __init__(self, queue: cl.CommandQueue, memory: DeviceMemory, shape, dtype=np.float32):
        self.queue = check_queue(queue)
        self.shape = check_shape(shape)
        self.dtype = np.dtype(dtype)
        if self.dtype not in DTYPES:
            raise TypeError(f"dtype must be float32 or int32, got {self.dtype}")
        self.memory = memory

    @classmethod
    def _of(cls, queue: cl.CommandQueue, memory: DeviceMemory, shape: tuple[int, ...], dtype: np.dtype) -> "Tensor":
        """A Tensor whose arguments were checked already (the library's own outputs and views):
        the checks in ``__init__`` are a good part of a small op's host time."""
        t = object.__new__(cls)
        t.queue, t.memory, t.shape, t.dtype = queue, memory, shape, dtype
        return t

    @property
    def buffer(self) -> cl.Buffer:
        return self.memory.buffer

    # -- construction ---------------------------------------------------
    @classmethod
    def empty(cls, queue: cl.CommandQueue, shape, dtype=np.float32) -> "Tensor":
        """An uninitialized tensor of ``shape``."""
        check_queue(queue)
        shape, dtype = check_shape(shape), np.dtype(dtype)
        if dtype not in DTYPES:
            raise TypeError(f"dtype must be float32 or int32, got {dtype}")
        nbytes = math.prod(shape) * dtype.itemsize            # a Python int: a huge shape cannot wrap around
        check_fits(queue.context, nbytes, f"a {dtype} tensor of shape {shape}")
        return cls._of(queue, DeviceMemory(queue.context, nbytes), shape, dtype)

    @classmethod
    def from_host(cls, queue: cl.CommandQueue, array, dtype=None) -> "Tensor":
        """Copy a host array to the device (the copy runs ahead; ``array`` may change at once).

        Real-valued inputs become float32 unless ``dtype=np.int32`` is asked
        for; complex, object and string arrays raise ``TypeError``.
        """
        check_queue(queue)
        array = np.asarray(array)
        dt = _target_dtype(array, dtype)
        if dt == np.int32 and array.dtype.kind == "f":
            raise TypeError("an int32 tensor needs integer input, got floating point values")
        if dt == np.int32 and array.size and (array.min() < -(2**31) or array.max() >= 2**31):
            raise ValueError("values do not fit in int32")
        check_fits(queue.context, array.size * dt.itemsize, f"a {dt} tensor of shape {array.shape}")
        if array.size and _works_in_host_memory(queue.context):
            # The device reads host memory: the private copy becomes the buffer (USE_HOST_PTR), so no
            # command is queued. PoCL's CPU driver makes a queued write wait for the whole queue
            # (benchmarks/results/tried.md, "Uploads as host memory").
            host = host_array(array.shape, dt)
            np.copyto(host, array, casting="unsafe")
            return cls._of(queue, DeviceMemory(queue.context, host.nbytes, host=host), host.shape, dt)
        host = np.array(array, dtype=dt, order="C", copy=True)   # private: the caller may reuse theirs
        t = cls.empty(queue, host.shape, dt)
        if host.size:
            stream_of(queue).write(t.buffer, host)
        return t

    @classmethod
    def zeros(cls, queue: cl.CommandQueue, shape, dtype=np.float32) -> "Tensor":
        """A tensor of zeros."""
        t = cls.empty(queue, shape, dtype)
        if t.nbytes:
            stream_of(queue).fill(t.buffer, t.nbytes)
        return t

    # -- inspection ------------------------------------------------------
    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the values (waits for the queue; raises what its kernels reported)."""
        stream = stream_of(self.queue)               # first: it refuses a forked child's use
        out = np.empty(self.shape, self.dtype)
        if out.size:
            cl.enqueue_copy(self.queue, out, self.buffer, is_blocking=False)
        stream.sync()
        return out

    def reshape(self, *shape) -> "Tensor":
        """A view with a new shape over the same buffer (sizes must agree; one -1 allowed)."""
        if len(shape) == 1 and type(shape[0]) is tuple:
            fast = _reshaped(shape[0], self.size)         # the library's own calls: a tuple of ints
            if fast is not None:
                return Tensor._of(self.queue, self.memory, fast, self.dtype)
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = tuple(shape[0])
        shape = tuple(shape)
        if sum(1 for s in shape if s == -1) > 1:
            raise ValueError(f"reshape: at most one -1 in {shape}")
        known = check_shape(tuple(s for s in shape if s != -1))
        rest, size = math.prod(known), self.size
        if -1 in shape:
            if rest == 0 or size % rest:
                raise ValueError(f"cannot reshape a tensor of {size} elements into {shape}")
            shape = tuple(size // rest if s == -1 else s for s in shape)
        if math.prod(shape) != size:
            raise ValueError(f"cannot reshape a tensor of {self.size} elements into {shape}")
        return Tensor._of(self.queue, self.memory, check_shape(shape), self.dtype)

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, dtype={self.dtype})"

    def __array__(self, dtype=None, copy=None):
        host = self.numpy()
        return host if dtype is None else host.astype(dtype)


def _reshaped(shape: tuple, size: int) -> tuple[int, ...] | None:
    """``shape`` with its one -1 (if any) resolved for ``size`` elements, when it is a tuple of plain
    ints that fits ``size``; None otherwise, for :meth:`Tensor.reshape`'s checks to name the fault."""
    known, free = 1, -1
    for i, s in enumerate(shape):
        if type(s) is not int or s < -1:
            return None
        if s == -1:
            if free >= 0:
                return None
            free = i
        else:
            known *= s
    if free < 0:
        return shape if known == size else None
    if known == 0 or size % known:
        return None
    return shape[:free] + (size // known,) + shape[free + 1:]


def read(*tensors: Tensor) -> tuple[np.ndarray, ...]:
    """NumPy copies of several tensors with one wait for the queue (what ``t.numpy()`` each
    would do with one wait apiece); raises what the queue's kernels reported."""
    forking.check()                          # a forked child: refused before anything is queued
    hosts = []
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"read takes Tensors, got {type(t).__name__}")
        host = np.empty(t.shape, t.dtype)
        if host.size:
            cl.enqueue_copy(t.queue, host, t.buffer, is_blocking=False)
        hosts.append(host)
    for queue in {id(t.queue): t.queue for t in tensors}.values():
        stream_of(queue).sync()
    return tuple(hosts)
