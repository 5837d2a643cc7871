"""100 training steps of a D = 128 decoder block that never read a value back; prints the growth of
the process's peak RSS over them, in MiB. usage: python run_ahead_probe.py [PENDING_LIMIT_BYTES]"""

import resource
import sys

import numpy as np

import netcl_lite as nl
from netcl_lite import autograd as ag
from netcl_lite.core.stream import set_pending_limit
from netcl_lite.optim import AdamW

if len(sys.argv) > 1:
    set_pending_limit(int(sys.argv[1]))
q = nl.device().queue
rng = np.random.default_rng(0)
block = nl.nn.DecoderBlock(q, 128, 4, 4, 384, max_seq_len=64)
opt = AdamW(block.parameters(), lr=1e-3)
x = nl.Tensor.from_host(q, rng.standard_normal((8, 64, 128)).astype(np.float32))


def step():
    opt.zero_grad()
    with nl.Tape():
        y = block(x)
        loss = ag.mean(ag.mul(y, y))
    loss.backward()
    opt.step()
    return loss


for _ in range(3):                      # kernels built, buffer pools filled
    step().numpy()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in range(100):
    loss = step()
loss.numpy()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"{(after - before) / 1024:.1f}")
