"""Tensor operations that run as OpenCL kernels from ``kernels/*.cl``.

Every op takes NumPy arrays or :class:`~netcl_lite.core.tensor.Tensor` s:
NumPy in gives NumPy out (on the default device), Tensors in give Tensors out
(on their device). Each has a float64 NumPy twin in :mod:`netcl_lite.reference`.
"""

from .attention import attention
from .matmul import matmul
from .softmax import softmax

__all__ = ["attention", "matmul", "softmax"]
