"""Round 40a: hostile inputs to the ops this session changed; each test fails on the code it was written
against.

1. ``ops.cross_entropy`` / ``cross_entropy_with_stats`` of logits with no rows ((0, V), targets (0,)) return the
   loss of the PREVIOUS call, silently: the all-ignored case is refused ("the mean over no rows is
   undefined"), but the no-rows case skips that check and the finishing kernel reads sums nobody wrote.
2. ``ops.cross_entropy_backward(g, saved)`` takes a ``g`` that is not the one-element float32 Tensor its
   docstring asks for: an empty ``g`` reads memory past its buffer (a gradient several times the right one),
   an int32 ``g`` of 1 is read as a float's bits (a gradient of zeros).
3. ``ops.embedding_backward(g, ids, vocab)`` checks nothing: a ``g`` with fewer rows than ``ids`` has ids is
   read past its end, ids outside ``[0, vocab)`` are dropped silently, a float32 ``ids`` Tensor is read as
   int bits.
4. ``ops.rotary_attention_qkv_backward`` checks ``qkv`` and ``widths`` but not ``g``, ``out`` or ``lse``: a
   ``g`` or ``lse`` of the wrong shape is read past its end and a gradient of garbage (values ~1e6) is returned;
   an int32 ``g`` is read as float bits.
5. ``optim.clip_grad_norm`` and ``AdamW.step`` read an int32 gradient as float32 bits (the norm of twelve 2s is 0.0).
6. The backward launchers given NumPy arrays fail with a raw AttributeError ('... has no attribute buffer').
7. ``ops.split_columns`` sums NumPy int64/uint64 widths in their own type: widths that wrap around to x's width
   pass, and NumPy's bare "Maximum allowed dimension exceeded" follows.
8. The ops read a NumPy masked array's values under its mask (``OpCall.float_input``, ``host_ids``), where the
   rest of the library refuses one by name.
9. ``capstone.spread_windows`` / ``sliding_windows`` take masked, float and str ids, and ``spread_windows`` any
   ``n`` (a raw MemoryError).
10. ``ops.cross_entropy`` forms a row's loss as ``(max + log sum) - z[target]``: with large logits log sum rounds
    away (five equal logits of 1e8 give the loss 0.0, not log 5).
11. An op given Tensors on two queues of one context runs on the first's queue without waiting for the other:
    it reads a Tensor the other queue has not finished writing.
12. ``ops.sum`` of an empty array and ``ops.sum_to`` over an empty batch return whatever their output's memory held
    (30.0, -4e34, ...), not 0.
13. ``ops.swiglu_linear`` (and ``autograd.swiglu_linear``) of x with no rows: a raw ZeroDivisionError.
"""

from __future__ import annotations

import numpy as np
import pytest


def _tensor(a, dtype=np.float32):
    from netcl_lite.core import manager
    from netcl_lite.core.tensor import Tensor
    return Tensor.from_host(manager.default().queue, np.ascontiguousarray(a, dtype), dtype=dtype)


# --- 1. cross-entropy over no rows ----------------------------------------------------------------------


@pytest.mark.parametrize("call", ["cross_entropy", "cross_entropy_with_stats"])
def test_cross_entropy_over_no_rows_is_refused_not_the_last_calls_loss(call):
    """``cross_entropy(np.zeros((0, 5)), np.zeros(0, int))`` returned the loss of whatever cross-entropy ran
    before it (1.70... after a call on random logits), with no error: the sums the finishing kernel divides
    were never written. The mean over no rows is undefined, as the all-ignored case already says: it should
    be a ValueError naming the targets/rows, as ``targets=[-100] * 4`` is."""
    from netcl_lite import ops

    rng = np.random.default_rng(0)
    first = float(ops.cross_entropy(rng.standard_normal((3, 5)), np.array([0, 1, 2])))
    fn = getattr(ops, call)
    try:
        got = fn(np.zeros((0, 5), np.float32), np.zeros(0, np.int64))
    except ValueError as e:
        assert "rows" in str(e) or "target" in str(e), e
        return
    loss = float(got[0] if isinstance(got, tuple) else got)
    pytest.fail(f"{call} over no rows returned {loss} (the previous call's loss was {first}); "
                "expected a ValueError: the mean over no rows is undefined")


