import numpy as np

import netcl_lite.autograd as ag
from netcl_lite.core.device import manager
from netcl_lite.nn.transformer import DecoderBlock

queue = manager.default().queue
x = np.random.default_rng(1).standard_normal((2, 8, 32)).astype(np.float32)

for norm in ("pre", "post"):
    block = DecoderBlock(
        queue,
        dim=32,
        n_heads=4,
        n_kv_heads=4,
        hidden=64,
        max_seq_len=8,
        norm=norm,
        seed=0,
    )
    with ag.Tape() as tape:
        h = block(ag.tensor(x, requires_grad=False))
        loss = ag.mean(ag.mul(h, h))
    tape.backward(loss)
    rms = np.sqrt((h.value.numpy() ** 2).mean(axis=-1)).mean()
    params = block.parameters().values()
    all_grads = all(np.abs(p.grad.numpy()).max() > 0 for p in params)
    print(f"{norm}-norm: output RMS per position {rms:.2f};", end=" ")
    print(f"every parameter has a gradient: {all_grads}")
    if norm == "post":
        assert abs(rms - 1) < 1e-3, "the post-norm output has RMS 1"
