"""Tensor operations that run as OpenCL kernels from ``kernels/*.cl``.

Every op takes NumPy arrays or :class:`~netcl_lite.core.tensor.Tensor` s:
NumPy in gives NumPy out (on the default device), Tensors in give Tensors out
(on their device). Each has a float64 NumPy twin in :mod:`netcl_lite.reference`.
"""

from .attention import attention
from .elementwise import add, mul, silu, swiglu
from .embedding import embedding
from .flash_attention import flash_attention
from .matmul import matmul
from .norm import layer_norm, rms_norm
from .rope import rope
from .softmax import softmax

__all__ = [
    "add", "attention", "embedding", "flash_attention", "layer_norm", "matmul",
    "mul", "rms_norm", "rope", "silu", "softmax", "swiglu",
]
