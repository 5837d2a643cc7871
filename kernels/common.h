// common.h: definitions shared by every kernel file (written into each one that includes it: core/kernels.py kernel_source).
#ifndef NETCL_LITE_COMMON_H
#define NETCL_LITE_COMMON_H

#define ALWAYS_INLINE __attribute__((always_inline))

// Causal visibility: query i sits at position q_start + i and sees key j when j <= q_start + i.
// The host takes q_start from netcl_lite.masks.query_start (Tk - Tq: the queries are the last
// Tq positions), the one definition of the alignment that the float64 references use too.
// A macro so that scalar and vector (int8 lanes) code share the one rule.
#define causal_allowed(i, j, q_start) ((j) <= (q_start) + (i))

// Every attention and softmax kernel takes its mask as these arguments: a uchar array
// (1 = allowed) addressed by four element strides, (outer batch, head, row, column), any of
// them 0 where the caller broadcast that axis; then the causal flag and q_start.
#define MASK_PARAMS __global const uchar *mask, const int use_mask, const int m_outer, const int m_head, \
                    const int m_row, const int m_col, const int causal, const int q_start

// Offset of row i's mask entries for batch b, where b runs over (outer, head) with `heads` per outer.
inline long mask_row_base(int b, int heads, int i, int m_outer, int m_head, int m_row) {
    return (long)(b / heads) * m_outer + (long)(b % heads) * m_head + (long)i * m_row;
}

// Whether query i may see key j: inside the keys, causally visible, and allowed by the mask row.
inline int key_visible(int i, int j, int tk, int causal, int q_start,
                       __global const uchar *mask, int use_mask, long mrow, int m_col) {
    return j < tk && (!causal || causal_allowed(i, j, q_start)) && (!use_mask || mask[mrow + (long)j * m_col]);
}

// Status reporting (see netcl_lite/core/stream.py): status[0] takes the sequence number of
// the first op whose result held inf or NaN, status[1] that of the first op given an id out
// of range. A kernel accumulates `bad |= nonfinite_bits(v)` over what it stores and reports
// once at the end.
#define STATUS_NONFINITE 0
#define STATUS_BAD_INPUT 1
ALWAYS_INLINE int nonfinite_bits(float v) { return (as_int(v) & 0x7f800000) == 0x7f800000; }
ALWAYS_INLINE void report(__global int *status, int slot, int seq, int bad) {
    if (bad) atomic_min(status + slot, seq);
}

// One vector of VW lanes: 8 (AVX2, and the default) or 16 (AVX-512), chosen per device by
// the host (-D VW=16) for the kernels whose register blocks are built from it.
#ifndef VW
#define VW 8
#endif
#if VW == 16
typedef float16 vecf;
typedef int16 veci;
typedef float16 vecfu __attribute__((aligned(4)));     // the same vector at any float address
typedef union { float16 v; float s[16]; } lanesf;
typedef union { int16 v; int s[16]; } lanesi;
#define as_vecf as_float16
#define as_veci as_int16
#define LANE_IDS ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#else
typedef float8 vecf;
typedef int8 veci;
typedef float8 vecfu __attribute__((aligned(4)));
typedef union { float8 v; float s[8]; } lanesf;
typedef union { int8 v; int s[8]; } lanesi;
#define as_vecf as_float8
#define as_veci as_int8
#define LANE_IDS ((int8)(0, 1, 2, 3, 4, 5, 6, 7))
#endif

// 2^x for x <= 0 without a library call: round x to n + f with |f| <= 1/2, a
// degree-6 polynomial for 2^f (relative error < 2e-7), n added to the exponent.
// Below -125 the result is 0, which also covers x = -inf.
ALWAYS_INLINE vecf exp2_neg(vecf x) {
    const vecf magic = (vecf)(12582912.0f);                         // 1.5 * 2^23: rounds to integer
    x = x < (vecf)(-126.0f) ? (vecf)(-126.0f) : x;
    const vecf t = x + magic;
    const vecf f = x - (t - magic);
    vecf p = (vecf)(1.5337577e-4f);
    p = p * f + 1.3399860e-3f;
    p = p * f + 9.6185198e-3f;
    p = p * f + 5.5503290e-2f;
    p = p * f + 2.4022646e-1f;
    p = p * f + 6.9314718e-1f;
    p = p * f + 1.0f;
    const veci n = as_veci(t) - as_veci(magic);
    const vecf r = as_vecf(as_veci(p) + (n << 23));
    return x < (vecf)(-125.0f) ? (vecf)(0.0f) : r;
}

