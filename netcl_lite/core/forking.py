"""OpenCL in a forked child: refused at once, not left to hang.

A child made by ``os.fork`` (or ``multiprocessing``'s ``fork`` start method, Linux's default before
Python 3.14) inherits the parent's OpenCL driver state but not its threads. PoCL's CPU driver runs
every command on worker threads the parent started, so in the child the commands are queued and
nothing runs them: the first wait (``Tensor.numpy()``, a sync, a blocking copy) blocks for ever.
A device made in the child does no better once the parent has started PoCL: the driver is started
once per process, and the child's copy of it believes its workers are there.

So once this library has started OpenCL in a process (:func:`platforms`, which the device lookup
calls before anything else of the driver), a fork hook marks every child forked from it, and the
few places every device use passes through (:func:`check`: the device lookup, each op's stream,
each wait, tensors made from host arrays, kernel builds, the device tokenizer) raise
:class:`RuntimeError` there, naming the process that started the device and what to do instead.
The check is one read of a module variable that only the fork hook sets: no system call per op.

A child forked before the parent started OpenCL is not marked: it starts its own driver and
device and works as any process does. Code that starts OpenCL past this library (its own
``pyopencl.get_platforms()``) is not seen here.
"""

from __future__ import annotations

import os

#: the process in which this library started OpenCL (the first :func:`platforms`), or None
started_in: int | None = None
#: in a child forked after OpenCL was started: the process that started it; None elsewhere
forked_from: int | None = None


def platforms():
    """``pyopencl.get_platforms()``, noting first that this process has started OpenCL (a child
    forked from it from now on cannot use the driver: :func:`check`)."""
    import pyopencl as cl

    global started_in
    if started_in is None:
        started_in = os.getpid()
    return cl.get_platforms()


def message() -> str:
    """What :func:`check` says in a child forked after OpenCL was started."""
    return (f"the OpenCL device was made in process {forked_from} and cannot be used in a forked child "
            f"(this is process {os.getpid()}): the driver's worker threads stay in the parent, so the child's "
            f"first wait for the device would hang for ever. Fork before making the device, or use "
            f"multiprocessing's \"spawn\" start method (multiprocessing.get_context(\"spawn\"))")


def check() -> None:
    """Raise ``RuntimeError`` (:func:`message`) in a child forked after this library started OpenCL."""
    if forked_from is not None:
        raise RuntimeError(message())


def _after_fork_in_child() -> None:
    global forked_from
    if started_in is not None and forked_from is None:
        forked_from = started_in


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
