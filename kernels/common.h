// common.h: definitions shared by every kernel file (pulled in with -I kernels).
#ifndef NETCL_LITE_COMMON_H
#define NETCL_LITE_COMMON_H

// Boolean masks arrive as uchar (1 = allowed) addressed by three element strides
// (batch, row, column), so a mask broadcast along an axis costs nothing: its stride
// on that axis is 0.

// Causal visibility with the queries aligned to the end of the keys:
// query i of Tq sees key j of Tk when j <= i + (Tk - Tq). With Tq == Tk this is j <= i;
// with one new query against a cache of Tk keys it sees all of them.
inline int causal_allowed(int i, int j, int tq, int tk) { return j <= i + (tk - tq); }

#define ALWAYS_INLINE __attribute__((always_inline))

// 2^x for x <= 0 without a library call: round x to n + f with |f| <= 1/2, a
// degree-6 polynomial for 2^f (relative error < 2e-7), n added to the exponent.
// Below -125 the result is 0, which also covers x = -inf.
ALWAYS_INLINE float8 exp2_neg(float8 x) {
    const float8 magic = (float8)(12582912.0f);                     // 1.5 * 2^23: rounds to integer
    x = x < (float8)(-126.0f) ? (float8)(-126.0f) : x;
    const float8 t = x + magic;
    const float8 f = x - (t - magic);
    float8 p = (float8)(1.5337577e-4f);
    p = p * f + 1.3399860e-3f;
    p = p * f + 9.6185198e-3f;
    p = p * f + 5.5503290e-2f;
    p = p * f + 2.4022646e-1f;
    p = p * f + 6.9314718e-1f;
    p = p * f + 1.0f;
    const int8 n = as_int8(t) - as_int8(magic);
    const float8 r = as_float8(as_int8(p) + (n << 23));
    return x < (float8)(-125.0f) ? (float8)(0.0f) : r;
}

#endif
