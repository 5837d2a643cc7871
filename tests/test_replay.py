"""A training step recorded once and replayed (``train.RecordedStep``, ``core.replay.Replay``): the same
bits as the eager step, refusal of what cannot be replayed, its batch checked, failures still named."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from netcl_lite import autograd as ag
from netcl_lite.core.replay import Replay
from netcl_lite.core.stream import BadInputError, NonFiniteError, stream_of
from netcl_lite.core.tensor import Tensor, read
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.optim import AdamW, clip_grad_norm
from netcl_lite.train import RecordedStep, WindowLoader, parameter_groups

TINY = LMConfig(vocab_size=40, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=16, initializer_range=0.1)
IDS = np.random.default_rng(5).integers(0, 40, 4000)


def _setup(queue):
    model = DecoderLM(TINY, queue=queue, seed=1)
    opt = AdamW(parameter_groups(model, 0.1), lr=3e-3, betas=(0.9, 0.95), eps=1e-8)
    return model, opt, WindowLoader(IDS, 6, 12, seed=2)


def test_a_replayed_step_has_the_eager_steps_bits(queue):
    """Five steps recorded once and replayed give the losses, norms and weights of five eager steps
    bit for bit (the replay runs the eager step's kernels, arguments and order)."""
    eager_model, eager_opt, eager_loader = _setup(queue)
    model, opt, loader = _setup(queue)
    step = RecordedStep(model, 0.5, 6, 12)
    params = eager_model.parameters()
    for i in range(5):
        x, y = eager_loader.next_batch()
        with ag.Tape() as tape:
            loss = eager_model.loss(x, y)
        tape.backward(loss)
        clip = clip_grad_norm(params, 0.5, wait=False)
        eager_opt.step(norm=clip)
        eager_opt.zero_grad()
        expected = read(loss.value, clip)
        loss, clip = step(*loader.next_batch())
        opt.step(norm=clip)
        opt.zero_grad()
        got = read(loss, clip)
        assert step.replay is not None and step.refused is None, "the step was recorded and is replayed"
        assert np.array_equal(expected[0], got[0]) and np.array_equal(expected[1], got[1]), f"step {i}"
    same = [name for name, p in params.items() if np.array_equal(p.numpy(), model.parameters()[name].numpy())]
    assert same == list(params), "the replayed step gives the eager step's weights bit for bit"


def test_a_replaced_parameter_buffer_is_recorded_again(queue):
    model, opt, loader = _setup(queue)
    step = RecordedStep(model, 1.0, 6, 12)
    step(*loader.next_batch())
    first = step.replay
    node = model.parameters()["layers.0.attn.wq"]
    node.value = Tensor.from_host(queue, node.numpy())      # same values, a new buffer
    step(*loader.next_batch())
    assert step.replay is not None and step.replay is not first, "a new buffer makes a new recording"


def test_a_read_back_refuses_the_recording(queue):
    stream = stream_of(queue)
    a = Tensor.from_host(queue, np.ones((4, 4), np.float32))
    with stream.record() as recording:
        out = ag.matmul(a, a).value
        out.numpy()                                           # a read-back: the host needs the value now
    assert recording.refused and "read-back" in recording.refused
    with pytest.raises(ValueError, match="cannot be replayed: a read-back"):
        Replay(queue, recording)
    with pytest.raises(TypeError, match="recording must be a Recording"):
        Replay(queue, [])


def test_the_recorded_step_checks_its_batch(queue):
    model, _, _ = _setup(queue)
    step = RecordedStep(model, 1.0, 6, 12)
    ids = np.zeros((6, 12), np.int64)
    with pytest.raises(ValueError, match=r"x must be integer ids of shape \(6, 12\)"):
        step(ids[:, :5], ids)
    with pytest.raises(ValueError, match="y must be integer ids"):
        step(ids, ids.astype(np.float32))
    with pytest.raises(ValueError, match=r"y must lie in \[0, 40\)"):
        step(ids, ids + 40)
    with pytest.raises(ValueError, match=r"x must lie in \[0, 40\)"):
        step(ids - 1, ids)


def test_the_loss_takes_device_ids_with_the_same_bits(queue):
    model = DecoderLM(TINY, queue=queue, seed=4)
    x, y = WindowLoader(IDS, 3, 10, seed=0).next_batch()
    host = float(model.loss(x, y).value.numpy())
    device = model.loss(Tensor.from_host(queue, x, dtype=np.int32), Tensor.from_host(queue, y, dtype=np.int32))
    assert float(device.value.numpy()) == host
    with pytest.raises(TypeError, match="both as int32 Tensors or both as NumPy"):
        model.loss(Tensor.from_host(queue, x, dtype=np.int32), y)
    with pytest.raises(ValueError, match="targets must be an int32 Tensor of the shape of ids"):
        model.loss(Tensor.from_host(queue, x, dtype=np.int32), Tensor.from_host(queue, y[:, :4], dtype=np.int32))
    bad = y.copy()
    bad[1, 2] = 99
    with pytest.raises(BadInputError, match=r"targets must be class ids in \[0, 40\)"):
        model.loss(Tensor.from_host(queue, x, dtype=np.int32), Tensor.from_host(queue, bad, dtype=np.int32)).value.numpy()


def test_a_replayed_step_still_names_the_op_that_overflowed(queue):
    model, opt, loader = _setup(queue)
    step = RecordedStep(model, 1.0, 6, 12)
    for _ in range(2):
        loss, clip = step(*loader.next_batch())
        opt.step(norm=clip)
        opt.zero_grad()
        read(loss, clip)
    weight = model.parameters()["layers.1.ffn.w2"]
    values = weight.numpy()
    values[0, 0] = np.inf
    cl.enqueue_copy(queue, weight.value.buffer, values)      # in place: the replay reads this buffer
    loss, clip = step(*loader.next_batch())
    assert step.replay is not None
    with pytest.raises(NonFiniteError, match="w2|matmul|linear"):
        read(loss, clip)


def test_the_replay_takes_over_the_recorded_runs_temporaries(queue):
    """The replay's buffers are the recorded run's released temporaries, taken out of the pool, not
    copies beside them: after the first replayed step, the pool holds none of the replay's buffers,
    and the memory in use plus the pool grew by the replay's buffers and little more."""
    from netcl_lite.core.tensor import _pool, device_bytes_in_use, pooled_bytes

    model, _, loader = _setup(queue)
    step = RecordedStep(model, 1.0, 6, 12)
    before = device_bytes_in_use(queue.context)[0] + pooled_bytes(queue.context)
    for _ in range(4):
        loss, clip = step(*loader.next_batch())
        read(loss, clip)
    held = step.replay.nbytes
    after = device_bytes_in_use(queue.context)[0] + pooled_bytes(queue.context)
    pooled = {b.int_ptr for buffers in _pool.values() for b in buffers}
    assert held > 0 and not pooled & {m.buffer.int_ptr for m in step.replay._own.values()}, "no buffer of the replay is in the pool"
    # The step's temporaries once (as the replay's), not twice (in the pool and as its copies); the
    # rest of the growth is what the first step left alive (its outputs, the ops' kept tables).
    assert after - before < 1.5 * held, f"the replay's {held} bytes came on top of the pool's: {before} -> {after}"