# --- 2. cross_entropy_backward's g -----------------------------------------------------------------------


@pytest.mark.parametrize("g", ["empty", "int32"])
def test_cross_entropy_backward_checks_its_loss_gradient(g):
    """``g`` must be the loss's gradient, one float32 element. An empty Tensor is read past its end (the
    gradient came back about 4x the right one), an int32 Tensor holding 1 is read as the float with the bits
    of 1 (a denormal: a gradient of zeros). Either should be a ValueError/TypeError naming ``g``, or (for an
    int) the value read as the number it is; never a wrong gradient."""
    from netcl_lite import ops

    rng = np.random.default_rng(1)
    z = rng.standard_normal((4, 5)).astype(np.float32)
    y = np.array([0, 1, 2, 3])
    _, saved = ops.cross_entropy_with_stats(_tensor(z), y)
    right = ops.cross_entropy_backward(_tensor(np.float32(1.0)), saved).numpy()
    bad = _tensor(np.zeros(0)) if g == "empty" else _tensor(np.int32(1), np.int32)
    from netcl_lite.core.stream import NonFiniteError

    try:
        got = ops.cross_entropy_backward(bad, saved).numpy()
    except (ValueError, TypeError) as e:
        # a NonFiniteError is garbage read past g's end that happened to be inf or NaN, not a check
        assert not isinstance(e, NonFiniteError) and "g" in str(e), repr(e)
        return
    assert g != "empty", f"an empty g (no value at all) gave a gradient {got.ravel()[:5]} without an error"
    assert np.allclose(got, right, atol=1e-6), f"a {g} g gave the gradient {got.ravel()[:5]}, right {right.ravel()[:5]}"


# --- 3. embedding_backward checks nothing ------------------------------------------------------------------


@pytest.mark.parametrize("case", ["g short", "ids out of range", "float ids"])
def test_embedding_backward_checks_g_ids_and_vocab(case):
    """``embedding_backward(g, ids, vocab)`` launched whatever it was given: ``g`` with 2 rows for 4 ids read
    rows past g's end; ids 7 and -1 with vocab 3 were dropped (rows of zeros, no error), as was id 2 with
    vocab 2; a float32 ``ids`` Tensor was read as int bits (1.0 is id 1065353216, dropped). The forward
    ``embedding`` refuses every one of these by name; its backward should too (ValueError/TypeError naming
    ``g``, ``ids`` or ``vocab``), not return a wrong table gradient."""
    from netcl_lite import ops

    if case == "g short":
        args = (_tensor(np.ones((2, 3))), _tensor(np.array([0, 1, 2, 1]), np.int32), 3)
    elif case == "ids out of range":
        args = (_tensor(np.ones((4, 3))), _tensor(np.array([0, 7, -1, 1]), np.int32), 3)
    else:
        args = (_tensor(np.ones((4, 3))), _tensor(np.array([0, 1, 2, 1])), 3)
    from netcl_lite.core.stream import NonFiniteError

    try:
        got = ops.embedding_backward(*args).numpy()
    except (ValueError, TypeError) as e:
        # a NonFiniteError is garbage read past g's end that happened to be inf, not a check
        assert not isinstance(e, NonFiniteError) and any(w in str(e) for w in ("g", "ids", "vocab")), repr(e)
        return
    pytest.fail(f"embedding_backward with {case} returned {got.tolist()} without an error")


# --- 4. rotary_attention_qkv_backward's g, out and lse ---------------------------------------------------------


