"""What every op does around its kernels: :class:`OpCall`.

An op accepts NumPy arrays or :class:`~netcl_lite.core.tensor.Tensor` s. With
Tensors in, it enqueues its kernels and returns Tensors at once (the queue runs
ahead). With only NumPy in, it returns NumPy: on a device that shares the host's
memory (PoCL's CPU driver) the kernels read the input arrays and write the
output array in place, so nothing is copied either way, and the call ends with
one sync. Either way each float output is checked on the device for inf/NaN,
and a failure raises at the next sync naming the op (:mod:`netcl_lite.core.stream`).
"""

from __future__ import annotations

import math

import numpy as np
import pyopencl as cl

from ..checks import dtype_is, int32_range, not_masked
from ..core.device import manager
from ..core.stream import stream_of
from ..core.tensor import DTYPES, DeviceMemory, Tensor, check_shape, note_scratch, shares_host_memory

_ALIGN = 64   # bytes: host arrays the kernels use in place start on a cache line


class OpCall:
    """One call of one op: where it runs, its operands on the device, its launches, its results.

    An op written with it (this is :func:`netcl_lite.ops.scale` with alpha = 2):

    >>> call = OpCall("double", x=np.arange(3.0))
    >>> x = call.float_input("x")
    >>> y = call.output(x.shape)
    >>> call.launch("elementwise.cl", "scale", (64,), (64,), x.buffer, y.buffer, i32(3), f32(2.0),
    ...             call.stream.status, call.seq)
    >>> call.result(y)
    array([0., 2., 4.], dtype=float32)
    """

    def __init__(self, name: str, *, queue=None, bad_input: str = "", **operands):
        for key, x in operands.items():
            if not isinstance(x, Tensor):
                not_masked(f"{name}: {key}", x)      # np.asarray would read the values under the mask
        tensors = [(key, x) for key, x in operands.items() if isinstance(x, Tensor)]
        if queue is not None and not isinstance(queue, cl.CommandQueue):
            raise TypeError(f"queue must be a pyopencl.CommandQueue, got {type(queue).__name__}")
        if tensors:
            first_key, first = tensors[0][0], queue or tensors[0][1].queue
            for key, t in tensors:
                if t.queue is first or t.queue == first:
                    continue
                if t.queue.context != first.context:
                    raise ValueError(f"{name}: tensors live on different OpenCL contexts; copy them to one device first")
                # The op's kernels go on one queue, in order; nothing would make them wait for
                # what another queue still has to write into (or read from) this Tensor.
                whose = "the queue passed" if queue is not None else f"{first_key}'s queue"
                raise ValueError(f"{name}: {key} is a Tensor of another command queue than {whose} (one context); "
                                 "an op runs on one queue and would not wait for the other: make every operand "
                                 "on one queue (e.g. Tensor.from_host(queue, t.numpy()))")
            self.queue = first
        else:
            self.queue = queue or manager.default().queue
        self.name, self.operands = name, operands
        self.returns_tensors = bool(tensors)
        self.in_place = not tensors and shares_host_memory(self.queue)
        self.stream = stream_of(self.queue)
        self.seq = self.stream.begin(name, operands, bad_input)

    # -- operands ---------------------------------------------------------------------------------
    def float_input(self, name: str) -> Tensor:
        """Operand ``name`` as a float32 Tensor on this call's device."""
        x = self.operands[name]
        if isinstance(x, Tensor):
            return dtype_is(f"{self.name}: {name}", x, "float32")
        arr = np.asarray(x)
        if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
            raise TypeError(f"{self.name}: {name} must hold real numbers, got dtype {arr.dtype}")
        return self._upload(np.ascontiguousarray(arr, dtype=np.float32))

    def int_input(self, name: str, host: np.ndarray | None = None) -> Tensor:
        """Operand ``name`` (or its validated ``host`` form) as an int32 Tensor."""
        x = self.operands[name] if host is None else host
        if isinstance(x, Tensor):
            return dtype_is(f"{self.name}: {name}", x, "int32")
        return self._upload(np.ascontiguousarray(x, dtype=np.int32))

    def _upload(self, arr: np.ndarray) -> Tensor:
        if self.in_place and arr.size and arr.ctypes.data % 16 == 0:
            return Tensor(self.queue, DeviceMemory(self.queue.context, arr.nbytes, host=arr), arr.shape, arr.dtype)
        # The kernels run after we return (Tensors out) or before we read back (NumPy out):
        # hand the queue a private copy so the caller's array may change at once.
        return Tensor.from_host(self.queue, arr, dtype=arr.dtype)

    # -- outputs and launches ---------------------------------------------------------------------
    def output(self, shape, dtype=np.float32) -> Tensor:
        """A new result tensor: a NumPy array used in place on a host-memory device, else device memory."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if not self.in_place or not nbytes:
            if dtype not in DTYPES:
                raise TypeError(f"dtype must be float32 or int32, got {dtype}")
            return Tensor._of(self.queue, DeviceMemory(self.queue.context, nbytes), check_shape(shape), dtype)
        raw = np.empty(nbytes + _ALIGN, np.uint8)
        start = -raw.ctypes.data % _ALIGN
        host = raw[start:start + nbytes].view(dtype).reshape(shape)
        return Tensor._of(self.queue, DeviceMemory(self.queue.context, nbytes, host=host), check_shape(shape), dtype)

    def scratch(self, key: str, n_floats: int) -> cl.Buffer:
        """A float32 work buffer of at least ``n_floats``, kept per (context, key) and reused.

        The queue is in order, so the next call's kernels overwrite it only after this
        call's have read it. Packing into a fresh buffer on every call would cost a page
        fault per 4 KiB page.
        """
        k = (self.queue.context.int_ptr, key)
        mem = _scratch.get(k)
        if mem is None or mem.nbytes < 4 * n_floats:
            if mem is not None:
                self.stream.keep(mem)            # queued kernels may still read the old one
            mem = _scratch[k] = DeviceMemory(self.queue.context, 4 * max(1, int(n_floats)))   # counted as allocated
        else:
            note_scratch(4 * int(n_floats))                                                  # counted as reused
        return mem.buffer

    def launch(self, filename: str, kernel: str, global_size, local_size, *args, options: tuple = ()) -> None:
        self.stream.launch(filename, kernel, global_size, local_size, *args, options=options)

    def result(self, *outs: Tensor, check=None):
        """Hand the outputs back in the caller's type, each float output checked for inf/NaN on the device.

        ``check`` lists which outputs to check (default: every float32 one); NumPy
        callers get NumPy arrays after a sync, which raises if any op failed.
        """
        check = [o.dtype == np.float32 for o in outs] if check is None else check
        for out, c in zip(outs, check):
            if c:
                self.stream.check_finite(out.buffer, out.size, self.seq)
        if self.returns_tensors:
            return outs[0] if len(outs) == 1 else outs
        hosts = tuple(_to_host(o) for o in outs)
        self.stream.sync()                   # one wait for the kernels and the copies or maps
        return hosts[0] if len(hosts) == 1 else hosts


def _to_host(t: Tensor) -> np.ndarray:
    """Enqueue what makes ``t``'s values visible to the host, without waiting: a map and unmap of
    a host-backed output (no copy on PoCL's CPU driver), a copy otherwise."""
    host = t.memory.host
    if host is None:
        host = np.empty(t.shape, t.dtype)
        if host.size:
            cl.enqueue_copy(t.queue, host, t.buffer, is_blocking=False)
        return host
    mapped, _ = cl.enqueue_map_buffer(t.queue, t.buffer, cl.map_flags.READ, 0, (host.size,), host.dtype,
                                      is_blocking=False)
    mapped.base.release(t.queue)
    return host.reshape(t.shape)


_scratch: dict[tuple[int, str], DeviceMemory] = {}


def device_operand(op: str, name: str, x, shape=None, dtype: str = "float32") -> Tensor:
    """``x`` when it is a Tensor of ``dtype`` (and ``shape``, when given): a backward's operand, which
    its forward left on the device. TypeError naming ``name`` for anything else (a NumPy array has no
    buffer to read) or another dtype (its bits would be read as ``dtype``'s), ValueError for another
    shape (the kernels would read past its end)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor (a backward's operand on the device), got {type(x).__name__}")
    dtype_is(f"{op}: {name}", x, dtype)
    if shape is not None and tuple(x.shape) != tuple(shape):
        raise ValueError(f"{op}: {name} must have shape {tuple(shape)}, got {tuple(x.shape)}")
    return x


def shape_of(x) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, (Tensor, np.ndarray)) else np.shape(x)


def elements(shape) -> int:
    return math.prod(shape)


def round_up(n: int, multiple: int) -> int:
    return max(multiple, -(-n // multiple) * multiple)


def i32(x) -> np.int32:
    return np.int32(x)


def f32(x) -> np.float32:
    return np.float32(x)


__all__ = ["OpCall", "device_operand", "elements", "f32", "i32", "int32_range", "round_up", "shape_of"]
