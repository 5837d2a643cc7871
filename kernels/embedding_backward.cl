// embedding_backward.cl: the gradient of a table lookup, where repeated ids must add up.
//
// Kernels:
//   embedding_backward_sorted  one work-item per (distinct id, column): the host sorts the positions
//                              by id (a stable argsort), so each distinct id owns a contiguous run of
//                              positions and sums their gradient rows into its one table row. No
//                              atomics, no races, and the sum order is fixed (deterministic). Rows no id
//                              looked up keep the zeros the host filled in.
#include "common.h"

// --8<-- [start:embedding_backward_sorted]
__kernel void embedding_backward_sorted(
    __global const float *g,          // (n_positions, dim): gradient of the looked-up rows
    __global const int *order,        // (n_positions,): positions sorted by id
    __global const int *starts,       // (n_unique + 1,): run u is order[starts[u] .. starts[u+1])
    __global const int *rows,         // (n_unique,): the table row of run u
    __global float *dtable, const int n_unique, const int dim)
{
    const int c = get_global_id(0), u = get_global_id(1);
    if (c >= dim || u >= n_unique) return;
    float acc = 0.0f;
    for (int p = starts[u]; p < starts[u + 1]; ++p) acc += g[(long)order[p] * dim + c];
    dtable[(long)rows[u] * dim + c] = acc;
}
// --8<-- [end:embedding_backward_sorted]
