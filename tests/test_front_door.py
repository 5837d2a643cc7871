"""One import reaches what the pages use; NumPy goes in wherever a Tensor or Node does; a
training loop's device memory stays flat."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import netcl_lite as nl
from netcl_lite.core.tensor import device_bytes_in_use


def test_import_netcl_lite_as_nl_gives_the_names_the_pages_use():
    for name in ("Tensor", "device", "Tape", "tensor", "ops", "nn", "text", "Node", "constant", "synchronize"):
        assert hasattr(nl, name), name
    dev = nl.device()
    assert dev is nl.device("auto") and dev.queue is nl.device().queue
    t = nl.Tensor.from_host(dev.queue, np.arange(4.0))
    node = nl.tensor(t)
    assert np.array_equal(t.numpy(), np.asarray(node)) and np.array_equal(node.numpy(), np.arange(4.0))
    assert nl.nn.RotaryAttention is nl.nn.transformer.RotaryAttention
    assert nl.text.BPETokenizer.__name__ == "BPETokenizer"


def test_nn_layers_take_numpy_arrays():
    q = nl.device().queue
    x = np.random.default_rng(0).standard_normal((2, 3, 16)).astype(np.float64)   # float64 is fine: it is converted
    block = nl.nn.DecoderBlock(q, 16, 4, 2, 32, max_seq_len=8)
    from_numpy = block(x).numpy()
    from_tensor = block(nl.Tensor.from_host(q, x)).numpy()
    np.testing.assert_array_equal(from_numpy, from_tensor)
    assert nl.nn.RMSNorm(q, 16)(x).shape == (2, 3, 16)
    assert nl.nn.FeedForward(q, 16, 24)(x).shape == (2, 3, 16)


def test_backward_shorthand_and_its_errors():
    with nl.Tape():
        w = nl.tensor(np.ones((2, 2)))
        loss = (w @ w).sum()
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 2), 4.0))
    with pytest.raises(ValueError, match="not recorded on a Tape"):
        nl.tensor(np.ones(2)).backward()


@pytest.mark.parametrize("read_back", [True, False])
@pytest.mark.slow
def test_device_memory_stays_flat_over_a_200_step_training_loop(read_back):
    """Forward, backward and an SGD update, 200 times. With a read-back per step (the usual
    loop) the live device memory after step 200 equals that after step 20, buffer for buffer;
    without one, what the queue keeps alive between syncs stays bounded."""
    q = nl.device().queue
    rng = np.random.default_rng(1)
    block = nl.nn.DecoderBlock(q, 32, 4, 2, 64, max_seq_len=16)
    params = block.parameters()
    x = nl.Tensor.from_host(q, rng.standard_normal((2, 16, 32)).astype(np.float32))
    target = nl.Tensor.from_host(q, rng.standard_normal((2, 16, 32)).astype(np.float32))
    live = {}
    for step in range(1, 201):
        with nl.Tape():
            loss = ((block(x) - target) * (block(x) - target)).mean()
        loss.backward()
        for p in params.values():
            p.value, p.grad = nl.ops.sub(p.value, nl.ops.scale(p.grad, 1e-3)), None
        if read_back:
            loss.numpy()
        live[step] = device_bytes_in_use(q.context)
    nl.synchronize()
    if read_back:
        assert live[200] == live[20], f"live (bytes, buffers) grew from {live[20]} to {live[200]}"
    else:
        assert max(b for b, _ in live.values()) <= 4 * max(b for b, _ in (live[s] for s in range(1, 21)))


def test_optim_train_and_the_language_model_are_reachable_from_a_fresh_import():
    """In a fresh interpreter (no other test has imported the submodules first)."""
    code = ("import netcl_lite as nl\n"
            "assert nl.optim.AdamW.__name__ == 'AdamW' and nl.train.TrainConfig.__name__ == 'TrainConfig'\n"
            "assert nl.nn.DecoderLM is nl.nn.lm.DecoderLM and nl.nn.LMConfig is nl.nn.config.LMConfig\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