@pytest.mark.parametrize("wrong", ["g", "lse", "int32 g"])
def test_rotary_attention_qkv_backward_checks_g_and_lse_shapes(wrong):
    """With ``qkv`` (1, 4, 16) for 2 heads over 1 K/V head of width 4, ``g`` must be (1, 4, 8) and ``lse``
    (1, 2, 4). A ``g`` of shape (1, 1, 1) or an ``lse`` of shape (1,) was read past its end: the dk/dv
    columns came back as values like -1e6, with no error. An int32 ``g`` of the right shape was read as float
    bits (a gradient of zeros). Should be a ValueError/TypeError naming ``g`` / ``lse``."""
    from netcl_lite import ops

    rng = np.random.default_rng(2)
    widths, heads, kv = (8, 4, 4), 2, 1
    qkv = _tensor(rng.standard_normal((1, 4, 16)))
    out, lse = ops.rotary_attention_qkv(qkv, widths, heads, kv, return_stats=True)
    g = _tensor(rng.standard_normal((1, 4, 8)))
    if wrong == "g":
        g = _tensor(np.ones((1, 1, 1)))
    elif wrong == "int32 g":
        g = _tensor(np.ones((1, 4, 8)), np.int32)
    else:
        lse = _tensor(np.ones(1))
    from netcl_lite.core.stream import NonFiniteError

    try:
        got = ops.rotary_attention_qkv_backward(g, qkv, widths, out, lse, heads, kv).numpy()
    except (ValueError, TypeError) as e:
        # a NonFiniteError is garbage read past the end that happened to be inf or NaN, not a check
        assert not isinstance(e, NonFiniteError) and wrong.split()[-1] in str(e), repr(e)
        return
    pytest.fail(f"a {wrong} of the wrong shape gave a gradient (max |value| {np.abs(got).max()}) without an error")


# --- 5. an int32 gradient in clip_grad_norm and AdamW.step -----------------------------------------------------


def _int_grad_param():
    from netcl_lite import autograd as ag
    w = ag.Node(_tensor(np.ones((3, 4))), requires_grad=True)
    w.grad = _tensor(np.full((3, 4), 2), np.int32)
    return w


def test_clip_grad_norm_of_an_int32_gradient_is_not_zero():
    """A parameter whose ``grad`` is an int32 Tensor of 2s (shape right, dtype not): ``clip_grad_norm`` read its
    bits as float32 (2 is a denormal of 2.8e-45) and returned the norm 0.0, with no error; with ``wait=False``
    the coefficient it hands AdamW.step is computed from that. Should be a TypeError naming the gradient's
    dtype (``dtype_is`` gives one for every op), or the norm of the numbers, sqrt(12 * 4) = 6.93."""
    from netcl_lite import optim

    w = _int_grad_param()
    try:
        norm = optim.clip_grad_norm({"w": w}, 1.0)
    except TypeError as e:
        assert "int32" in str(e) or "dtype" in str(e), e
        return
    assert abs(norm - np.sqrt(48.0)) < 1e-3, f"the norm of twelve 2s came back {norm}"


def test_adamw_step_does_not_read_an_int32_gradient_as_float_bits():
    """``AdamW.step`` checks a gradient's shape against its parameter's but not its dtype: an int32 gradient of 2s
    is read as float32 bits (denormals), so the step moves the weights by what a gradient of ~0 gives, silently.
    Should be a TypeError naming the parameter and the dtype, before anything is written."""
    from netcl_lite import optim

    w = _int_grad_param()
    opt = optim.AdamW({"w": w}, lr=0.1, weight_decay=0.0)
    with pytest.raises(TypeError, match="w"):
        opt.step()


# --- 6. the backward launchers given NumPy arrays -----------------------------------------------------------------


