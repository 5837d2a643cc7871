"""100 training steps of a D = 128 decoder block that never read a value back. Prints the growth of
the process's resident memory over them and the most bytes the queued ops held alive at once
(Stream.peak_pending_bytes), both in MiB. usage: python run_ahead_probe.py [PENDING_LIMIT_BYTES]"""

import re
import resource
import sys

import numpy as np

import netcl_lite as nl
from netcl_lite import autograd as ag
from netcl_lite.core.stream import set_pending_limit, stream_of
from netcl_lite.optim import AdamW


def reset_peak_rss() -> None:
    """Restart the kernel's count of this process's peak resident memory from its current size
    (Linux: 5 written to /proc/self/clear_refs), so the peak read next is the loop's, not the
    kernel builds' before it; where that cannot be done the peak only shows growth beyond theirs."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_mib() -> float:
    """The peak resident memory of this process's own address space (VmHWM, on Linux). getrusage's
    peak there also counts the peak of the process that spawned this one when the two shared memory
    until exec (vfork, as Python's subprocess does): a test process larger than the loop's peak
    would hide the loop's growth. getrusage is the fallback where /proc is missing."""
    try:
        with open("/proc/self/status") as f:
            return int(re.search(r"^VmHWM:\s*(\d+) kB", f.read(), re.M).group(1)) / 1024
    except (OSError, AttributeError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (2**20 if sys.platform == "darwin" else 1024)      # bytes there, KiB elsewhere


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
stream = stream_of(q)
stream.peak_pending_bytes = 0
reset_peak_rss()
before = peak_rss_mib()
for _ in range(100):
    loss = step()
loss.numpy()
print(f"{peak_rss_mib() - before:.1f} {stream.peak_pending_bytes / 2**20:.2f}")
