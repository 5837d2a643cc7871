from netcl_lite.budget import score_matrix_bytes

d, fp16 = 128, 2
print(
    f"{'T':>6} {'FLOPs':>14} {'scores (fp16)':>14} {'Q,K,V,O (fp16)':>15}"
)
for T in (512, 2048, 8192, 32768):
    flops = 4 * T * T * d  # QK^T and AV: 2 multiply-adds per (i, j, c)
    scores = score_matrix_bytes(T, bytes_per_element=fp16)
    qkvo = 4 * T * d * fp16
    print(
        f"{T:>6} {flops:>14.3e} {scores / 2**20:>10.1f} MiB {qkvo / 2**20:>11.1f} MiB"
    )
