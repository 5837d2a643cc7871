"""netcl_lite: tokens and attention, executable.

A small tensor library whose compute runs as OpenCL kernels (``kernels/*.cl``)
through PyOpenCL. The default device is the PoCL CPU driver that ``pip``
installs, so every example runs on a laptop without a GPU. One import reaches
everything the pages use:

    >>> import numpy as np
    >>> import netcl_lite as nl
    >>> x = nl.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]))     # a leaf that wants a gradient
    >>> with nl.Tape():
    ...     loss = (x @ x.T).mean()
    >>> loss.backward()
    >>> x.grad.numpy()
    array([[2., 3.],
           [2., 3.]], dtype=float32)
    >>> nl.ops.matmul(np.eye(2), np.ones((2, 2)))             # NumPy in, NumPy out
    array([[1., 1.],
           [1., 1.]], dtype=float32)
"""

import signal as _signal
import sys as _sys


def _command_line_module() -> str | None:
    """The module ``python [options] -m MODULE`` runs, from the interpreter's own arguments, or None."""
    argv, i = list(getattr(_sys, "orig_argv", ()))[1:], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            return argv[i + 1] if i + 1 < len(argv) else None
        if arg.startswith("-m") and not arg.startswith("--"):
            return arg[2:]
        if arg == "-c" or arg == "-" or not arg.startswith("-"):   # a program or a script: no -m
            return None
        i += 2 if arg in ("-X", "-W", "--check-hash-based-pycs") else 1
    return None


def _interrupted_while_starting(signum, frame) -> None:
    _sys.stderr.write("python -m netcl_lite.compression: interrupted\n")
    _sys.stderr.flush()
    import os

    os._exit(130)


# The compressor's command line, interrupted (Ctrl-C) while this package still imports, ends at
# once with its documented status, 130, and one line instead of a traceback: nothing is written
# yet. Its main() puts Python's own handler back before it reads or writes anything.
if (_command_line_module() == "netcl_lite.compression"
        and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler):
    _signal.signal(_signal.SIGINT, _interrupted_while_starting)

from . import autograd, budget, extras, masks, nn, ops, optim, reference, sampling, scaling, text, train
from .autograd import Node, Tape, constant, tensor
from .core import BadInputError, NonFiniteError, Tensor, synchronize
from .core.device import device

__version__ = "0.1.0"

__all__ = [
    "BadInputError", "Node", "NonFiniteError", "Tape", "Tensor", "autograd", "budget", "constant", "device", "extras", "masks",
    "nn", "ops", "optim", "reference", "sampling", "scaling", "synchronize", "tensor", "text", "train",
]
