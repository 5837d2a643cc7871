import math

# Reads and writes of main memory (in numbers) for one head, after Dao et al. (2022).
d = 64                      # head width
M_fast = 48 * 1024          # fast memory in float32 numbers: 192 KiB, one GPU SM's SRAM


def standard(T):
    """Q, K read; S written, read; A written, read with V; O written."""
    return 4 * T * d + 4 * T * T


def tiled(T):
    """Dao et al.'s Algorithm 1: per block of B_c key rows, all of Q and O pass."""
    b_c = math.ceil(M_fast / (4 * d))       # key rows per block, beside Q, O tiles
    b_r = min(b_c, d)                       # query rows per block
    blocks = math.ceil(T / b_c)
    per_block = 2 * b_c * d + T * (3 * d + 4)   # K_j, V_j; Q_i, O_i in; O_i out; l, m
    assert b_r <= b_c
    return min(blocks, T) * per_block


print(f"d = {d}, M = {M_fast:,} numbers; millions of numbers read or written")
print(f"{'T':>6} {'standard':>9} {'/(Td+T^2)':>10} {'tiled':>8} {'/(T^2d^2/M)':>12}"
      f" {'ratio':>6}")
for T in (512, 2048, 8192, 32768):
    s, t = standard(T), tiled(T)
    print(f"{T:>6} {s / 1e6:>9.2f} {s / (T * d + T * T):>10.2f} {t / 1e6:>8.2f}"
          f" {t / (T * T * d * d / M_fast):>12.2f} {s / t:>6.1f}")
print(f"M / (3 d^2) = {M_fast / (3 * d * d):.1f}")
