"""``rotary_attention``: a decoder layer's self-attention on short sequences, straight from the q, k
and v projections (``kernels/rotary_attention.cl``), with RoPE applied as the rows are read, and
its gradient. Float64 reference: :func:`rotary_attention_reference` (:func:`netcl_lite.reference.rope_heads`,
:func:`netcl_lite.reference.attention` and the merge of the heads).

It computes what :func:`~netcl_lite.ops.rope_heads` of q and k, the split of v into heads,
:func:`~netcl_lite.ops.flash_attention` and the merge of its output compute together, in one
launch forward and one backward: at the lengths a small model trains on, those passes and their
launches took longer than the attention itself. Each work-item keeps its head's (or group's) K
and V in private memory, so sequences up to :data:`MAX_LENGTH` take it.
"""

from __future__ import annotations

import math

import numpy as np

from ..checks import finite_real, flag, one_of, positive_int, positive_real, within_float32
from ..core.kernels import vector_lanes
from .operands import OpCall, device_operand, f32, i32, int32_range, round_up, shape_of
from .rope import device_tables

#: the longest sequence the kernels take (each work-item holds five T x d private arrays backward)
MAX_LENGTH = 128
#: the widest head they take
MAX_HEAD = 128
PAIRINGS = ("interleaved", "half")


def fits(t_len: int, d: int, dv: int) -> bool:
    """Whether :func:`rotary_attention` takes sequences of ``t_len`` with head widths ``d``, ``dv``."""
    return 1 <= t_len <= MAX_LENGTH and 1 <= d <= MAX_HEAD and 1 <= dv <= MAX_HEAD


def _check(q, k, v, heads, kv_heads, causal, rope, base, pairing, scale):
    """(B, T, d, dv, scale) after checking every argument."""
    return _check_shapes(shape_of(q), shape_of(k), shape_of(v), heads, kv_heads, causal, rope, base, pairing, scale)


def _check_shapes(sq, sk, sv, heads, kv_heads, causal, rope, base, pairing, scale):
    """:func:`_check` given the shapes of q, k and v."""
    heads, kv_heads = positive_int("heads", heads), positive_int("kv_heads", kv_heads)
    flag("causal", causal)
    flag("rope", rope)
    one_of("pairing", pairing, PAIRINGS)
    positive_real("base", base)
    if len(sq) != 3 or len(sk) != 3 or len(sv) != 3 or not sq[0] == sk[0] == sv[0] or not sq[1] == sk[1] == sv[1]:
        raise ValueError(f"q, k, v must be (B, T, width) with the same B and T, got q {sq}, k {sk}, v {sv}")
    if heads % kv_heads:
        raise ValueError(f"kv_heads={kv_heads} must divide heads={heads} (head h reads K/V group h // (heads // kv_heads))")
    if sq[2] % heads or sk[2] % kv_heads or sv[2] % kv_heads or sq[2] // heads != sk[2] // kv_heads:
        raise ValueError(f"q's width {sq[2]} must be heads={heads} heads of d, k's width {sk[2]} kv_heads={kv_heads} "
                         f"heads of the same d, and v's width {sv[2]} kv_heads heads of dv")
    b, t_len, d, dv = sq[0], sq[1], sq[2] // heads, sv[2] // kv_heads
    if rope and d % 2:
        raise ValueError(f"rope needs an even head width to form pairs, got d={d}")
    if not fits(t_len, d, dv):
        raise ValueError(f"rotary_attention takes 1 <= T <= {MAX_LENGTH} and head widths up to {MAX_HEAD}, got "
                         f"T={t_len}, d={d}, dv={dv}; use rope_heads and flash_attention")
    int32_range(q_elements=b * t_len * sq[2], positions=t_len)
    scale = 1.0 / math.sqrt(d) if scale is None else within_float32("scale", finite_real("scale", scale))
    return b, t_len, d, dv, scale


def _options(device, t_len, d, dv, rope, pairing) -> tuple:
    vw = vector_lanes(device)
    chunk = vw * (4 if vw == 16 else 2)                    # the kernels' KC
    rot = PAIRINGS.index(pairing) + 1 if rope else 0
    return (f"-DVW={vw}", f"-DD={d}", f"-DDV={dv}", f"-DTP={round_up(t_len, chunk)}", f"-DROT={rot}")


