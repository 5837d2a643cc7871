"""Float64 NumPy references for every kernel: the math the kernels must match.

Each function mirrors one op in :mod:`netcl_lite.ops` with the same arguments
and conventions, written for clarity rather than speed. Tests compare the
OpenCL result in float32 against these in float64.
"""

from __future__ import annotations

import numpy as np

from .masks import query_start


def matmul(a, b, *, transpose_a=False, transpose_b=False):
    """a: (..., M, K), b: (..., K, N) → (..., M, N) in float64."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    return a @ b


def causal_mask(tq: int, tk: int) -> np.ndarray:
    """(Tq, Tk) boolean: query i sees key j when j <= query_start + i (:func:`netcl_lite.masks.query_start`:
    the queries are the last Tq positions). Rows that see no key (Tq > Tk) are all False."""
    return np.arange(tk)[None, :] <= query_start(tq, tk) + np.arange(tq)[:, None]


def allowed(shape, mask=None, causal=False) -> np.ndarray:
    """Boolean (..., Tq, Tk): the entries a query may see under ``mask`` and ``causal``."""
    ok = np.ones(shape, bool)
    if mask is not None:
        ok = ok & np.asarray(mask, bool)
    if causal:
        ok = ok & causal_mask(*shape[-2:])
    return ok


def apply_mask(x, *, mask=None, causal=False):
    """x (..., Tq, Tk) with -inf where blocked."""
    x = np.asarray(x, np.float64)
    return np.where(allowed(x.shape, mask, causal), x, -np.inf)


def softmax(x, *, mask=None, causal=False):
    """Row softmax over the last axis; blocked entries get 0. x: (..., Tq, Tk)."""
    x = np.asarray(x, np.float64)
    allowed_ = allowed(x.shape, mask, causal)
    if x.size and not allowed_.any(axis=-1).all():
        raise ValueError("all-masked row")
    z = np.where(allowed_, x, -np.inf)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.where(allowed_, np.exp(z), 0.0)
    return e / e.sum(axis=-1, keepdims=True)


def expand_groups(kv, heads: int):
    """(..., G, T, w) → (..., H, T, w): head h reads group h // (H // G)."""
    kv = np.asarray(kv, np.float64)
    if kv.ndim < 3:
        return kv
    return np.repeat(kv, heads // kv.shape[-3], axis=-3)


def attention(q, k, v, *, mask=None, causal=False, scale=None, return_weights=False):
    """softmax(q kᵀ · scale + mask) v. q: (..., H, Tq, d); k, v: (..., G, Tk, d|dv)."""
    q = np.asarray(q, np.float64)
    heads = q.shape[-3] if q.ndim >= 3 else 1
    k, v = expand_groups(k, heads), expand_groups(v, heads)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    weights = softmax(q @ np.swapaxes(k, -1, -2) * scale, mask=mask, causal=causal)
    out = weights @ v
    return (out, weights) if return_weights else out


def attention_lse(q, k, *, mask=None, causal=False, scale=None):
    """Each query row's log-sum-exp of its allowed scaled scores: (..., H, Tq)."""
    q = np.asarray(q, np.float64)
    heads = q.shape[-3] if q.ndim >= 3 else 1
    k = expand_groups(k, heads)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = apply_mask(q @ np.swapaxes(k, -1, -2) * scale, mask=mask, causal=causal)   # (..., H, Tq, Tk)
    m = s.max(axis=-1, keepdims=True)
    return (m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True)))[..., 0]


