"""Tensor operations that run as OpenCL kernels from ``kernels/*.cl``.

Every op takes NumPy arrays or :class:`~netcl_lite.core.tensor.Tensor` s:
NumPy in gives NumPy out (on the default device), Tensors in give Tensors out
(on their device, enqueued without waiting), all on one command queue. Each op's
module owns its forward and its backward launchers and names its float64 twin in
:mod:`netcl_lite.reference`; a backward launcher takes the Tensors its forward left on
the device (a NumPy array in their place is refused by name). A NumPy masked array
is refused by name.
"""

from .attention import attention, attention_backward, attention_with_mask
from .decode import decode_layer, decode_logits
from .cross_entropy import cross_entropy, cross_entropy_backward, cross_entropy_with_stats
from .elementwise import add, binary_backward, div, exp, mul, scale, silu, silu_backward, sub, swiglu, swiglu_backward
from .embedding import embedding, embedding_backward, embedding_ids
from .flash_attention import (
    backward_uses_tiles,
    flash_attention,
    flash_attention_backward,
    flash_attention_with_mask,
)
from .layout import concat_columns, split_columns, swap_axes
from .matmul import matmul, matmul_add, matmul_backward, matmul_columns, matmul_pair, swiglu_input_grad, swiglu_linear
from .norm import layer_norm, layer_norm_backward, rms_norm, rms_norm_backward
from .reduce import mean, sum, sum_backward, sum_to  # noqa: A004 (the op's name)
from .rope import rope, rope_backward, rope_heads, rope_heads_backward
from .rotary_attention import (rotary_attention, rotary_attention_backward, rotary_attention_qkv,
                               rotary_attention_qkv_backward)
from .softmax import apply_mask, softmax, softmax_backward, softmax_with_mask

__all__ = [
    "add", "apply_mask", "attention", "cross_entropy", "decode_layer", "decode_logits", "div", "embedding", "exp", "flash_attention", "layer_norm",
    "matmul", "matmul_add", "matmul_pair", "mean", "mul", "rms_norm", "rope", "rope_heads", "scale", "silu", "softmax", "sub", "sum", "swap_axes", "swiglu", "swiglu_input_grad", "swiglu_linear",
]