def rotary_attention(q, k, v, heads: int, kv_heads: int, *, causal: bool = True, rope: bool = True,
                     base: float = 10000.0, pairing: str = "half", scale=None, return_stats: bool = False, queue=None):
    """Self-attention of ``heads`` query heads over ``kv_heads`` K/V heads, read from the projections.

    ``q`` is ``(B, T, heads·d)``, ``k`` ``(B, T, kv_heads·d)`` and ``v`` ``(B, T, kv_heads·dv)``, as
    ``x @ Wq`` and friends give them; the result is ``(B, T, heads·dv)``, the layout the output
    projection reads. With ``rope``, q and k are rotated as :func:`~netcl_lite.ops.rope_heads`
    rotates them (``pairing``, ``base``, position t at row t); ``causal``: query t sees keys up to t.
    ``scale`` defaults to 1/sqrt(d). ``T`` up to :data:`MAX_LENGTH`. With ``return_stats=True``
    returns ``(out, lse)``, ``lse`` ``(B, heads, T)`` each row's log-sum-exp of its scaled scores.

    >>> x = np.eye(4, dtype=np.float32)[None]          # B = 1, T = 4, one head of d = 4
    >>> rotary_attention(x, x, x, 1, 1, rope=False, scale=0.0)[0, 3]   # equal weights over 4 keys
    array([0.25, 0.25, 0.25, 0.25], dtype=float32)
    """
    b, t_len, d, dv, scale = _check(q, k, v, heads, kv_heads, causal, rope, base, pairing, scale)
    call = OpCall("rotary_attention", queue=queue, q=q, k=k, v=v)
    tq, tk, tv = call.float_input("q"), call.float_input("k"), call.float_input("v")
    blocks = ((tq.buffer, heads * d, 0), (tk.buffer, kv_heads * d, 0), (tv.buffer, kv_heads * dv, 0))
    out, lse = _forward(call, blocks, b, t_len, heads, kv_heads, d, dv, causal, scale, rope, base, pairing)
    return (out, lse) if return_stats else out


def _forward(call, blocks, b, t_len, heads, kv_heads, d, dv, causal, scale, rope, base, pairing):
    """The forward launch; ``blocks``: (buffer, row length, offset) of q, k and v. (out, lse)."""
    out, lse = call.output((b, t_len, heads * dv)), call.output((b, heads, t_len))
    if out.size:
        cos_t, sin_t = device_tables(call.queue, t_len, d if rope else 2, float(base))
        (bq, rq, oq), (bk, rk, ok), (bv, rv, ov) = blocks
        call.launch("rotary_attention.cl", "rotary_attention_forward", (heads, b), (1, 1),
                    bq, bk, bv, out.buffer, lse.buffer, cos_t.buffer, sin_t.buffer,
                    i32(t_len), i32(heads), i32(kv_heads), i32(rq), i32(rk), i32(rv), i32(oq), i32(ok), i32(ov),
                    i32(causal), f32(scale), call.stream.status, call.seq,
                    options=_options(call.queue.device, t_len, d, dv, rope, pairing))
    return call.result(out, lse, check=[False, False])


def _joined_shapes(qkv, widths):
    """The shapes of q, k and v as column blocks of ``qkv`` (B, T, sum(widths))."""
    s = shape_of(qkv)
    if not isinstance(widths, (list, tuple)) or len(widths) != 3 or any(
            isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 1 for w in widths):
        raise TypeError(f"widths must be the three positive int widths of q, k and v, got {widths!r}")
    widths = tuple(int(w) for w in widths)          # summed as Python ints: a NumPy int8 sum would wrap
    if len(s) != 3 or s[2] != sum(widths):
        raise ValueError(f"qkv must be (B, T, {sum(widths)}): q, k and v of widths {tuple(widths)} side by side, "
                         f"got shape {s}")
    return tuple(s[:2] + (int(w),) for w in widths)


def rotary_attention_qkv(qkv, widths, heads: int, kv_heads: int, *, causal: bool = True, rope: bool = True,
                         base: float = 10000.0, pairing: str = "half", scale=None, return_stats: bool = False,
                         queue=None):
    """:func:`rotary_attention` of q, k and v given side by side in one ``qkv`` (B, T, wq + wk + wv),
    ``widths`` = (wq, wk, wv): the output of one product ``x @ [Wq | Wk | Wv]``, read in place.

    >>> x = np.eye(4, dtype=np.float32)[None]
    >>> rotary_attention_qkv(np.concatenate([x, x, x], -1), (4, 4, 4), 1, 1, rope=False, scale=0.0)[0, 3]
    array([0.25, 0.25, 0.25, 0.25], dtype=float32)
    """
    sq, sk, sv = _joined_shapes(qkv, widths)
    b, t_len, d, dv, scale = _check_shapes(sq, sk, sv, heads, kv_heads, causal, rope, base, pairing, scale)
    call = OpCall("rotary_attention", queue=queue, qkv=qkv)
    buf, row = call.float_input("qkv").buffer, sum(int(w) for w in widths)
    blocks = ((buf, row, 0), (buf, row, sq[2]), (buf, row, sq[2] + sk[2]))
    out, lse = _forward(call, blocks, b, t_len, heads, kv_heads, d, dv, causal, scale, rope, base, pairing)
    return (out, lse) if return_stats else out


