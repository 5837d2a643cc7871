// nonfinite.cl: device-side non-finite checks that report to a queue's status word instead of the host.
//
// Kernels:
//   check_finite  each work-item scans `chunk` floats and, if one is inf or NaN, lowers
//                 status[0] to the op's sequence number (atomic_min: the first op at fault
//                 wins). The test is on the exponent bits (all ones = inf or NaN), which
//                 PoCL compiles inline, where the isfinite() builtin would be a call.
//
// Ops also report through the same word from their own kernels (report() in common.h).
#include "common.h"

__kernel void check_finite(__global const float *x, const int n, const int chunk,
                           __global int *status, const int seq)
{
    const long start = (long)get_global_id(0) * chunk;
    if (start >= n) return;
    const long end = min((long)n, start + chunk);
    int bad = 0;
    for (long i = start; i < end; ++i) bad |= nonfinite_bits(x[i]);
    if (bad) atomic_min(status, seq);
}
