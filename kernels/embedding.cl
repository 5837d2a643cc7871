// embedding.cl: token ids to rows of an embedding table, and the gradient back to the table.
//
// Kernels:
//   embedding_gather    out[r, :] = table[ids[r], :], one work-item per (column, id). An id
//                       outside [0, V) is never read: its row becomes 0 and the kernel reports
//                       the op to the queue's status word (bad input), which the host raises as
//                       a ValueError at the next sync. NumPy ids are checked on the host before
//                       upload; this covers ids that are already on the device.
//   embedding_backward  dtable[v, c] = sum of g[p, c] over the positions p with ids[p] = v, one
//                       work-item per column walking the positions in order: repeated ids add
//                       up with no atomics and in a fixed order (deterministic), and nothing
//                       goes to the host. The host zero-fills dtable first.
#include "common.h"

// --8<-- [start:embedding_gather]
__kernel void embedding_gather(__global const float *table, __global const int *ids, __global float *out,
                               const int n_ids, const int vocab, const int dim,
                               __global int *status, const int seq)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (c >= dim || r >= n_ids) return;
    const int id = ids[r];
    const int inside = id >= 0 && id < vocab;
    out[(long)r * dim + c] = inside ? table[(long)(inside ? id : 0) * dim + c] : 0.0f;
    report(status, STATUS_BAD_INPUT, seq, !inside);
}
// --8<-- [end:embedding_gather]

// --8<-- [start:embedding_backward]
__kernel void embedding_backward(__global const float *g, __global const int *ids, __global float *dtable,
                                 const int n_ids, const int vocab, const int dim, __global int *status, const int seq)
{
    const int c = get_global_id(0);
    if (c >= dim) return;
    int bad = 0;
    for (int p = 0; p < n_ids; ++p) {
        const int id = ids[p];
        if (id >= 0 && id < vocab) {
            const float v = dtable[(long)id * dim + c] + g[(long)p * dim + c];
            dtable[(long)id * dim + c] = v;
            bad |= nonfinite_bits(v);         // every entry written, checked as it is written
        }
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:embedding_backward]
