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

from . import autograd, budget, extras, masks, nn, ops, optim, reference, sampling, scaling, text, train
from .autograd import Node, Tape, constant, tensor
from .core import BadInputError, NonFiniteError, Tensor, synchronize
from .core.device import device

__version__ = "0.1.0"

__all__ = [
    "BadInputError", "Node", "NonFiniteError", "Tape", "Tensor", "autograd", "budget", "constant", "device", "extras", "masks",
    "nn", "ops", "optim", "reference", "sampling", "scaling", "synchronize", "tensor", "text", "train",
]
