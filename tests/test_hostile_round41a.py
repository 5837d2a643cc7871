"""Round 41a: hostile inputs to round 40's newest code; each test fails on the code it was written against.

1. ``ngram``'s stored counts: an entry whose digest and key match but whose unigram counts are NaN or negative,
   or whose pair counts are 0, is read as counts: ``NGram.predict`` then gives NaN probabilities, or rows that
   sum to -0.5 or to more than 1. The docstring promises an entry holding "arrays that are not such counts"
   is a miss.
2. ``capstone.sliding_windows`` of unsigned ids (``np.uint16`` is how token ids are commonly kept) fails with
   NumPy's raw "Python integer -100 out of bounds for uint16", naming no parameter.
3. ``capstone.sliding_windows`` / ``spread_windows`` take negative ids; an id of -100 (``IGNORE``) in ids
   becomes a target that is silently never scored.
4. The ops read a masked array held in a list (``[np.ma.array(...)]``): ``not_masked`` looks only at the
   operand itself, and ``np.asarray`` of the list drops the mask.
5. ``ops.rotary_attention_qkv`` sums NumPy integer widths in their own type: ``np.int8`` widths (64, 64, 64)
   wrap to -64 and a valid qkv of width 192 is refused, "qkv must be (B, T, -64)".
6. ``ops.sum`` / ``ops.mean`` take ``axis=True`` and ``axis=1.0`` (read as 1), where every other int
   parameter of the library refuses a bool or a float.
7. ``ops.mean`` of values near float32's largest raises NonFiniteError ("a result beyond float32's range")
   although the mean itself (3e38) is a float32: the sum is formed before the division.
"""

from __future__ import annotations

import dataclasses
import hashlib
import warnings

import numpy as np
import pytest

VOCAB = 300


# --- 1. stored n-gram counts whose values are not counts ------------------------------------------------


@pytest.fixture
def ngram_cache(tmp_path, monkeypatch):
    from netcl_lite import ngram

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    monkeypatch.setattr(ngram, "STORED_MIN_IDS", 64)
    monkeypatch.setattr(ngram, "_STORED_READ", True)
    with ngram._COUNTED_LOCK:
        ngram._COUNTED.clear()
    yield tmp_path / "cache"
    with ngram._COUNTED_LOCK:
        ngram._COUNTED.clear()


def _nan_unigram(u, p):
    u[3] = np.nan
    return u, p


def _negative_unigram(u, p):
    u[:] = -1.0
    return u, p


def _huge_unigram(u, p):
    u[:] = 1e308                                   # their sum is inf
    return u, p


def _zero_counts(u, p):
    return u, dataclasses.replace(p, counts=np.zeros_like(p.counts))


