"""AdamW against its float64 definition and against torch.optim.AdamW; clipping; the schedule.

The update runs in float32 on the device. Over S steps each step rounds the weight a
few times (|p|·u each) and the Adam ratio m̂/(√v̂ + ε) to a few tens of u (m carries
about u/(1 − β1) relative error, v about u/(1 − β2) over the steps taken), so we allow
``S · 32 · u · (max|p| + lr · max|ratio|)`` in the weights after S steps: ~1e-4 for the
sizes below, while a wrong bias correction or a coupled decay is off by ~1e-2 or more.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from netcl_lite import autograd as ag
from netcl_lite.core.tensor import Tensor
from netcl_lite.optim import AdamW, adamw_reference, clip_grad_norm, cosine_schedule, global_norm_reference, linear_schedule
from netcl_lite.testing import EPS32, assert_close

SHAPES = [(1,), (7,), (64,), (257,), (13, 29), (3, 5, 70)]   # ragged: none a multiple of the work-group


def _params(rng, queue):
    return {f"p{i}": ag.tensor(rng.standard_normal(s).astype(np.float32), queue=queue) for i, s in enumerate(SHAPES)}


def _set_grads(params, grads, queue):
    for name, p in params.items():
        p.grad = Tensor.from_host(queue, grads[name])


def test_adamw_matches_its_float64_definition_over_50_steps_with_decay(queue):
    rng = np.random.default_rng(0)
    params = _params(rng, queue)
    names = list(params)
    decayed, plain = names[::2], names[1::2]
    betas, eps = (0.9, 0.95), 1e-8
    opt = AdamW([{"params": {n: params[n] for n in decayed}, "weight_decay": 0.1},
                 {"params": {n: params[n] for n in plain}, "weight_decay": 0.0}], lr=1.0, betas=betas, eps=eps)
    ref = {n: (p.numpy().astype(np.float64), np.zeros(p.shape), np.zeros(p.shape)) for n, p in params.items()}
    worst_ratio, steps = 0.0, 50
    for t in range(1, steps + 1):
        lr = cosine_schedule(t - 1, max_lr=3e-2, warmup_steps=5, total_steps=steps, min_lr=3e-3)
        opt.lr = lr
        grads = {n: (rng.standard_normal(p.shape) * 10.0 ** rng.uniform(-3, 1)).astype(np.float32)
                 for n, p in params.items()}
        _set_grads(params, grads, queue)
        opt.step()
        for n in names:
            p, m, v = ref[n]
            wd = 0.1 if n in decayed else 0.0
            ref[n] = adamw_reference(p, grads[n], m, v, step=t, lr=lr, betas=betas, eps=eps, weight_decay=wd)
            m_hat, v_hat = ref[n][1] / (1 - betas[0] ** t), ref[n][2] / (1 - betas[1] ** t)
            worst_ratio = max(worst_ratio, float(np.max(np.abs(m_hat / (np.sqrt(v_hat) + eps)))))
    state = opt.state_dict()
    assert state["step"] == steps
    for n in names:
        p, m, v = ref[n]
        tol = steps * 32 * EPS32 * (np.abs(p).max() + 3e-2 * worst_ratio)
        assert_close(params[n].numpy(), p, rtol=0, atol=tol, what=f"{n} weights")
        assert_close(state["exp_avg"][n], m, rtol=steps * 32 * EPS32, atol=1e-30, what=f"{n} first moment")
        assert_close(state["exp_avg_sq"][n], v, rtol=steps * 32 * EPS32, atol=1e-30, what=f"{n} second moment")


def test_adamw_matches_torch_optim_adamw(queue):
    rng = np.random.default_rng(1)
    params = _params(rng, queue)
    tparams = {n: torch.nn.Parameter(torch.from_numpy(p.numpy().copy())) for n, p in params.items()}
    opt = AdamW(params, lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)
    topt = torch.optim.AdamW(list(tparams.values()), lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)
    steps = 20
    for _ in range(steps):
        grads = {n: rng.standard_normal(p.shape).astype(np.float32) for n, p in params.items()}
        _set_grads(params, grads, queue)
        for n, tp in tparams.items():
            tp.grad = torch.from_numpy(grads[n])
        opt.step()
        topt.step()
    for n, tp in tparams.items():
        expected = tp.detach().numpy()
        tol = steps * 32 * EPS32 * (np.abs(expected).max() + 1e-2 * 10)
        assert_close(params[n].numpy(), expected, rtol=0, atol=tol, what=f"{n} vs torch")


def test_a_parameter_without_gradient_is_left_alone_and_zero_grad_drops_gradients(queue):
    a, b = ag.tensor(np.ones(5, np.float32), queue=queue), ag.tensor(np.ones(5, np.float32), queue=queue)
    opt = AdamW({"a": a, "b": b}, lr=0.1, weight_decay=0.5)
    a.grad = Tensor.from_host(queue, np.ones(5, np.float32))
    opt.step()
    assert np.array_equal(b.numpy(), np.ones(5, np.float32)), "no gradient: no decay and no step, as in torch"
    assert not np.array_equal(a.numpy(), np.ones(5, np.float32))
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_an_update_that_overflows_is_reported_with_the_parameter_name(queue):
    """A finite gradient of 1e22 (times 1 - β2, squared) goes past float32's range in v: the weight itself stays
    finite (its step is m / sqrt(inf) = 0) but would never move again. The step's own kernel
    reports it, naming the parameter, at the next read-back; a sane gradient goes through."""
    from netcl_lite.core.stream import NonFiniteError
    params = {"ok": ag.tensor(np.ones(5, np.float32), queue=queue),
              "big": ag.tensor(np.ones(300, np.float32), queue=queue)}
    opt = AdamW(params, lr=1e-3)
    _set_grads(params, {"ok": np.full(5, 0.5, np.float32), "big": np.full(300, 1e22, np.float32)}, queue)
    opt.step()
    with pytest.raises(NonFiniteError, match=r"AdamW\.step \(big\) produced inf or NaN from finite inputs"):
        params["big"].numpy()
    assert np.all(np.isinf(opt.exp_avg_sq["big"].numpy()))      # the overflow the report was about
    np.testing.assert_allclose(params["ok"].numpy(), 1 - 1e-3 * (1 + 0.01), rtol=1e-6)


def test_state_dict_round_trip_continues_bit_identically(queue):
    rng = np.random.default_rng(2)
    grads = [{f"p{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(SHAPES)} for _ in range(10)]
    start = _params(np.random.default_rng(3), queue)
    first = {n: ag.tensor(p.numpy(), queue=queue) for n, p in start.items()}
    opt = AdamW(first, lr=1e-2, weight_decay=0.1)
    for t in range(10):
        _set_grads(first, grads[t], queue)
        opt.step()
        if t == 4:
            snapshot = ({n: p.numpy() for n, p in first.items()}, opt.state_dict())
    second = {n: ag.tensor(w, queue=queue) for n, w in snapshot[0].items()}
    resumed = AdamW(second, lr=1e-2, weight_decay=0.1)
    resumed.load_state_dict(snapshot[1])
    for t in range(5, 10):
        _set_grads(second, grads[t], queue)
        resumed.step()
    for n in first:
        assert first[n].numpy().tobytes() == second[n].numpy().tobytes(), n


@pytest.mark.parametrize("seed", range(4))
def test_global_norm_kernel_matches_float64_on_ragged_shapes(seed, queue):
    rng = np.random.default_rng(seed)
    shapes = [tuple(rng.integers(1, 300, size=rng.integers(1, 3))) for _ in range(rng.integers(1, 6))]
    grads = [(rng.standard_normal(s) * 10.0 ** rng.uniform(-2, 2)).astype(np.float32) for s in shapes]
    params = {str(i): ag.tensor(np.zeros(s, np.float32), queue=queue) for i, s in enumerate(shapes)}
    for p, g in zip(params.values(), grads):
        p.grad = Tensor.from_host(queue, g)
    expected = global_norm_reference(grads)
    norm = clip_grad_norm(params, max_norm=expected / 3)
    n_terms = 256 + sum(-(-g.size // 256) for g in grads)   # a chunk's sum, then the partials' sum
    assert abs(norm - expected) <= 2 * n_terms * EPS32 * expected
    coef = (expected / 3) / (expected + 1e-6)
    for p, g in zip(params.values(), grads):
        assert_close(p.grad.numpy(), g * coef, rtol=4 * n_terms * EPS32, atol=1e-30, what="clipped gradient")


def test_clipping_leaves_small_gradients_exactly_unchanged(queue):
    g = np.array([3.0, 4.0], np.float32)
    p = ag.tensor(np.zeros(2, np.float32), queue=queue)
    p.grad = Tensor.from_host(queue, g)
    assert clip_grad_norm({"p": p}, 10.0) == 5.0
    assert np.array_equal(p.grad.numpy(), g)
    assert math.isclose(clip_grad_norm({"p": p}, 1.0), 5.0, rel_tol=1e-6)
    assert_close(p.grad.numpy(), g / 5.0, rtol=4 * EPS32, atol=0, what="clipped to norm 1")


def test_schedule_warms_up_linearly_then_follows_a_cosine_to_min_lr():
    lrs = [cosine_schedule(s, max_lr=1.0, warmup_steps=4, total_steps=14, min_lr=0.1) for s in range(16)]
    assert lrs[:4] == [0.25, 0.5, 0.75, 1.0]
    assert lrs[4] == 1.0 and math.isclose(lrs[9], 0.55) and lrs[14] == lrs[15] == 0.1
    assert all(a >= b for a, b in zip(lrs[3:], lrs[4:])), "non-increasing after warmup"


def test_linear_schedule_shares_the_warmup_then_falls_in_a_straight_line_to_min_lr():
    kw = dict(max_lr=1.0, warmup_steps=4, total_steps=14, min_lr=0.1)
    lrs = [linear_schedule(s, **kw) for s in range(16)]
    assert lrs[:4] == [cosine_schedule(s, **kw) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert lrs[4] == 1.0 and math.isclose(lrs[9], 0.55) and lrs[14] == lrs[15] == 0.1
    steps = np.diff(lrs[4:15])
    assert np.allclose(steps, -0.09), "equal steps down after warmup"
    assert all(linear_schedule(s, **kw) >= cosine_schedule(s, **kw) for s in range(9, 14)), "more rate late"
    with pytest.raises(ValueError, match="warmup_steps"):
        linear_schedule(0, max_lr=1.0, warmup_steps=5, total_steps=3)
    assert linear_schedule(3, max_lr=1.0, warmup_steps=3, total_steps=3) == 0.0   # warmup is all there is


def test_decay_steps_hold_the_peak_then_decay_over_the_last_steps():
    kw = dict(max_lr=1.0, warmup_steps=2, total_steps=12, min_lr=0.0, decay_steps=4)
    lin = [linear_schedule(s, **kw) for s in range(14)]
    assert lin == [0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.75, 0.5, 0.25, 0.0, 0.0]
    cos = [cosine_schedule(s, **kw) for s in range(14)]
    assert cos[:9] == lin[:9] and math.isclose(cos[10], 0.5) and cos[12] == 0.0
    whole = dict(kw, decay_steps=10)   # every step after warmup: the same as None
    assert [linear_schedule(s, **whole) for s in range(14)] == [linear_schedule(s, **dict(kw, decay_steps=None)) for s in range(14)]
    for bad in (0, 11, 2.5, True):
        with pytest.raises(ValueError, match=r"decay_steps must be None or an int in \[1, total_steps - warmup_steps = 10\]"):
            linear_schedule(5, **dict(kw, decay_steps=bad))
    with pytest.raises(ValueError, match="min_lr"):
        linear_schedule(5, max_lr=1.0, warmup_steps=1, total_steps=3, min_lr=2.0)


@pytest.mark.parametrize("kwargs, match", [
    ({"lr": -1.0}, "lr"), ({"betas": (1.0, 0.9)}, r"betas\[0\]"), ({"betas": (0.9, -0.1)}, r"betas\[1\]"),
    ({"eps": 0.0}, "eps"), ({"weight_decay": -0.1}, "weight_decay"), ({"betas": 0.9}, "betas"),
])
def test_bad_hyperparameters_are_named(kwargs, match, queue):
    with pytest.raises((ValueError, TypeError), match=match):
        AdamW({"w": ag.tensor(np.ones(2, np.float32), queue=queue)}, **kwargs)


def test_bad_parameter_lists_are_refused(queue):
    w = ag.tensor(np.ones(2, np.float32), queue=queue)
    with pytest.raises(ValueError, match="empty"):
        AdamW({})
    with pytest.raises(TypeError, match="requires_grad"):
        AdamW({"c": ag.constant(np.ones(2, np.float32), queue=queue)})
    with pytest.raises(ValueError, match="more than one group"):
        AdamW([{"params": {"w": w}}, {"params": {"w2": w}}])
    with pytest.raises(ValueError, match="no parameter has a gradient"):
        clip_grad_norm({"w": w}, 1.0)
    with pytest.raises(ValueError, match="max_norm"):
        clip_grad_norm({"w": w}, 0.0)
    with pytest.raises(ValueError, match="warmup_steps"):
        cosine_schedule(0, max_lr=1.0, warmup_steps=5, total_steps=3)
    opt = AdamW({"w": w})
    with pytest.raises(ValueError, match="exp_avg"):
        opt.load_state_dict({"step": 1, "exp_avg": {}, "exp_avg_sq": {}})


def test_many_tensors_in_few_launches_match_the_float64_update_and_name_the_tensor_at_fault(queue):
    """40 tensors (three launches of up to 16, ragged sizes): every one updated as its own formula
    says, and an overflow in the third launch named by its tensor."""
    from netcl_lite.core.stream import NonFiniteError, profile_kernels

    rng = np.random.default_rng(5)
    shapes = [(int(rng.integers(1, 200)),) for _ in range(40)]
    params = {f"t{i}": ag.tensor(rng.standard_normal(s).astype(np.float32), queue=queue) for i, s in enumerate(shapes)}
    names = list(params)
    opt = AdamW([{"params": {n: params[n] for n in names[:25]}, "weight_decay": 0.1},
                 {"params": {n: params[n] for n in names[25:]}, "weight_decay": 0.0}], lr=1e-2)
    before = {n: p.numpy() for n, p in params.items()}
    grads = {n: rng.standard_normal(p.shape).astype(np.float32) for n, p in params.items()}
    _set_grads(params, grads, queue)
    with profile_kernels(queue) as prof:
        opt.step()
    launches = sum(n for kernel, _, n, _ in prof.table() if kernel == "adamw.cl:adamw_step")
    assert launches == 3, prof.table()
    for i, n in enumerate(names):
        want, _, _ = adamw_reference(before[n], grads[n], 0.0, 0.0, step=1, lr=1e-2, betas=(0.9, 0.999), eps=1e-8,
                                     weight_decay=0.1 if i < 25 else 0.0)
        assert_close(params[n].numpy(), want, rtol=0, atol=64 * EPS32, what=n)
    grads["t37"] = np.full(shapes[37], 1e22, np.float32)
    _set_grads(params, grads, queue)
    opt.step()
    with pytest.raises(NonFiniteError, match=r"AdamW\.step \(t37\) produced inf or NaN from finite inputs"):
        params["t0"].numpy()


def test_a_norm_left_on_the_device_clips_as_the_step_reads_the_gradients(queue):
    """clip_grad_norm(wait=False) leaves the gradients as they are and AdamW.step(norm=...) reads
    each times the clip coefficient: the weights and moments have the bits of clipping in place
    (the waiting form) and stepping, whether the norm clips or not."""
    rng = np.random.default_rng(7)
    for max_norm in (0.5, 1e6):                       # clips, and leaves the gradients as they are
        deferred = _params(rng, queue)
        waited = {n: ag.tensor(p.numpy(), queue=queue) for n, p in deferred.items()}
        grads = {n: rng.standard_normal(p.shape).astype(np.float32) for n, p in deferred.items()}
        opts = [AdamW(ps, lr=1e-2, weight_decay=0.1) for ps in (deferred, waited)]
        for step in range(3):
            _set_grads(deferred, grads, queue)
            _set_grads(waited, grads, queue)
            clip = clip_grad_norm(deferred, max_norm, wait=False)
            for n, p in deferred.items():
                assert np.array_equal(p.grad.numpy(), grads[n]), "wait=False leaves the gradients unscaled"
            opts[0].step(norm=clip)
            clip_grad_norm(waited, max_norm)
            opts[1].step()
            for n in grads:
                assert np.array_equal(deferred[n].numpy(), waited[n].numpy()), (max_norm, step, n)
                assert np.array_equal(opts[0].exp_avg_sq[n].numpy(), opts[1].exp_avg_sq[n].numpy()), (max_norm, n)


def test_a_norm_left_on_the_device_gates_the_step_and_is_read_later(queue):
    from netcl_lite.core.tensor import read

    rng = np.random.default_rng(6)
    params = _params(rng, queue)
    opt = AdamW(params, lr=1e-2)
    grads = {n: rng.standard_normal(p.shape).astype(np.float32) for n, p in params.items()}
    _set_grads(params, grads, queue)
    clip = clip_grad_norm(params, 1.0, wait=False)
    assert isinstance(clip, Tensor) and clip.shape == (2,)
    before = {n: p.numpy() for n, p in params.items()}
    opt.step(norm=clip)
    (host,) = read(clip)
    expected = global_norm_reference(grads.values())
    n_terms = 256 + sum(-(-g.size // 256) for g in grads.values())
    assert abs(host[0] - expected) <= 2 * n_terms * EPS32 * expected
    assert all(not np.array_equal(p.numpy(), before[n]) for n, p in params.items()), "a finite norm lets the step run"
    # an infinite norm from finite gradients (their squares overflow): the step is skipped on the device
    _set_grads(params, {n: np.full(p.shape, 3e38, np.float32) for n, p in params.items()}, queue)
    before = {n: p.numpy() for n, p in params.items()}
    moments = {n: opt.exp_avg[n].numpy() for n in params}
    clip = clip_grad_norm(params, 1.0, wait=False)
    opt.step(norm=clip)
    assert not np.isfinite(read(clip)[0][0])
    for n, p in params.items():
        assert np.array_equal(p.numpy(), before[n]) and np.array_equal(opt.exp_avg[n].numpy(), moments[n]), n
    _set_grads(params, {n: np.full(p.shape, 3e38, np.float32) for n, p in params.items()}, queue)
    with pytest.raises(ValueError, match="norm is not finite"):
        clip_grad_norm(params, 1.0)
    with pytest.raises(TypeError, match="clip_grad_norm"):
        opt.step(norm=1.0)
    with pytest.raises(TypeError, match="wait must be a bool"):
        clip_grad_norm(params, 1.0, wait=None)
