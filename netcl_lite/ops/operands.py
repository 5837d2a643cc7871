"""What every op does before and after its kernels: accept NumPy or ``Tensor``
operands, validate them, put them on one device, launch, and hand results back
in the caller's type (NumPy in → NumPy out, ``Tensor`` in → ``Tensor`` out)."""

from __future__ import annotations

import numbers

import numpy as np
import pyopencl as cl

from ..core.device import manager
from ..core.tensor import Tensor

INT_MAX = 2**31 - 1


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
    return Tensor.from_host(queue, as_host_float(name, x))


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


def finish(out: Tensor, return_tensor: bool):
    """Return ``out`` as the caller expects: the Tensor, or a host array."""
    if return_tensor:
        # Temporaries of this op may be collected when we return: let the device finish with them.
        out.queue.finish()
        return out
    return out.to_host()


def check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)