@pytest.mark.parametrize("op", ["rotary_attention_qkv_backward", "embedding_backward", "cross_entropy_backward"])
def test_backward_launchers_given_numpy_name_the_parameter(op):
    """Every op in ``netcl_lite.ops`` takes NumPy arrays or Tensors (the package docstring), and the forward ops
    do. These backward launchers take ``.buffer`` of their operands as they are: NumPy arrays give a raw
    "AttributeError: 'numpy.ndarray' object has no attribute 'buffer'" from deep inside, naming no parameter.
    Should be a TypeError naming the parameter (``g``, ``qkv``, ``ids``) and saying a Tensor is needed, or the
    arrays uploaded as the forward ops upload theirs."""
    from netcl_lite import ops

    rng = np.random.default_rng(3)
    if op == "rotary_attention_qkv_backward":
        qkv = rng.standard_normal((1, 4, 16)).astype(np.float32)
        out, lse = ops.rotary_attention_qkv(qkv, (8, 4, 4), 2, 1, return_stats=True)
        call = lambda: ops.rotary_attention_qkv_backward(np.ones((1, 4, 8), np.float32), qkv, (8, 4, 4), out, lse, 2, 1)
    elif op == "embedding_backward":
        call = lambda: ops.embedding_backward(np.ones((4, 3), np.float32), np.array([0, 1, 2, 1]), 3)
    else:
        _, saved = ops.cross_entropy_with_stats(rng.standard_normal((4, 5)), np.array([0, 1, 2, 3]))
        call = lambda: ops.cross_entropy_backward(np.float32(1.0), saved)
    try:
        call()
    except AttributeError as e:
        pytest.fail(f"{op} with NumPy operands: raw AttributeError {e}")
    except TypeError as e:
        assert any(w in str(e) for w in ("g", "qkv", "ids", "Tensor")), e


# --- 7. split_columns' widths whose sum wraps around ---------------------------------------------------------------


@pytest.mark.parametrize("widths", [[np.int64(2**63 - 1), np.int64(2**63 - 1), np.int64(5)],
                                    [np.uint64(2**64 - 1), np.uint64(4)]], ids=["int64", "uint64"])
def test_split_columns_widths_that_wrap_around_are_refused_by_name(widths):
    """``split_columns`` checks ``sum(widths) == x.shape[-1]`` in the widths' own NumPy type: int64 widths
    (2**63 - 1, 2**63 - 1, 5) sum, with a RuntimeWarning, to 3, the width of x (2, 3), and pass; the op then
    asks NumPy for a (2, 2**63 - 1) output and fails with NumPy's bare "ValueError: Maximum allowed dimension
    exceeded", naming no parameter. Each width is more than x has: a ValueError naming ``widths`` (the sum
    taken in Python ints) is right."""
    from netcl_lite import ops

    with pytest.raises(ValueError, match="widths"):
        ops.split_columns(np.ones((2, 3), np.float32), widths)


# --- 8. the ops take a masked array's values under its mask -------------------------------------------------------


def _masked_call(op):
    from netcl_lite import ops

    m = np.ma.array([[1.0, 2.0], [3.0, 4.0]], mask=[[True, False], [False, False]])
    return {
        "matmul": lambda: ops.matmul(m, np.eye(2)),
        "concat_columns": lambda: ops.concat_columns([m, m]),
        "split_columns": lambda: ops.split_columns(m, (1, 1)),
        "cross_entropy targets": lambda: ops.cross_entropy(np.ones((2, 2)), np.ma.array([0, 1], mask=[True, False])),
        "embedding ids": lambda: ops.embedding(np.eye(3), np.ma.array([0, 1], mask=[True, False])),
        "rotary_attention_qkv": lambda: ops.rotary_attention_qkv(
            np.ma.array(np.ones((1, 2, 6)), mask=np.eye(2, 6, dtype=bool)[None]), (2, 2, 2), 1, 1),
    }[op]


@pytest.mark.parametrize("op", ["matmul", "concat_columns", "split_columns", "cross_entropy targets",
                                "embedding ids", "rotary_attention_qkv"])
def test_ops_refuse_a_masked_array_by_name(op):
    """Everywhere else the library refuses a NumPy masked array by name (``checks.not_masked``: "asarray drops the
    mask: the values under it were ... taken as if they were there") -- the compressor, the host models, the
    capstone helpers, ``checks.token_ids``. The ops' ``OpCall.float_input`` / ``host_ids`` read operands with
    ``np.asarray`` and so compute with the masked-out values: ``embedding(np.eye(3), np.ma.array([0, 1],
    mask=[True, False]))`` gathers row 0 for the masked id; ``cross_entropy`` scores a masked-out target. Should
    be the same TypeError naming the operand ("... must not be a masked array")."""
    with pytest.raises(TypeError, match="masked"):
        _masked_call(op)()