def flash_attention(q, k, v, *, mask=None, causal=False, scale=None, block_size=64, return_stats=False):
    """Tiled online softmax in float64, the loop the kernels run (all rows at once).

    q: (..., H, Tq, d); k: (..., G, Tk, d); v: (..., G, Tk, dv). Per row: running
    max m, normalizer l = sum exp(s - m), accumulator o = sum exp(s - m) v; a tile
    that raises m first rescales l and o by exp(m_old - m_new).
    """
    q = np.asarray(q, np.float64)
    heads = q.shape[-3] if q.ndim >= 3 else 1
    k, v = expand_groups(k, heads), expand_groups(v, heads)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    tq, tk = q.shape[-2], k.shape[-2]
    visible = allowed(q.shape[:-1] + (tk,), mask, causal)   # (..., H, Tq, Tk), read per tile below
    if tq and not visible.any(axis=-1).all():
        raise ValueError("all-masked row")
    m = np.full(q.shape[:-1] + (1,), -np.inf)                # (..., H, Tq, 1)
    l = np.zeros_like(m)
    o = np.zeros(q.shape[:-1] + (v.shape[-1],))              # (..., H, Tq, dv)
    for j0 in range(0, tk, block_size):
        sl = slice(j0, j0 + block_size)
        s = q @ np.swapaxes(k[..., sl, :], -1, -2) * scale   # (..., H, Tq, block)
        s = np.where(visible[..., sl], s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        base = np.where(np.isfinite(m_new), m_new, 0.0)      # rows that have seen no key yet
        alpha = np.exp(m - base)                             # rescales the old l and o
        p = np.exp(s - base)
        l = alpha * l + p.sum(axis=-1, keepdims=True)
        o = alpha * o + p @ v[..., sl, :]
        m = m_new
    out = o / l
    return (out, (m + np.log(l))[..., 0]) if return_stats else out


def rope(x, *, offset=0, base=10000.0, pairing="interleaved"):
    """x: (..., T, d) rotated pairwise by angle (offset + t) · base^(-2i/d)."""
    x = np.asarray(x, np.float64)
    t_len, d = x.shape[-2:]
    theta = base ** (-2.0 * np.arange(d // 2) / d)                          # (d/2,)
    angle = (offset + np.arange(t_len))[:, None] * theta                   # (T, d/2)
    c, s = np.cos(angle), np.sin(angle)
    if pairing == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]                                  # (x[2i], x[2i+1])
    else:
        a, b = x[..., : d // 2], x[..., d // 2:]                           # (x[i], x[i + d/2])
    ra, rb = a * c - b * s, a * s + b * c
    out = np.empty_like(x)
    if pairing == "interleaved":
        out[..., 0::2], out[..., 1::2] = ra, rb
    else:
        out[..., : d // 2], out[..., d // 2:] = ra, rb
    return out


def sinusoidal_positions(seq_len, dim, base=10000.0):
    """(seq_len, dim): PE[p, 2i] = sin(p / base^(2i/dim)), PE[p, 2i+1] = cos(the same), in float64."""
    p = np.arange(seq_len, dtype=np.float64)[:, None]                       # (T, 1)
    two_i = np.arange(0, dim, 2, dtype=np.float64)[None, :]                  # (1, d/2)
    angle = p / np.power(base, two_i / dim)                                  # (T, d/2)
    out = np.empty((seq_len, dim))
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    return out


def rope_heads(x, heads, *, offset=0, base=10000.0, pairing="interleaved"):
    """x: (B, T, heads·d) split into (B, heads, T, d), each head rotated as :func:`rope` rotates."""
    x = np.asarray(x, np.float64)
    b, t_len, width = x.shape
    return rope(x.reshape(b, t_len, heads, width // heads).transpose(0, 2, 1, 3), offset=offset, base=base,
                pairing=pairing)


def rms_norm(x, weight, *, eps=1e-6):
    """x: (..., D) / sqrt(mean(x², -1) + eps) * weight (D,)."""
    x = np.asarray(x, np.float64)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * np.asarray(weight, np.float64)


def layer_norm(x, weight, bias, *, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis (biased variance)."""
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * np.asarray(weight, np.float64) + np.asarray(bias, np.float64)


def silu(x):
    """x · sigmoid(x), written to stay finite for large |x|."""
    x = np.asarray(x, np.float64)
    return x * np.exp(-np.logaddexp(0.0, -x))


def swiglu(gate, up):
    """silu(gate) · up."""
    return silu(gate) * np.asarray(up, np.float64)


def add(a, b):
    """a + b with b's shape a suffix of a's."""
    return np.asarray(a, np.float64) + np.asarray(b, np.float64)


def sub(a, b):
    """a − b with b's shape a suffix of a's."""
    return np.asarray(a, np.float64) - np.asarray(b, np.float64)


def mul(a, b):
    """a · b with b's shape a suffix of a's."""
    return np.asarray(a, np.float64) * np.asarray(b, np.float64)


def div(a, b):
    """a / b with b's shape a suffix of a's."""
    return np.asarray(a, np.float64) / np.asarray(b, np.float64)


def scale(x, alpha):
    """alpha · x."""
    return alpha * np.asarray(x, np.float64)


def exp(x):
    """e**x."""
    return np.exp(np.asarray(x, np.float64))


def sum(x, *, axis=None):  # noqa: A001 (the op's name)
    """Σ over every element (axis=None) or the last axis (axis=-1)."""
    return np.sum(np.asarray(x, np.float64), axis=axis)


def mean(x, *, axis=None):
    """The mean over every element (axis=None) or the last axis (axis=-1)."""
    return np.mean(np.asarray(x, np.float64), axis=axis)


def swap_axes(x, axis1, axis2):
    """x with two axes exchanged."""
    return np.swapaxes(np.asarray(x, np.float64), axis1, axis2)


def cross_entropy(logits, targets, *, ignore_index=-100):
    """Mean over counted rows of logsumexp(z) − z[target]; rows with target == ignore_index are left out."""
    z = np.asarray(logits, np.float64).reshape(-1, np.shape(logits)[-1])
    t = np.asarray(targets).reshape(-1)
    keep = t != ignore_index
    m = z.max(axis=-1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))[:, 0]
    return float(np.mean(lse[keep] - z[keep, t[keep]]))


def embedding(table, ids):
    """table: (V, D), ids: any int shape → (*ids.shape, D)."""
    return np.asarray(table, np.float64)[np.asarray(ids)]


def decode_layer(x, weights, k_cache, v_cache, position, *, n_heads, eps=1e-6, rope_base=10000.0,
                 ids=None, table=None):
    """One Llama layer on one position per sequence: (x', k_cache', v_cache'), nothing changed in place.

    x: (B, D); caches (B, G, S, d) with positions 0..position-1 filled; weights by name as in
    :func:`netcl_lite.ops.decode_layer` ((in, out) projections). With ``table`` and ``ids``,
    x is the embedding of ``ids`` instead.
    """
    w = {name: np.asarray(value, np.float64) for name, value in weights.items()}
    x = embedding(table, ids) if table is not None else np.asarray(x, np.float64)
    k_all, v_all = np.array(k_cache, np.float64), np.array(v_cache, np.float64)
    b, dim = x.shape
    groups, d = k_all.shape[1], k_all.shape[3]
    heads_of = lambda y, n: y.reshape(b, n, 1, d)                                 # (B, n, 1, d)
    a = rms_norm(x, w["norm1"], eps=eps)
    q = rope(heads_of(a @ w["wq"], n_heads), offset=position, base=rope_base, pairing="half")
    k_all[:, :, position] = rope(heads_of(a @ w["wk"], groups), offset=position, base=rope_base, pairing="half")[:, :, 0]
    v_all[:, :, position] = heads_of(a @ w["wv"], groups)[:, :, 0]
    o = attention(q, k_all[:, :, : position + 1], v_all[:, :, : position + 1])   # the new query sees every key
    x = x + o.reshape(b, dim) @ w["wo"]
    m = rms_norm(x, w["norm2"], eps=eps)
    return x + swiglu(m @ w["w1"], m @ w["w3"]) @ w["w2"], k_all, v_all


def decode_logits(x, norm, *, table=None, output=None, eps=1e-6):
    """RMSNorm(x) · norm times the LM head: ``table`` (V, D) transposed when tied, else ``output`` (D, V)."""
    n = rms_norm(x, norm, eps=eps)
    return n @ np.asarray(table, np.float64).T if table is not None else n @ np.asarray(output, np.float64)


def decode_step(x, layers, k_caches, v_caches, position, *, n_heads, eps=1e-6, rope_base=10000.0, ids=None,
                table=None, norm=None, output=None):
    """A decoding step of a stack of layers: (logits, or x without a head, k_caches', v_caches').

    With ``table`` and ``ids``, x is first the embedding of ``ids``; each layer is
    :func:`decode_layer` with its weights and caches; with ``norm``, the result is
    :func:`decode_logits` with the head tied to ``table`` or ``output`` (D, V).
    """
    x = embedding(table, ids) if ids is not None else np.asarray(x, np.float64)
    ks, vs = [], []
    for weights, k, v in zip(layers, k_caches, v_caches, strict=True):
        x, k, v = decode_layer(x, weights, k, v, position, n_heads=n_heads, eps=eps, rope_base=rope_base)
        ks.append(k)
        vs.append(v)
    if norm is not None:
        x = decode_logits(x, norm, **(dict(output=output) if output is not None else dict(table=table)), eps=eps)
    return x, ks, vs


def decode_prefill(ids, layers, k_caches, v_caches, position, *, n_heads, table, norm, eps=1e-6, rope_base=10000.0):
    """The final-normed hidden states (B, T, D) of ``ids`` (B, T) at positions ``position..``, and the
    caches with their K and V: :func:`decode_step` one position at a time (each attends over the
    positions before it and itself), then the RMSNorm."""
    ids = np.asarray(ids)
    ks, vs = list(k_caches), list(v_caches)
    rows = []
    for t in range(ids.shape[1]):
        x, ks, vs = decode_step(None, layers, ks, vs, position + t, n_heads=n_heads, eps=eps, rope_base=rope_base,
                                ids=ids[:, t], table=table)
        rows.append(rms_norm(x, norm, eps=eps))
    return np.stack(rows, axis=1), ks, vs
