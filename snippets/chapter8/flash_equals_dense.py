import numpy as np

from netcl_lite import ops, reference

rng = np.random.default_rng(0)
B, H, G, T, d = 1, 4, 2, 300, 64  # 300 is not a multiple of any tile size
TOLERANCE = 1e-5  # float32 rounding, far below a missed rescale's error in the retest
q = rng.standard_normal((B, H, T, d)).astype(np.float32)
# Grouped K/V: 2 groups serve the 4 query heads.
k = rng.standard_normal((B, G, T, d)).astype(np.float32)
v = rng.standard_normal((B, G, T, d)).astype(np.float32)

exact = reference.attention(q, k, v, causal=True)  # float64 on the host


def report(name, out):
    err = float(np.abs(out - exact).max())
    print(f"{name:20s} max |error| vs float64: {err:.1e}")
    assert err < TOLERANCE, (name, err)


# Dense stores the 300 x 300 weights; flash streams keys in tiles.
report("dense", ops.attention(q, k, v, causal=True))
for block in (1, 7, 64, 128, 512):  # keys per tile; 512 > T
    out = ops.flash_attention(q, k, v, causal=True, block_size=block)
    report(f"flash, {block}-key tiles", out)

# The threshold in float32's own unit: its rounding step at the largest output.
step = np.finfo(np.float32).eps * np.abs(exact).max()
print(f"{TOLERANCE:.0e} is {TOLERANCE / step:.0f} float32 rounding steps"
      " at the largest |output|")