# --- 9. capstone's window helpers take any ids and any n --------------------------------------------------------------


@pytest.mark.parametrize("fn", ["spread_windows", "sliding_windows"])
@pytest.mark.parametrize("ids", ["masked", "float", "str"])
def test_capstone_window_helpers_want_plain_integer_ids(fn, ids):
    """``spread_windows`` / ``sliding_windows`` check ``ids``' shape and length, not what it holds: a masked
    array is cut into windows of the values under its mask (the rest of capstone -- ``token_losses``,
    ``ngram_bits_per_byte`` -- refuses one by name since round 39a), and float or str arrays come back as
    windows of floats or letters, to fail later inside the model, naming nothing. Should be a TypeError naming
    ``ids`` (token ids are integers)."""
    from netcl_lite import capstone

    value = {"masked": np.ma.array(np.arange(12), mask=[True] * 3 + [False] * 9),
             "float": np.linspace(0.0, 1.0, 12),
             "str": np.array(list("abcdefghijkl"))}[ids]
    call = (lambda: capstone.spread_windows(value, 2, 4)) if fn == "spread_windows" else (
        lambda: capstone.sliding_windows(value, 4, 2))
    with pytest.raises(TypeError, match="ids"):
        call()


def test_spread_windows_refuses_more_windows_than_ids_hold_by_name():
    """``spread_windows(np.arange(12), n=10**13, block_size=4)``: 12 ids hold 8 distinct windows, and n is taken
    as it is: NumPy's raw "MemoryError: Unable to allocate ..." from inside (10**9 asks for 30 GiB) (n = 10**6 quietly returns a
    million copies of the same 8 windows). Should be a ValueError naming ``n`` (at most ids.size - block_size
    windows), before anything is allocated."""
    from netcl_lite import capstone

    with pytest.raises(ValueError, match=r"\bn\b"):
        capstone.spread_windows(np.arange(12), 10**13, 4)


# --- 10. cross-entropy of large logits ----------------------------------------------------------------------------------


@pytest.mark.parametrize("c", [1e6, 1e8, -1e8, 3e38], ids=["1e6", "1e8", "-1e8", "3e38"])
def test_cross_entropy_of_large_equal_logits_is_log_v(c):
    """Five equal logits give the loss log 5 = 1.609 whatever their value (the gradient, -0.4 / 0.1, comes back
    right). ``kernels/cross_entropy.cl`` forms each row's loss as ``(max + log sum) - z[target]``: the sum
    ``max + log sum`` rounds log 5 away in float32 once |max| is large, so logits of 1e6 give 1.625 and logits of
    1e8, -1e8 or 3e38 give 0.0 -- a wrong finite loss, no error. ``log sum - (z[target] - max)`` keeps it
    (z[target] - max is exact here); the float64 reference gives 1.6094."""
    from netcl_lite import ops

    z = np.full((2, 5), c, np.float32)
    loss = float(ops.cross_entropy(z, np.array([0, 1])))
    assert abs(loss - np.log(5.0)) < 1e-5, f"logits all {c}: loss {loss}, expected log 5 = {np.log(5.0):.6f}"


# --- 11. Tensors on two queues of one context ------------------------------------------------------------------------


