# Arithmetic intensity: FLOPs per byte moved to or from main memory (float32, 4 bytes).
n = 1024                                  # GEMM n x n times n x n
B, H, T, d = 1, 8, 2048, 64               # attention, as benchmarked in section 5

kernels = {
    # read A and B, write C; the packed panels stay in cache
    "GEMM": (2 * n**3, 4 * 3 * n * n),
    # Q, K, V in and O out, plus per head S written and read, A written and read
    "dense attention": (4 * B * H * T * T * d,
                        4 * (4 * B * H * T * d + 4 * B * H * T * T)),
    # Q, K, V in and O out once: a head's K and V stay in cache
    "flash attention": (4 * B * H * T * T * d, 4 * 4 * B * H * T * d),
}
for name, (flops, nbytes) in kernels.items():
    print(f"{name:<16} {flops:.3e} FLOPs / {nbytes / 2**20:7.1f} MiB"
          f" = {flops / nbytes:6.1f} FLOP/byte")
print(f"GEMM n/6 = {n / 6:.1f}; dense ~ d/4 = {d / 4:.1f}; flash T/4 = {T / 4:.1f}")
dense, flash = (
    f / b for f, b in (kernels["dense attention"], kernels["flash attention"])
)
print(f"flash / dense: {flash / dense:.1f} times the intensity")