def rotary_attention_backward(g, q, k, v, out, lse, heads: int, kv_heads: int, *, causal: bool = True,
                              rope: bool = True, base: float = 10000.0, pairing: str = "half", scale=None):
    """The gradients of q, k and v of :func:`rotary_attention` given the output's gradient ``g``
    (Tensors in the projections' layouts), recomputing the weights from q, k and the saved ``lse``:
    side by side in one Tensor ``[dq | dk | dv]`` of shape (B, T, heads·d + kv_heads·d + kv_heads·dv),
    so that the gradient of x through the three projections is one product with ``[Wq | Wk | Wv]``
    (:func:`netcl_lite.autograd.rotary_attention_projected`)."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        device_operand("rotary_attention backward", name, x)
    b, t_len, d, dv, scale = _check(q, k, v, heads, kv_heads, causal, rope, base, pairing, scale)
    _check_saved(g, out, lse, b, t_len, heads, dv)
    call = OpCall("rotary_attention backward", g=g, q=q, k=k, v=v, out=out, lse=lse)
    blocks = ((q.buffer, heads * d, 0), (k.buffer, kv_heads * d, 0), (v.buffer, kv_heads * dv, 0))
    return _backward(call, g, blocks, out, lse, b, t_len, heads, kv_heads, d, dv, causal, scale, rope, base, pairing)


def _check_saved(g, out, lse, b, t_len, heads, dv) -> None:
    """The backward's ``g`` and the forward's ``out`` (B, T, heads·dv) and ``lse`` (B, heads, T): float32
    Tensors of exactly those shapes, which the kernel reads without bounds."""
    for name, x, shape in (("g", g, (b, t_len, heads * dv)), ("out", out, (b, t_len, heads * dv)),
                           ("lse", lse, (b, heads, t_len))):
        device_operand("rotary_attention backward", name, x, shape)


def _backward(call, g, blocks, out, lse, b, t_len, heads, kv_heads, d, dv, causal, scale, rope, base, pairing):
    """The backward launch; ``blocks`` as :func:`_forward` takes them. ``[dq | dk | dv]``."""
    dqkv = call.output((b, t_len, heads * d + kv_heads * (d + dv)))
    if dqkv.size:
        cos_t, sin_t = device_tables(call.queue, t_len, d if rope else 2, float(base))
        (bq, rq, oq), (bk, rk, ok), (bv, rv, ov) = blocks
        call.launch("rotary_attention.cl", "rotary_attention_backward", (kv_heads, b), (1, 1),
                    bq, bk, bv, out.buffer, g.buffer, lse.buffer, dqkv.buffer,
                    cos_t.buffer, sin_t.buffer, i32(t_len), i32(heads), i32(kv_heads), i32(rq), i32(rk), i32(rv),
                    i32(oq), i32(ok), i32(ov), i32(causal), f32(scale), call.stream.status, call.seq,
                    options=_options(call.queue.device, t_len, d, dv, rope, pairing))
    return call.result(dqkv, check=[False])


def rotary_attention_qkv_backward(g, qkv, widths, out, lse, heads: int, kv_heads: int, *, causal: bool = True,
                                  rope: bool = True, base: float = 10000.0, pairing: str = "half", scale=None):
    """:func:`rotary_attention_backward` for :func:`rotary_attention_qkv`: q, k and v read as the column
    blocks of ``qkv`` (Tensors); the same ``[dq | dk | dv]``."""
    device_operand("rotary_attention backward", "qkv", qkv)
    sq, sk, sv = _joined_shapes(qkv, widths)
    b, t_len, d, dv, scale = _check_shapes(sq, sk, sv, heads, kv_heads, causal, rope, base, pairing, scale)
    _check_saved(g, out, lse, b, t_len, heads, dv)
    call = OpCall("rotary_attention backward", g=g, qkv=qkv, out=out, lse=lse)
    row = sum(int(w) for w in widths)
    blocks = ((qkv.buffer, row, 0), (qkv.buffer, row, sq[2]), (qkv.buffer, row, sq[2] + sk[2]))
    return _backward(call, g, blocks, out, lse, b, t_len, heads, kv_heads, d, dv, causal, scale, rope, base, pairing)


def rotary_attention_reference(q, k, v, heads: int, kv_heads: int, *, causal: bool = True, rope: bool = True,
                               base: float = 10000.0, pairing: str = "half", scale=None) -> np.ndarray:
    """:func:`rotary_attention` in float64: rope_heads of q and k, attention, heads merged."""
    from .. import reference as ref

    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    b, t_len, _ = q.shape
    if rope:
        qh = ref.rope_heads(q, heads, base=base, pairing=pairing)
        kh = ref.rope_heads(k, kv_heads, base=base, pairing=pairing)
    else:
        qh = q.reshape(b, t_len, heads, -1).transpose(0, 2, 1, 3)
        kh = k.reshape(b, t_len, kv_heads, -1).transpose(0, 2, 1, 3)
    vh = v.reshape(b, t_len, kv_heads, -1).transpose(0, 2, 1, 3)
    o = ref.attention(qh, kh, vh, causal=causal, scale=scale)
    return o.transpose(0, 2, 1, 3).reshape(b, t_len, -1)