def test_an_op_waits_for_a_tensor_another_queue_of_its_context_still_writes():
    """``OpCall`` accepts Tensors on different queues when they share a context ("tensors live on different OpenCL
    contexts" is refused, other queues are not), runs on the first Tensor's queue, and enqueues its kernels
    there with no wait on the other queue: ``concat_columns([small_on_A, big_on_B])`` right after a chain of
    matmuls enqueued on queue B copies ``big`` before B has written it -- 9 of 10 tries gave columns that differ
    from ``big.numpy()``, with no error. Should wait for B (an event or a marker), or refuse Tensors of another
    queue with a ValueError as it refuses another context's."""
    import pyopencl as cl

    from netcl_lite import ops
    from netcl_lite.core import manager
    from netcl_lite.core.tensor import Tensor

    qa = manager.default().queue
    qb = cl.CommandQueue(qa.context, qa.device)
    n = 512
    a = (np.random.default_rng(4).standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    ta = Tensor.from_host(qb, a)
    ta.numpy()
    wrong = 0
    for _ in range(10):
        big = ta
        for _ in range(6):
            big = ops.matmul(big, ta)                   # on queue B, not waited for
        small = Tensor.from_host(qa, np.ones((n, 1), np.float32))
        try:
            out = ops.concat_columns([small, big]).numpy()
        except ValueError as e:
            assert "queue" in str(e), e
            return
        wrong += not np.array_equal(out[:, 1:], big.numpy())
    assert wrong == 0, f"{wrong} of 10 joins read a Tensor that queue B had not finished writing"


# --- 12. the sum of no elements -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0,), (0, 3)])
def test_the_sum_of_an_empty_array_is_zero_not_what_memory_held(shape):
    """``ops.sum(np.zeros((0,)))`` returned whatever the result's memory held: 30.0 right after a sum of ten 3s,
    -4.02e+34 or 3e-44 on other calls. (``mean`` of an empty array is refused as undefined; ``sum(..., axis=-1)``
    of (3, 0) gives zeros.) The sum of no elements is 0.0, as NumPy says. ``reduce.sum_columns`` with 0 rows
    launches nothing that writes the output -- likely the same cause as the stale cross-entropy over no rows."""
    from netcl_lite import ops

    for _ in range(3):
        ops.sum(np.full((10,), 3.0, np.float32))
        got = float(ops.sum(np.zeros(shape, np.float32)))
        assert got == 0.0, f"sum of an empty {shape} array: {got}"


def test_sum_to_over_an_empty_batch_is_zero_not_what_memory_held():
    """``ops.sum_to(t, (4,))`` of a (0, 4) Tensor -- the gradient of a (4,) operand broadcast over an empty batch --
    returned uninitialized memory ([1.1e+16, 4.6e-41, ...]). (Through autograd, ``sum(add(x (0, 4), b (4,)))``
    gave the loss 1.47e+21.) Summed over no rows, each column is 0.0."""
    from netcl_lite import ops

    for _ in range(3):
        ops.sum(np.full((10,), 3.0, np.float32))
        got = ops.sum_to(_tensor(np.zeros((0, 4))), (4,)).numpy()
        assert np.array_equal(got, np.zeros(4, np.float32)), f"sum_to of a (0, 4) Tensor: {got}"


# --- 13. swiglu_linear of no rows ------------------------------------------------------------------------------------


@pytest.mark.parametrize("through", ["ops", "autograd"])
def test_swiglu_linear_of_no_rows_is_an_empty_result(through):
    """``ops.swiglu_linear(x (0, 4), w1 (4, 6), w3 (4, 6))`` -- a batch with no rows, which ``matmul``, ``linear``,
    the norms and ``rotary_attention_projected`` all take (empty results, zero weight gradients) -- fails with a
    raw "ZeroDivisionError: integer division or modulo by zero" from ``_swiglu_plan`` (``-(-pm // tiles)`` with
    no tiles), naming nothing; ``autograd.swiglu_linear`` (the model's MLP) inherits it. A (0, 6) result (and
    its gate and up) is right, as K = 0 and N = 0 already give."""
    import netcl_lite as nl
    from netcl_lite import autograd as ag
    from netcl_lite import ops

    x, w1, w3 = np.zeros((0, 4), np.float32), np.ones((4, 6), np.float32), np.ones((4, 6), np.float32)
    if through == "ops":
        got = ops.swiglu_linear(x, w1, w3)
        outs = got if isinstance(got, tuple) else (got,)
        assert all(o.shape == (0, 6) for o in outs), [o.shape for o in outs]
    else:
        with nl.Tape():
            out = ag.swiglu_linear(ag.tensor(x), ag.tensor(w1), ag.tensor(w3))
        assert out.shape == (0, 6)
