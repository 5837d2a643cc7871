// embedding.cl: token ids to rows of an embedding table.
//
// Kernels:
//   embedding_gather  out[r, :] = table[ids[r], :], one work-item per (column, id). An id
//                     outside [0, V) is never read: its row becomes 0 and the kernel
//                     raises a flag the host turns into a ValueError naming the ids
//                     (the host checks NumPy ids before upload; the flag covers ids
//                     that arrive already on the device).
#include "common.h"

// --8<-- [start:embedding_gather]
__kernel void embedding_gather(__global const float *table, __global const int *ids, __global float *out,
                               __global int *bad, const int n_ids, const int vocab, const int dim)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (c >= dim || r >= n_ids) return;
    const int id = ids[r];
    const int inside = id >= 0 && id < vocab;
    out[(long)r * dim + c] = inside ? table[(long)(inside ? id : 0) * dim + c] : 0.0f;
    if (!inside) bad[0] = 1;   // every writer stores the same value: no atomic needed
}
// --8<-- [end:embedding_gather]
