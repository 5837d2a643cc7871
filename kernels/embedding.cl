// embedding.cl: token ids to rows of an embedding table, and the gradient back to the table.
//
// Kernels:
//   embedding_gather    out[r, :] = table[ids[r], :], one work-item per id. An id
//                       outside [0, V) is never read: its row becomes 0 and the kernel reports
//                       the op to the queue's status word (bad input), which the host raises as
//                       a ValueError at the next sync. NumPy ids are checked on the host before
//                       upload; this covers ids that are already on the device.
//   embedding_backward  dtable[v, c] = sum of g[p, c] over the positions p with ids[p] = v, one
//                       work-item per vector of VW columns and slice of the vocabulary, walking
//                       the positions in order: repeated ids add up with no atomics and in a
//                       fixed order (deterministic), and nothing goes to the host. The host
//                       zero-fills dtable first. An id outside [0, V) adds nothing and is reported
//                       (bad input), as embedding_gather reports it.
#include "common.h"

// --8<-- [start:embedding_gather]
__kernel void embedding_gather(__global const float *table, __global const int *ids, __global float *out,
                               const int n_ids, const int vocab, const int dim,
                               __global int *status, const int seq)
{
    // One work-item per id, copying its whole row: a work-item per (column, id) made a work-group
    // of 64 values for each 256 bytes copied, and PoCL's cost per work-group outweighed the copy.
    const int r = get_global_id(0);
    if (r >= n_ids) return;
    const int id = ids[r];
    const int inside = id >= 0 && id < vocab;
    __global const float *src = table + (long)(inside ? id : 0) * dim;
    __global float *dst = out + (long)r * dim;
    for (int c = 0; c < dim; ++c) dst[c] = inside ? src[c] : 0.0f;
    report(status, STATUS_BAD_INPUT, seq, !inside);
}
// --8<-- [end:embedding_gather]

// --8<-- [start:embedding_backward]
__kernel void embedding_backward(__global const float *g, __global const int *ids, __global float *dtable,
                                 const int n_ids, const int vocab, const int dim, __global int *status, const int seq)
{
    // Item (c, s) owns columns c VW .. c VW + VW - 1 of the rows whose id lies in the s-th of the
    // grid's equal slices of [0, vocab): every item reads all the ids, in order, and adds the
    // positions that are its own. Each entry still sums its positions in order from the zero the
    // host filled, so the slices change no bit; they give the cores work when dim is narrow.
    const int c0 = get_global_id(0) * VW, s = get_global_id(1), slices = get_global_size(1);
    if (c0 >= dim) return;
    const int lo = (int)((long)vocab * s / slices), hi = (int)((long)vocab * (s + 1) / slices);
    const int whole = c0 + VW <= dim;
    int bad = 0, outside = 0;
    for (int p = 0; p < n_ids; ++p) {
        const int id = ids[p];
        outside |= id < 0 || id >= vocab;
        if (id < lo || id >= hi) continue;          // another slice's id, or outside [0, vocab)
        __global float *row = dtable + (long)id * dim + c0;
        __global const float *gp = g + (long)p * dim + c0;
        if (whole) {
            const vecf v = *(__global vecfu *)row + *(__global const vecfu *)gp;
            *(__global vecfu *)row = v;
            bad |= nonfinitev(v);                   // every entry written, checked as it is written
        } else {
            for (int c = 0; c < dim - c0; ++c) {
                const float v = row[c] + gp[c];
                row[c] = v;
                bad |= nonfinite_bits(v);
            }
        }
    }
    report(status, STATUS_NONFINITE, seq, bad);
    report(status, STATUS_BAD_INPUT, seq, outside);
}
// --8<-- [end:embedding_backward]
