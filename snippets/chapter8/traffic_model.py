import math

# Slow-memory traffic of one attention head: T positions, head width d, no mask.
# Fast memory: one A100 streaming multiprocessor's 192 KiB of on-chip SRAM, the
# figure Dao et al. (2022, section 2.1) use. It holds M = SRAM_BYTES / b numbers
# of b bytes each, so it holds twice as many fp16 numbers as fp32 ones.
SRAM_BYTES = 192 * 1024
BYTES = {"fp32": 4, "fp16": 2}
# An A100's ridge: dense fp16 tensor-core peak over HBM bandwidth (40 GB SXM
# part; NVIDIA, "NVIDIA A100 Tensor Core GPU Architecture", whitepaper, 2020).
A100_FP16_FLOPS = 312e12
A100_HBM_BYTES_PER_S = 1555e9
METHODS = ("standard", "algorithm 1", "flashattention-2", "K, V in cache")
TILED = METHODS[1:3]
LENGTH, WIDTH = 8192, 128                     # the first table's head
LENGTHS = (64, 256, 1024, 4096, 16384, 65536)   # the second table's rows
WIDTHS = (64, 128)                            # the last table's head widths


def flops(T, d):
    """Q K^T and A V: T * T * d multiply-adds each, 2 FLOPs per multiply-add."""
    return 4 * T * T * d


def dense_passes(T, d):
    """Standard attention pass by pass: (name, FLOPs, reads, writes), one head.
    Only the products' multiply-adds count as FLOPs, not the softmax's exp."""
    return [("scores", 2 * T * T * d, 2 * T * d, T * T),          # S = Q K^T
            ("softmax", 0, T * T, T * T),                          # A = softmax(S)
            ("weighted values", 2 * T * T * d, T * T + T * d, T * d)]  # O = A V


def block_sizes(method, d, M):
    """(B_r, B_c): query rows and key rows per block, fast memory of M numbers."""
    rows = math.ceil(M / (4 * d))
    if method == "algorithm 1":       # Dao et al. (2022): K_j, V_j stay
        return min(rows, d), rows
    if method == "flashattention-2":  # the same rule, roles swapped: Q_i, O_i stay
        return rows, min(rows, d)
    raise ValueError(f"method must be one of {TILED}, got {method!r}")


def traffic(method, T, d, M=None):
    """(reads, writes) of slow memory, in numbers, for one head.

    M, the fast memory in numbers, sets the tiled orders' block sizes."""
    if method in TILED and M is None:
        raise ValueError(f"{method} needs M, the fast memory in numbers")
    if method == "standard":          # S and A written and read back
        passes = dense_passes(T, d)
        reads, writes = sum(p[2] for p in passes), sum(p[3] for p in passes)
    elif method == "algorithm 1":     # outer loop over K/V blocks
        passes = math.ceil(T / block_sizes(method, d, M)[1])
        # K, V once; Q every pass; O, l, m every pass but the first
        reads = 2 * T * d + passes * T * d + (passes - 1) * T * (d + 2)
        writes = passes * T * (d + 2)                # O, l, m every pass
    elif method == "flashattention-2":  # outer loop over query blocks
        passes = math.ceil(T / block_sizes(method, d, M)[0])
        reads = T * d + passes * 2 * T * d           # Q once; K, V every pass
        writes = T * d + T                           # O, log-sum-exp once
    elif method == "K, V in cache":   # a head's K and V stay in fast memory
        reads, writes = 3 * T * d, T * d             # Q, K, V once; O once
    else:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return reads, writes