// Horizontal max, sum and any of one vector, inline (the builtins would be calls).
ALWAYS_INLINE float hmax8(float8 v) {
    const float4 a = v.lo > v.hi ? v.lo : v.hi;
    const float2 b = a.lo > a.hi ? a.lo : a.hi;
    return b.x > b.y ? b.x : b.y;
}
ALWAYS_INLINE float hsum8(float8 v) {
    const float4 a = v.lo + v.hi;
    const float2 b = a.lo + a.hi;
    return b.x + b.y;
}
#if VW == 16
ALWAYS_INLINE float hmaxv(vecf v) { return hmax8(v.lo > v.hi ? v.lo : v.hi); }
ALWAYS_INLINE float hsumv(vecf v) { return hsum8(v.lo + v.hi); }
ALWAYS_INLINE int anyv(veci m) { const int8 a = m.lo | m.hi; const int4 b = a.lo | a.hi; const int2 c = b.lo | b.hi; return (c.x | c.y) != 0; }
#else
ALWAYS_INLINE float hmaxv(vecf v) { return hmax8(v); }
ALWAYS_INLINE float hsumv(vecf v) { return hsum8(v); }
ALWAYS_INLINE int anyv(veci m) { const int4 a = m.lo | m.hi; const int2 b = a.lo | a.hi; return (b.x | b.y) != 0; }
#endif
ALWAYS_INLINE int nonfinitev(vecf v) { return anyv((as_veci(v) & 0x7f800000) == 0x7f800000); }

// e^x for any x, inline (PoCL would call exp() out of line, one call per element):
// n = round(x log2 e) and r = x - n ln2, with ln2 split in two so that n * LN2_HI is exact;
// e^r from its degree-7 Taylor polynomial on |r| <= ln2/2 (truncation < 1e-8); then 2^n
// goes into the exponent in two halves, so a large |n| neither overflows nor underflows
// early. About 2 ulp. Below -105 the result is 0, above 89 it is inf; NaN stays NaN.
// Defined once per vector type (DEFINE_EXP): exp8 here; TO_INT(n) turns the whole n into ints.
#define DEFINE_EXP(NAME, F, I, AS_F, TO_INT)                                                      \
ALWAYS_INLINE F NAME(F x) {                                                                       \
    const F magic = (F)(12582912.0f);                     /* 1.5 * 2^23: rounds to integer */     \
    const F xc = x < (F)(-105.0f) ? (F)(-105.0f) : (x > (F)(89.0f) ? (F)(89.0f) : x);            \
    const F n = (xc * 1.44269504088896341f + magic) - magic;                                      \
    const F r = (xc - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;                      \
    F p = r * (1.0f / 7.0f) + 1.0f;                                                               \
    p = p * r * (1.0f / 6.0f) + 1.0f;                                                             \
    p = p * r * (1.0f / 5.0f) + 1.0f;                                                             \
    p = p * r * (1.0f / 4.0f) + 1.0f;                                                             \
    p = p * r * (1.0f / 3.0f) + 1.0f;                                                             \
    p = p * r * 0.5f + 1.0f;                                                                      \
    p = p * r + 1.0f;                                                                             \
    const I ni = TO_INT(n), n1 = ni >> 1;                                                         \
    return p * AS_F((n1 + 127) << 23) * AS_F((ni - n1 + 127) << 23);                              \
}
DEFINE_EXP(exp8, float8, int8, as_float8, convert_int8)

// Vectors of 8 lanes over arrays that may start at any float address (a host array is only
// 16-byte aligned), with the tail of a length-n array read as 0 and not written.
typedef float8 float8u __attribute__((aligned(4)));
typedef union { float8 v; float s[8]; } lanes8f;

ALWAYS_INLINE int8 nonfinite8(float8 v) { return (as_int8(v) & 0x7f800000) == 0x7f800000; }

// any() for int8 lanes, inline (PoCL calls the builtin out of line).
ALWAYS_INLINE int any8(int8 m) {
    const int4 a = m.lo | m.hi;
    const int2 b = a.lo | a.hi;
    return (b.x | b.y) != 0;
}

ALWAYS_INLINE float8 load8(__global const float *p, long i0, long n) {
    if (i0 + 8 <= n) return *(__global const float8u *)(p + i0);
    lanes8f l;
    for (int k = 0; k < 8; ++k) l.s[k] = i0 + k < n ? p[i0 + k] : 0.0f;
    return l.v;
}

// Stores the lanes inside the array; returns whether any of them is inf or NaN.
ALWAYS_INLINE int store8(__global float *p, long i0, long n, float8 v) {
    if (i0 + 8 <= n) {
        *(__global float8u *)(p + i0) = v;
        return any8(nonfinite8(v));
    }
    lanes8f l;
    l.v = v;
    int bad = 0;
    for (int k = 0; k < 8 && i0 + k < n; ++k) {
        p[i0 + k] = l.s[k];
        bad |= nonfinite_bits(l.s[k]);
    }
    return bad;
}

#endif
