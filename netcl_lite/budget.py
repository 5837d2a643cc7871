"""Memory and parameter arithmetic for attention: KV cache, projection weights, score matrices.

Counts are exact Python ints (no overflow, no rounding). Sizes are bytes; `to_gb` divides by 1e9
(decimal GB), `to_gib` by 2**30 (binary GiB), and `format_bytes` prints both, because the two differ
by 7% at this scale and pages often mix them up. Each count is a lower bound for what it names:
no metadata, allocator overhead, padding, quantization scales, activations or sharding.

    >>> format_bytes(kv_cache_bytes(layers=80, kv_heads=64, head_dim=128, seq_len=2048))
    '5,368,709,120 B = 5.37 GB = 5.00 GiB'
"""

import math

from .checks import count

_UNITS = [("kB", "KiB"), ("MB", "MiB"), ("GB", "GiB"), ("TB", "TiB"), ("PB", "PiB")]


def kv_cache_bytes(layers, kv_heads, head_dim, seq_len, batch=1, bytes_per_element=2):
    """Bytes to cache K and V for every layer: 2 * layers * kv_heads * head_dim * seq_len * batch * bytes.

    Shapes are ints >= 0 (zero gives 0); bytes_per_element >= 1 (2 = fp16/bf16, 4 = fp32).
    The cache is the array (2, layers, batch, kv_heads, seq_len, head_dim) in any layout.

    >>> kv_cache_bytes(80, 8, 128, 2048)
    671088640
    """
    shape = {"layers": layers, "kv_heads": kv_heads, "head_dim": head_dim, "seq_len": seq_len, "batch": batch}
    elements = math.prod(_count(name, value) for name, value in shape.items())
    return 2 * elements * _count("bytes_per_element", bytes_per_element, minimum=1)


def attention_parameters(dim, n_heads, n_kv_heads=None):
    """Bias-free projection weights of one attention layer: 2*D**2 + 2*D*g*d.

    dim D = n_heads * d; n_kv_heads g defaults to n_heads (MHA, 4*D**2); g = 1 is MQA, between is GQA.
    Wq and Wo are D x D; Wk and Wv are D x (g * d). n_heads must divide dim, n_kv_heads must divide n_heads.
    Sharing K/V shrinks the cache by n_heads / g but the weights by less: Q and O stay square.

    >>> attention_parameters(12, 3, 1), attention_parameters(12, 3)
    (384, 576)
    """
    dim = _count("dim", dim, minimum=1)
    n_heads = _count("n_heads", n_heads, minimum=1)
    n_kv_heads = n_heads if n_kv_heads is None else _count("n_kv_heads", n_kv_heads, minimum=1)
    if dim % n_heads:
        raise ValueError(f"n_heads {n_heads} must divide dim {dim} (head width d = dim / n_heads)")
    if n_heads % n_kv_heads:
        raise ValueError(f"n_kv_heads {n_kv_heads} must divide n_heads {n_heads} (each K/V head serves a group)")
    head_dim = dim // n_heads
    return 2 * dim * dim + 2 * dim * n_kv_heads * head_dim


def score_matrix_bytes(seq_len, bytes_per_element=4, heads=1, batch=1, query_len=None):
    """Bytes to materialize the attention scores: query_len * seq_len * heads * batch * bytes.

    seq_len is the key length; query_len defaults to it (self-attention). One matrix per head and
    batch element; tiled attention (FlashAttention) never stores it whole.

    >>> score_matrix_bytes(8192) == 256 * 2**20  # one fp32 8,192 x 8,192 matrix is 256 MiB
    True
    """
    seq_len = _count("seq_len", seq_len)
    query_len = seq_len if query_len is None else _count("query_len", query_len)
    copies = _count("heads", heads) * _count("batch", batch)
    return query_len * seq_len * copies * _count("bytes_per_element", bytes_per_element, minimum=1)


def tied_embedding_savings(vocab, dim):
    """Weights saved by reusing the (vocab, dim) input embedding as the output projection: vocab * dim.

    Assumes the output layer would otherwise be a separate bias-free (dim, vocab) matrix.

    >>> tied_embedding_savings(32_000, 512)
    16384000
    """
    return _count("vocab", vocab) * _count("dim", dim)


def to_gb(n_bytes):
    """Decimal gigabytes: n_bytes / 1e9.

    >>> to_gb(5_368_709_120)
    5.36870912
    """
    return _count("n_bytes", n_bytes) / 1e9


def to_gib(n_bytes):
    """Binary gibibytes: n_bytes / 2**30.

    >>> to_gib(5_368_709_120)
    5.0
    """
    return _count("n_bytes", n_bytes) / 2**30


def format_bytes(n_bytes):
    """Exact bytes, then the decimal and binary sizes at the same scale, 2 decimals each.

    >>> format_bytes(268_435_456)
    '268,435,456 B = 268.44 MB = 256.00 MiB'
    """
    n_bytes = _count("n_bytes", n_bytes)
    text = f"{n_bytes:,} B"
    scale = 0
    while scale < len(_UNITS) and n_bytes >= 1024 ** (scale + 1):
        scale += 1
    if scale:
        decimal, binary = _UNITS[scale - 1]
        text += f" = {n_bytes / 1000**scale:.2f} {decimal} = {n_bytes / 1024**scale:.2f} {binary}"
    return text


def _count(name, value, minimum=0):
    return count(name, value, minimum)