@pytest.mark.parametrize("damage", [_nan_unigram, _negative_unigram, _huge_unigram, _zero_counts])
def test_a_stored_count_entry_whose_values_are_not_counts_is_a_miss(ngram_cache, damage):
    """An entry under ``ngram/<key>`` with a matching digest and key (anyone can compute both: the digest is a
    SHA-256 of the body) but values that no primer gives (NaN, negative or 1e308 unigram counts, pair counts of 0)
    is read as the primer's counts: ``NGram.predict`` then returns NaN probabilities or rows that do not sum
    to 1. It should be a miss (counted again), as an entry with the wrong dtype or shape already is."""
    from netcl_lite import ngram
    from netcl_lite.fingerprint import cache_root

    rng = np.random.default_rng(0)
    primer = (rng.integers(0, 40, 5000) * 7 % VOCAB).astype(np.int64)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ngram, "STORED_MIN_IDS", 1 << 40)
        unigram, primed = ngram._primed_counts(primer, VOCAB, ngram.ORDERS)
    digest = hashlib.sha256(primer.astype(np.int32).tobytes()).digest()
    item = ngram._stored_key(digest, primer.size, VOCAB, ngram.ORDERS)
    ngram._write_counts(cache_root() / "ngram" / item, item, *damage(unigram.copy(), primed))
    with ngram._COUNTED_LOCK:
        ngram._COUNTED.clear()
    model = ngram.NGram(primer, VOCAB, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(6):
            p, _, _ = model.predict()
            assert np.isfinite(p).all() and (p >= 0).all(), "probabilities from a lying entry"
            assert np.allclose(p.sum(axis=1), 1.0), p.sum(axis=1)
            model.update(np.array([7, 14]), np.array([True, True]))


# --- 2./3. window helpers ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_sliding_windows_of_unsigned_ids(dtype):
    """``sliding_windows(np.arange(9, dtype=np.uint16), 4, 2)`` fails with NumPy's raw OverflowError
    ("Python integer -100 out of bounds for uint16"): the targets are a copy of the ids in their dtype, into
    which IGNORE (-100) is written. Unsigned ids are accepted by the check (kind "u"); the targets should be
    a signed type holding IGNORE, the same windows as for int64 ids."""
    from netcl_lite import capstone

    want_x, want_y = capstone.sliding_windows(np.arange(9), 4, 2)
    x, y = capstone.sliding_windows(np.arange(9, dtype=dtype), 4, 2)
    assert x.tolist() == want_x.tolist() and y.tolist() == want_y.tolist()


@pytest.mark.parametrize("helper", ["sliding_windows", "spread_windows"])
def test_window_helpers_refuse_negative_ids(helper):
    """Token ids are >= 0, but ``sliding_windows([-100, -5, 2, ...], 4, 2)`` cuts windows of them: an id of
    -100 is IGNORE, so a target holding it is silently never scored, and -5 would be read by NumPy
    indexing as ``vocab - 5``. A ValueError naming ``ids`` should refuse negative ids."""
    from netcl_lite import capstone

    ids = np.array([-100, -5, 2, 3, 4, 5, 6, 7, 8])
    with pytest.raises(ValueError, match="ids"):
        if helper == "sliding_windows":
            capstone.sliding_windows(ids, 4, 2)
        else:
            capstone.spread_windows(ids, 2, 4)


# --- 4. masked arrays inside a list ----------------------------------------------------------------------


@pytest.mark.parametrize("op", ["add", "cross_entropy"])
def test_ops_refuse_a_masked_array_held_in_a_list(op):
    """``ops.add([np.ma.array([1., 2.], mask=[0, 1])], np.zeros((1, 2)))`` returns [[1., 2.]]: the masked 2.0
    is added as if it were there (``np.asarray`` of the list drops the mask); ``cross_entropy`` of such logits
    scores the masked logit. A masked array on its own is refused (round 40); held in a list it should be too:
    a TypeError saying "masked"."""
    from netcl_lite import ops

    masked = np.ma.array([0.0, 5.0], mask=[0, 1])
    with pytest.raises(TypeError, match="masked"):
        if op == "add":
            ops.add([masked], np.zeros((1, 2)))
        else:
            ops.cross_entropy([masked], [1])


# --- 5. rotary_attention_qkv widths in a small NumPy type ------------------------------------------------


def test_rotary_attention_qkv_sums_numpy_widths_as_python_ints():
    """``rotary_attention_qkv(qkv, (np.int8(64),) * 3, 1, 1)`` for a qkv of width 192 is refused:
    "qkv must be (B, T, -64)": the widths are summed in int8 and wrap. Each width is a valid positive int;
    the call should give what the Python ints (64, 64, 64) give (round 40 fixed the same in split_columns)."""
    from netcl_lite import ops

    qkv = np.random.default_rng(0).standard_normal((1, 3, 192)).astype(np.float32)
    want = ops.rotary_attention_qkv(qkv, (64, 64, 64), 1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ops.rotary_attention_qkv(qkv, (np.int8(64),) * 3, 1, 1)
    np.testing.assert_array_equal(got, want)


# --- 6./7. reductions ------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [True, 1.0])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sum_and_mean_refuse_a_bool_or_float_axis(op, axis):
    """``ops.sum(np.ones((2, 3)), axis=True)`` and ``axis=1.0`` sum over the last axis (``True == 1``): the
    check ``axis not in (None, -1, ndim - 1)`` compares by value. The axis should be an int: a TypeError
    naming ``axis``, as the library's other int parameters refuse bools and floats."""
    from netcl_lite import ops

    with pytest.raises(TypeError, match="axis"):
        getattr(ops, op)(np.ones((2, 3)), axis=axis)


def test_mean_of_large_finite_values_is_not_an_overflow():
    """``ops.mean(np.full(10, 3e38, np.float32))`` raises NonFiniteError "mean produced inf or NaN from finite
    inputs ... a result beyond float32's range": the mean, 3e38, is a float32; only the sum formed first
    overflows. It should return 3e38 (scale before summing, or sum in a wider type)."""
    from netcl_lite import ops

    got = float(ops.mean(np.full(10, 3e38, np.float32)))
    assert got == pytest.approx(3e38, rel=1e-5)


# --- 8./9. optim: gradients of another queue, NumPy gradients ----------------------------------------------


def _param(queue, grad):
    from netcl_lite import autograd as ag
    from netcl_lite.core import manager
    from netcl_lite.core.tensor import Tensor

    w = ag.Node(Tensor.from_host(manager.default().queue, np.ones((3, 4), np.float32)), requires_grad=True)
    w.grad = grad if queue is None else Tensor.from_host(queue, np.asarray(grad, np.float32))
    return w


def test_clip_grad_norm_refuses_gradients_on_two_queues():
    """``clip_grad_norm({"a": ..., "b": ...})`` whose gradients are Tensors of two command queues of one context
    runs its norm kernels on the first gradient's queue, which does not wait for what the other queue still
    writes into its gradient (it checks contexts only). Round 40 made every op refuse operands of another queue;
    ``clip_grad_norm`` (and ``AdamW.step`` with a ``norm`` or a gradient of another queue than the parameter's)
    should refuse them too, with a ValueError saying "queue"."""
    import pyopencl as cl

    from netcl_lite import optim
    from netcl_lite.core import manager

    q = manager.default().queue
    other = cl.CommandQueue(q.context)
    params = {"a": _param(q, np.full((3, 4), 2.0)), "b": _param(other, np.full((3, 4), 2.0))}
    with pytest.raises(ValueError, match="queue"):
        optim.clip_grad_norm(params, 1.0)


def test_adamw_step_refuses_a_norm_of_another_queue():
    """``AdamW.step(norm=n)`` with ``n`` a (2,) float32 Tensor of another command queue than the parameters'
    (even of another context) is taken: the step's kernel reads it without waiting for that queue. Should be
    a ValueError naming ``norm`` and the queue."""
    import pyopencl as cl

    from netcl_lite import optim
    from netcl_lite.core import manager
    from netcl_lite.core.tensor import Tensor

    q = manager.default().queue
    other = cl.CommandQueue(q.context)
    a = _param(q, np.full((3, 4), 2.0))
    opt = optim.AdamW({"a": a})
    norm = Tensor.from_host(other, np.array([1.0, 1.0], np.float32))
    with pytest.raises(ValueError, match="norm"):
        opt.step(norm=norm)


@pytest.mark.parametrize("call", ["clip_grad_norm", "AdamW.step"])
def test_optim_refuses_a_numpy_gradient_by_name(call):
    """A parameter whose ``grad`` is a NumPy array (set by hand, or from a host computation): ``clip_grad_norm``
    fails with a raw AttributeError "'numpy.ndarray' object has no attribute 'queue'", ``AdamW.step`` with
    "... no attribute 'buffer'", naming no parameter. Should be a TypeError naming the parameter ('a') and
    saying a gradient must be a Tensor."""
    from netcl_lite import optim

    a = _param(None, np.full((3, 4), 2.0, np.float32))
    with pytest.raises(TypeError, match="a"):
        if call == "clip_grad_norm":
            optim.clip_grad_norm({"a": a}, 1.0)
        else:
            optim.AdamW({"a": a}).step()


# --- 10./11. rotary attention: saved tensors of another queue, a scale beyond float32 --------------------


@pytest.mark.parametrize("which", ["out", "lse"])
def test_rotary_attention_backward_refuses_saved_tensors_of_another_queue(which):
    """``rotary_attention_backward(g, q, k, v, out, lse, ...)`` hands only g, q, k and v to ``OpCall``: an ``out``
    or ``lse`` Tensor of another command queue (one context) is read by the backward kernel without waiting
    for that queue, where a g of another queue is refused. Should be the same ValueError saying "queue"."""
    import pyopencl as cl

    from netcl_lite import ops
    from netcl_lite.core import manager
    from netcl_lite.core.tensor import Tensor

    q = manager.default().queue
    other = cl.CommandQueue(q.context)
    x = np.random.default_rng(0).standard_normal((1, 4, 8)).astype(np.float32)

    def tensor(a, queue=q):
        return Tensor.from_host(queue, np.ascontiguousarray(a, np.float32))

    out, lse = ops.rotary_attention(tensor(x), tensor(x), tensor(x), 1, 1, return_stats=True)
    if which == "out":
        out = tensor(out.numpy(), other)
    else:
        lse = tensor(lse.numpy(), other)
    with pytest.raises(ValueError, match="queue"):
        ops.rotary_attention_backward(tensor(np.ones((1, 4, 8))), tensor(x), tensor(x), tensor(x), out, lse, 1, 1)


@pytest.mark.parametrize("op", ["rotary_attention", "rotary_attention_qkv"])
def test_rotary_attention_refuses_a_scale_beyond_float32(op):
    """``rotary_attention(x, x, x, 1, 1, scale=1e39)``: the scale is checked finite as a Python float, then cast
    to float32 (inf, with NumPy's "overflow encountered in cast" warning), and the call fails with
    NonFiniteError "rotary_attention produced inf or NaN from finite inputs ... rescale its inputs", which blames
    the inputs. Should be a ValueError naming ``scale`` (beyond float32's range), before anything runs."""
    from netcl_lite import ops

    x = np.random.default_rng(0).standard_normal((1, 4, 8)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"(?<!re)scale") as caught:
            if op == "rotary_attention":
                ops.rotary_attention(x, x, x, 1, 1, scale=1e39)
            else:
                ops.rotary_attention_qkv(np.concatenate([x, x, x], -1), (8, 8, 8), 1, 1, scale=1e39)
    assert "produced inf or NaN" not in str(caught.value), caught.value


# --- 12. norm eps that float32 cannot hold ----------------------------------------------------------------


@pytest.mark.parametrize("eps", [1e-50, 1e39])
@pytest.mark.parametrize("op", ["rms_norm", "layer_norm"])
def test_norm_eps_that_float32_cannot_hold_is_refused(op, eps):
    """``ops.rms_norm(np.zeros((2, 4)), np.ones(4), eps=1e-50)``: eps is checked positive as a Python float (its
    check says "it keeps a zero row finite"), then cast to float32, where it is 0: a zero row divides by 0 and
    the call fails with NonFiniteError "produced inf or NaN from finite inputs ... rescale its inputs". With
    ``eps=1e39`` (inf in float32) every output is 0 silently, where 1/sqrt(1 + 1e39) = 3.2e-20 is a float32.
    AdamW and LMConfig refuse such values by name; the ops should too: a ValueError naming ``eps``."""
    from netcl_lite import ops

    x = np.zeros((2, 4), np.float32) if eps < 1 else np.ones((2, 4), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="eps") as caught:
            if op == "rms_norm":
                ops.rms_norm(x, np.ones(4), eps=eps)
            else:
                ops.layer_norm(x, np.ones(4), np.zeros(4), eps=eps)
    assert "produced inf or NaN" not in str(caught.value), caught.value


# --- 13. a stored count entry that unpacks to far more than its size -------------------------------------


def test_a_small_stored_count_entry_does_not_unpack_to_hundreds_of_megabytes(ngram_cache):
    """``_read_counts`` reads an entry of at most MAX_STORED_BYTES (1 GiB), checks its digest (a SHA-256 of the
    body, which anyone can compute), then unpacks EVERY array of the archive before it checks the key: an entry
    of half a megabyte whose ``contexts`` are deflated zeros unpacks to 200 MB here; one of the 1 GiB allowed
    unpacks to about a terabyte, and the process is killed for memory. The key (the first array, a few bytes)
    should be checked before anything else is unpacked, and no array should unpack to more than the entry
    can honestly hold (an entry of 0.4 MB holds no 200 MB of counts)."""
    import io
    import tracemalloc

    from netcl_lite import ngram
    from netcl_lite.fingerprint import cache_root

    item = "not-this-key"                       # even an entry written for another key is unpacked whole
    arrays = dict(key=np.frombuffer(item.encode(), np.uint8), unigram=np.zeros(VOCAB),
                  contexts=np.zeros(25_000_000, np.uint64), runs=np.zeros(0, np.uint32),
                  tokens=np.zeros(0, np.int32), counts=np.zeros(0, np.uint32), last=np.zeros(0, np.int32))
    out = io.BytesIO()
    np.savez_compressed(out, **arrays)
    del arrays
    body = out.getvalue()
    assert len(body) < 1_000_000
    path = cache_root() / "ngram" / "entry"
    path.parent.mkdir(parents=True)
    path.write_bytes(ngram._STORED_DIGEST + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    tracemalloc.start()
    try:
        assert ngram._read_counts(path, "the-key-asked-for", VOCAB) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000, f"reading a {path.stat().st_size:,}-byte entry took {peak:,} bytes"


# --- 14. cross-entropy's ignore_index beyond int32 ----------------------------------------------------------


@pytest.mark.parametrize("call", ["cross_entropy", "cross_entropy_with_stats"])
def test_cross_entropy_ignore_index_beyond_int32_is_named(call):
    """``ops.cross_entropy(z, [1, 0], ignore_index=2**40)`` fails with NumPy's raw "OverflowError: Python integer
    1099511627776 out of bounds for int32" (the kernel's argument): ``integer("ignore_index", ...)`` checks the
    type only. Either the loss with nothing ignored (no target can equal it), or a ValueError naming
    ``ignore_index`` and int32's range."""
    from netcl_lite import ops

    z = np.log(np.array([[0.25, 0.75], [0.5, 0.5]], np.float32))
    want = float(ops.cross_entropy(z, np.array([1, 0])))
    fn = getattr(ops, call)
    try:
        got = fn(z, np.array([1, 0]), ignore_index=2**40)
    except ValueError as e:
        assert "ignore_index" in str(e), e
        return
    got = got[0] if isinstance(got, tuple) else got
    assert float(got) == pytest.approx(want)


# --- 15./16. sum_backward's g, sum_to of a NumPy array --------------------------------------------------


def _t(a, dtype=np.float32):
    from netcl_lite.core import manager
    from netcl_lite.core.tensor import Tensor
    return Tensor.from_host(manager.default().queue, np.ascontiguousarray(a, dtype), dtype=dtype)


@pytest.mark.parametrize("bad", ["short", "int32", "numpy"])
def test_sum_backward_checks_g(bad):
    """``ops.sum_backward(g, (3, 4), -1, False)`` checks nothing of ``g`` (the round-40 checks reached the other
    backward launchers, not this one): a g of ONE element where (3,) is due is read past its end (rows 2 and 3
    of the gradient come back 0, or whatever lies there); an int32 g of [1, 2, 3] is read as float bits (a
    gradient of zeros); a NumPy g fails with a raw AttributeError ('... has no attribute buffer'). Should be a
    TypeError / ValueError naming ``g``, as ``device_operand`` gives the other backwards."""
    from netcl_lite import ops

    g = {"short": lambda: _t(np.array([1.0])), "int32": lambda: _t(np.array([1, 2, 3]), np.int32),
         "numpy": lambda: np.array([1.0, 2.0, 3.0], np.float32)}[bad]()
    with pytest.raises((TypeError, ValueError), match=r"\bg\b"):
        out = ops.sum_backward(g, (3, 4), -1, False)
        out.numpy()


def test_sum_to_of_a_numpy_array_is_named():
    """``ops.sum_to(np.ones((3, 4)), (4,))`` fails with a raw AttributeError "'numpy.ndarray' object has no
    attribute 'buffer'". It should sum (the other ops take NumPy) or be a TypeError naming ``t``."""
    from netcl_lite import ops

    try:
        got = ops.sum_to(np.ones((3, 4), np.float32), (4,))
    except TypeError as e:
        assert "t" in str(e).split()[0:3] or "Tensor" in str(e), e
        return
    np.testing.assert_array_equal(np.asarray(got), np.full(4, 3.0, np.float32))


# --- 17. the elementwise, norm and softmax backwards check no g --------------------------------------------


_X = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)


def _backward(op: str, g):
    from netcl_lite import ops

    x = _t(_X)
    if op == "silu_backward":
        return ops.silu_backward(x, g)
    if op == "swiglu_backward":
        return ops.swiglu_backward(x, _t(_X), g)
    if op == "layer_norm_backward":
        return ops.layer_norm_backward(g, x, _t(np.ones(4)))
    if op == "rms_norm_backward":
        return ops.rms_norm_backward(g, x, _t(np.ones(4)))
    return ops.softmax_backward(_t(np.full((3, 4), 0.25)), g)


@pytest.mark.parametrize("bad", ["one element", "int32"])
@pytest.mark.parametrize("op", ["silu_backward", "swiglu_backward", "layer_norm_backward", "rms_norm_backward",
                                "softmax_backward"])
def test_backward_launchers_check_g_shape_and_dtype(op, bad):
    """Round 40 made cross_entropy/embedding/rotary-attention backwards check ``g``; these five still take any
    Tensor: a g of ONE element where x's (3, 4) is due is read past its end (the gradient's rows 2 and 3 come
    back 0, or whatever memory follows), and an int32 g of ones is read as float bits (a gradient of zeros),
    with no error. Should be a ValueError (shape) / TypeError (dtype) naming ``g``."""
    g = _t(np.ones(1)) if bad == "one element" else _t(np.ones((3, 4)), np.int32)
    with pytest.raises((TypeError, ValueError), match=r"\bg\b"):
        out = _backward(op, g)
        for o in out if isinstance(out, tuple) else (out,):
            if o is not None:
                o.numpy()


@pytest.mark.parametrize("op", ["silu_backward", "swiglu_backward", "layer_norm_backward", "rms_norm_backward",
                                "softmax_backward"])
def test_backward_launchers_given_numpy_name_the_operand(op):
    """Given a NumPy g, these backwards fail with a raw AttributeError "'numpy.ndarray' object has no attribute
    'buffer'" (round 40 fixed the same in cross_entropy/embedding/rotary-attention backwards). Should be a
    TypeError naming ``g`` (a backward's operands are Tensors)."""
    with pytest.raises(TypeError, match=r"\bg\b"):
        _backward(op, np.ones((3, 4), np.float32))


@pytest.mark.parametrize("name", ["pow", "Add", ""])
def test_binary_backward_refuses_an_unknown_op_name(name):
    """``ops.binary_backward(name, g, a, b, out)`` reads every name but "add", "sub" and "mul" as "div":
    ``binary_backward("pow", ...)`` (or "Add") returns the gradients of a division, silently. Should be a
    ValueError naming ``name`` and the four it knows."""
    from netcl_lite import ops

    ones = [_t(np.full((3, 4), 2.0)) for _ in range(4)]
    with pytest.raises(ValueError, match="name"):
        ops.binary_backward(name, *ones)


# --- 19. the norm backwards check no weight -------------------------------------------------------------


@pytest.mark.parametrize("bad", ["one element", "int32"])
@pytest.mark.parametrize("op", ["layer_norm_backward", "rms_norm_backward"])
def test_norm_backwards_check_the_weight(op, bad):
    """``ops.rms_norm_backward(g, x, weight)`` / ``layer_norm_backward`` with a ``weight`` of ONE element where
    x's last axis (4) is due read it past its end: dx comes back with values ~1e33, silently; an int32 weight
    of ones is read as float bits (dx all zeros). Should be a ValueError / TypeError naming ``weight``, as the
    forwards give."""
    from netcl_lite import ops

    weight = _t(np.ones(1)) if bad == "one element" else _t(np.ones(4), np.int32)
    with pytest.raises((TypeError, ValueError), match="weight"):
        out = getattr(ops, op)(_t(np.ones((3, 4))), _t(_X), weight)
        for o in out if isinstance(out, tuple) else (out,):
            if o is not None:
                o.numpy()


# --- 20. matmul_backward's acc=None -----------------------------------------------------------------------


def test_matmul_backward_acc_none_is_named_or_taken():
    """``ops.matmul_backward(g, a, b, acc=None)`` fails with a raw "TypeError: 'NoneType' object is not
    subscriptable": ``acc`` must be a pair. Either None should mean no accumulation (as (None, None) does), or
    a TypeError naming ``acc``."""
    from netcl_lite import ops

    g, a, b = _t(np.ones((3, 4))), _t(np.ones((3, 2))), _t(np.ones((2, 4)))
    try:
        da, db = ops.matmul_backward(g, a, b, acc=None)
    except TypeError as e:
        assert "acc" in str(e), e
        return
    np.testing.assert_array_equal(da.numpy(), np.full((3, 2), 4.0, np.float32))


@pytest.mark.parametrize("case", ["softmax p of one element", "softmax p int32", "silu x int32",
                                  "swiglu up of one element"])
def test_backward_launchers_check_their_other_operands(case):
    """Beyond ``g`` (see above), these backwards check none of their other operands either:
    ``softmax_backward(p, g)`` with a p of ONE element returns a (1,) gradient for a (3, 4) g; an int32 p or an
    int32 silu ``x`` is read as float bits; ``swiglu_backward(gate, up, g)`` reads an ``up`` of one element past
    its end. Should be a ValueError / TypeError naming the operand (``p``, ``x``, ``up``)."""
    from netcl_lite import ops

    g = _t(np.ones((3, 4)))
    name = {"softmax p of one element": "p", "softmax p int32": "p", "silu x int32": "x",
            "swiglu up of one element": "up"}[case]
    with pytest.raises((TypeError, ValueError), match=rf"\b{name}\b"):
        if case == "softmax p of one element":
            out = ops.softmax_backward(_t(np.ones(1)), g)
        elif case == "softmax p int32":
            out = ops.softmax_backward(_t(np.ones((3, 4)), np.int32), g)
        elif case == "silu x int32":
            out = ops.silu_backward(_t(np.ones((3, 4)), np.int32), g)
        else:
            out = ops.swiglu_backward(_t(np.ones((3, 4))), _t(np.ones(1)), g)
        for o in out if isinstance(out, tuple) else (out,):
            o.numpy()