def intensity(method, T, d, precision):
    """FLOPs per byte of slow-memory traffic."""
    b = BYTES[precision]
    return flops(T, d) / (b * sum(traffic(method, T, d, SRAM_BYTES // b)))


def limit(method, d, precision):
    """What intensity(method, T, d, precision) tends to as T grows (None: none)."""
    b = BYTES[precision]
    M = SRAM_BYTES // b
    if method == "standard":          # T d / (b (T + d))
        return d / b
    if method == "algorithm 1":       # 4 T^2 d / (b (T / B_c) T (3d + 4))
        return 4 * d * block_sizes(method, d, M)[1] / (b * (3 * d + 4))
    if method == "flashattention-2":  # 4 T^2 d / (b (T / B_r) 2 T d)
        return 2 * block_sizes(method, d, M)[0] / b
    return None                       # K, V in cache: T / b


if __name__ == "__main__":
    T, d = LENGTH, WIDTH
    print(f"one head, T = {T:,}, d = {d}, no mask, {SRAM_BYTES // 1024} KiB of fast"
          " memory;\nreads and writes in millions of numbers")
    print(f"{'method':<17} {'':>4} {'M':>6} {'B_r x B_c':>9} {'reads':>7}"
          f" {'writes':>7} {'MiB':>7} {'FLOP/B':>7}")
    for method in METHODS:
        for precision, b in BYTES.items():
            M = SRAM_BYTES // b
            reads, writes = traffic(method, T, d, M)
            tiled = method in TILED
            blocks = " x ".join(map(str, block_sizes(method, d, M))) if tiled else "-"
            print(f"{method if precision == 'fp32' else '':<17} {precision:>4}"
                  f" {f'{M:,}' if tiled else '-':>6} {blocks:>9}"
                  f" {reads / 1e6:>7.1f} {writes / 1e6:>7.1f}"
                  f" {(reads + writes) * b / 2**20:>7.1f}"
                  f" {intensity(method, T, d, precision):>7.1f}")
    held = 2 * T * d
    print(f"K, V in cache holds 2Td = {held:,} numbers: "
          + ", ".join(f"{held * b / 2**20:.0f} MiB {p}" for p, b in BYTES.items()))

    print(f"\nFLOPs per byte, d = {d}, fp32 / fp16")
    print(f"{'T':>7} " + " ".join(f"{m:>17}" for m in METHODS))
    for t in LENGTHS:
        cells = [f"{intensity(m, t, d, 'fp32'):>7.1f} /"
                 f" {intensity(m, t, d, 'fp16'):>7.1f}" for m in METHODS]
        print(f"{t:>7} " + " ".join(cells))
    ends = [(limit(m, d, "fp32"), limit(m, d, "fp16")) for m in METHODS]
    print(f"{'limit':>7} " + " ".join(
        f"{a:>7.1f} / {b:>7.1f}" if a else f"{'T / b, none':>17}" for a, b in ends))
    ridge = A100_FP16_FLOPS / A100_HBM_BYTES_PER_S
    print(f"A100 ridge, fp16 tensor cores over HBM: {ridge:.1f} FLOP/byte")

    for precision in BYTES:
        dense = [intensity("standard", t, d, precision) for t in LENGTHS]
        top = limit("standard", d, precision)
        rising = all(a < b for a, b in zip(dense, dense[1:]))
        assert rising, "dense intensity rises with T"
        assert max(dense) < top, "dense intensity stays below d / b"
        assert dense[0] < top / 2, "dense intensity is low at short T"
        for m in TILED:
            last = intensity(m, LENGTHS[-1], d, precision)
            assert abs(last / limit(m, d, precision) - 1) < 0.01, (
                "the tiled orders level off at their limits")
        assert all(intensity("K, V in cache", t, d, precision) == t / BYTES[precision]
                   for t in LENGTHS), "K, V in cache is T / b"
        b, M = BYTES[precision], SRAM_BYTES // BYTES[precision]
        for w in WIDTHS:
            alg1 = limit("algorithm 1", w, precision) * 3 * b * w / M
            assert abs(alg1 - 1) < 0.05, "algorithm 1 levels off near M / (3 b d)"
            fa2 = limit("flashattention-2", w, precision) * 2 * b * w / M
            assert abs(fa2 - 1) < 0.05, "flashattention-2 levels off near M / (2 b d)"
    fa2, alg1, dense = (limit(m, d, "fp16") for m in reversed(METHODS[:3]))
    assert fa2 > alg1 > dense, "at fp16 both tiled orders level off above dense"
    assert all(limit("standard", w, "fp16") < ridge for w in WIDTHS), (
        "dense stays left of the A100 ridge")  # at every T: it stays below d / b

    long = LENGTHS[-1]
    print(f"\nstandard / tiled traffic at T = {long:,}")
    print(f"{'d':>4} {'':>4} " + " ".join(f"{m:>17}" for m in METHODS[1:]))
    for width in WIDTHS:
        for precision, b in BYTES.items():
            moved = {m: sum(traffic(m, long, width, SRAM_BYTES // b)) for m in METHODS}
            print(f"{width:>4} {precision:>4} " + " ".join(
                f"{moved['standard'] / moved[m]:>17.1f}" for m in METHODS[1:]))
