// common.h: definitions shared by every kernel file (pulled in with -I kernels).
#ifndef NETCL_LITE_COMMON_H
#define NETCL_LITE_COMMON_H

// Boolean masks arrive as uchar (1 = allowed) addressed by element strides, so a
// mask broadcast along an axis costs nothing: its stride on that axis is 0.
typedef struct { int batch, row, col; } mask_strides;

// Causal visibility with the queries aligned to the end of the keys:
// query i of Tq sees key j of Tk when j <= i + (Tk - Tq). With Tq == Tk this is j <= i;
// with one new query against a cache of Tk keys it sees all of them.
inline int causal_allowed(int i, int j, int tq, int tk) { return j <= i + (tk - tq); }

#endif
