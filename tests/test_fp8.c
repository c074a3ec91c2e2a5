/* Tests of FP8 in hpdl.h: the e4m3 / e5m2 conversions (every code, every
   rounding boundary, saturation, zeros, NaN), per-tensor scaling (amax,
   casts) and the FP8 reference GEMM. */
#include "hpdl.h"
#include "tests/hpdl_test.h"

/* One format seen through its 8-bit codes, so each test runs on both. */
typedef struct fp8_format {
    const char *name;
    hpdl_fp8_format id;
    uint8_t max_code; /* the largest finite magnitude */
    double max;
} fp8_format;

static const fp8_format k_formats[2] = {{"e4m3", HPDL_FP8_E4M3, 0x7e, 448.0}, {"e5m2", HPDL_FP8_E5M2, 0x7b, 57344.0}};

static uint8_t encode(const fp8_format *f, float x) {
    return f->id == HPDL_FP8_E4M3 ? hpdl_e4m3_from_f32(x).bits : hpdl_e5m2_from_f32(x).bits;
}

static float decode(const fp8_format *f, uint8_t bits) {
    hpdl_e4m3 a;
    hpdl_e5m2 b;
    a.bits = b.bits = bits;
    return f->id == HPDL_FP8_E4M3 ? hpdl_e4m3_to_f32(a) : hpdl_e5m2_to_f32(b);
}

/* The code nearest to x by search over every finite code (ties to the even
   code, beyond the largest magnitude: saturated): the conversion's
   definition, written independently of it. x is not NaN. */
static uint8_t nearest_by_search(const fp8_format *f, double x) {
    uint8_t sign = x < 0 || (x == 0 && signbit(x)) ? 0x80 : 0, best = 0;
    double a = fabs(x), best_err = HUGE_VAL;
    int c;
    if (a >= f->max) return (uint8_t)(sign | f->max_code);
    for (c = 0; c <= f->max_code; c++) {
        double err = fabs(decode(f, (uint8_t)c) - a);
        if (err < best_err || (err == best_err && c % 2 == 0)) {
            best_err = err;
            best = (uint8_t)c;
        }
    }
    return (uint8_t)(sign | best);
}

/* ---- conversions ------------------------------------------------------------ */

static void test_known_values(void) {
    const fp8_format *e4 = &k_formats[0], *e5 = &k_formats[1];
    HPDL_EXPECT(decode(e4, 0x7e) == 448.0f && decode(e4, 0xfe) == -448.0f);
    HPDL_EXPECT(decode(e4, 0x38) == 1.0f && decode(e4, 0x08) == ldexpf(1, -6)); /* 1; the smallest normal */
    HPDL_EXPECT(decode(e4, 0x01) == ldexpf(1, -9) && decode(e4, 0x07) == 7 * ldexpf(1, -9));
    HPDL_EXPECT(decode(e5, 0x7b) == 57344.0f && decode(e5, 0x3c) == 1.0f);
    HPDL_EXPECT(decode(e5, 0x04) == ldexpf(1, -14) && decode(e5, 0x01) == ldexpf(1, -16));
    HPDL_EXPECT(isinf(decode(e5, 0x7c)) && decode(e5, 0x7c) > 0 && decode(e5, 0xfc) < 0);
    HPDL_EXPECT(encode(e4, 1.0f) == 0x38 && encode(e4, -2.0f) == 0xc0 && encode(e4, 0.1875f) == 0x24);
    HPDL_EXPECT(encode(e5, 1.0f) == 0x3c && encode(e5, -3.0f) == 0xc2);
}

/* Every code decodes and re-encodes to itself; NaNs are exactly the codes
   the format reserves; e5m2's infinities saturate to the largest finite
   value (the conversion is saturating). */
static void test_every_code_round_trips(void) {
    int fi, c;
    for (fi = 0; fi < 2; fi++) {
        const fp8_format *f = &k_formats[fi];
        for (c = 0; c < 256; c++) {
            float v = decode(f, (uint8_t)c);
            int mag = c & 0x7f, nan_code = f->id == HPDL_FP8_E4M3 ? mag == 0x7f : mag > 0x7c;
            HPDL_EXPECT(isnan(v) == nan_code);
            if (nan_code) continue;
            if (isinf(v)) {
                HPDL_EXPECT(f->id == HPDL_FP8_E5M2 && mag == 0x7c);
                HPDL_EXPECT(encode(f, v) == (uint8_t)((c & 0x80) | f->max_code));
                continue;
            }
            HPDL_EXPECT(encode(f, v) == (uint8_t)c);
            HPDL_EXPECT((signbit(v) != 0) == ((c & 0x80) != 0)); /* -0 included */
        }
    }
}

/* Between every two adjacent finite codes: the midpoint goes to the even
   one, the floats just above and below it to the nearer; codes ascend. */
static void test_midpoints_round_to_even(void) {
    int fi, c, sign;
    for (fi = 0; fi < 2; fi++) {
        const fp8_format *f = &k_formats[fi];
        for (sign = 0; sign <= 0x80; sign += 0x80)
            for (c = 0; c < f->max_code; c++) {
                uint8_t lo = (uint8_t)(sign | c), hi = (uint8_t)(sign | (c + 1));
                float a = decode(f, lo), b = decode(f, hi), mid = (a + b) / 2; /* exact: five significant bits */
                float outward = sign ? -INFINITY : INFINITY;
                HPDL_EXPECT(fabsf(b) > fabsf(a));
                HPDL_EXPECT((double)mid == ((double)a + (double)b) / 2);
                HPDL_EXPECT(encode(f, mid) == (c % 2 == 0 ? lo : hi));
                HPDL_EXPECT(encode(f, nextafterf(mid, outward)) == hi);
                HPDL_EXPECT(encode(f, nextafterf(mid, -outward)) == lo);
                HPDL_EXPECT(encode(f, nextafterf(a, outward)) == lo);
                HPDL_EXPECT(encode(f, nextafterf(b, -outward)) == hi);
            }
    }
}

/* Beyond the largest finite value (the midpoint to the next power of two
   included), and infinities: +-max. NaN stays NaN. Tiny values: signed zero. */
static void test_saturation_nan_and_zero(void) {
    int fi;
    for (fi = 0; fi < 2; fi++) {
        const fp8_format *f = &k_formats[fi];
        const uint8_t max = f->max_code, min = (uint8_t)(0x80 | f->max_code);
        const float top = (float)f->max, step = decode(f, max) - decode(f, (uint8_t)(max - 1));
        HPDL_EXPECT(encode(f, top) == max && encode(f, -top) == min);
        HPDL_EXPECT(encode(f, top + step / 2) == max && encode(f, top + step) == max && encode(f, 2 * top) == max);
        HPDL_EXPECT(encode(f, -(top + step)) == min);
        HPDL_EXPECT(encode(f, FLT_MAX) == max && encode(f, -FLT_MAX) == min);
        HPDL_EXPECT(encode(f, INFINITY) == max && encode(f, -INFINITY) == min);
        HPDL_EXPECT(isnan(decode(f, encode(f, NAN))) && isnan(decode(f, encode(f, -NAN))));
        HPDL_EXPECT(encode(f, 0.0f) == 0x00 && encode(f, -0.0f) == 0x80);
        HPDL_EXPECT(decode(f, 0x80) == 0.0f && signbit(decode(f, 0x80)));
        HPDL_EXPECT(encode(f, 1e-30f) == 0x00 && encode(f, -1e-30f) == 0x80);
        HPDL_EXPECT(encode(f, 1e-45f) == 0x00 && encode(f, -1e-45f) == 0x80); /* an f32 subnormal */
    }
}

/* Random floats over the whole range (and beyond) against the search. */
static void test_random_values_vs_search(void) {
    hpdl_rng r;
    int fi, i;
    hpdl_rng_seed(&r, 8);
    for (fi = 0; fi < 2; fi++) {
        const fp8_format *f = &k_formats[fi];
        for (i = 0; i < 20000; i++) {
            float x = (float)(ldexp(hpdl_rng_uniform(&r), (int)hpdl_rng_below(&r, 44) - 26) * (i % 2 ? -1 : 1));
            HPDL_EXPECT(encode(f, x) == nearest_by_search(f, x));
        }
    }
}

/* ---- per-tensor scaling ------------------------------------------------------- */

static void test_amax(void) {
    float x[5] = {0.5f, -3.25f, 2.0f, -0.0f, 1.0f}, amax = -1;
    HPDL_EXPECT(hpdl_fp8_amax_f32(x, 5, &amax) == HPDL_OK && amax == 3.25f);
    HPDL_EXPECT(hpdl_fp8_amax_f32(x, 0, &amax) == HPDL_OK && amax == 0.0f);
    x[2] = -INFINITY;
    HPDL_EXPECT(hpdl_fp8_amax_f32(x, 5, &amax) == HPDL_OK && amax == INFINITY);
    x[4] = NAN;
    HPDL_EXPECT(hpdl_fp8_amax_f32(x, 5, &amax) == HPDL_OK && isnan(amax));
    amax = 7;
    HPDL_EXPECT(hpdl_fp8_amax_f32(NULL, 5, &amax) == HPDL_ERR_INVALID && amax == 7);
    HPDL_EXPECT(hpdl_fp8_amax_f32(x, -1, &amax) == HPDL_ERR_INVALID && amax == 7);
    HPDL_EXPECT(hpdl_fp8_amax_f32(x, 5, NULL) == HPDL_ERR_INVALID);
}

/* Each cast: q = fp8(x * scale) by the search, amax of x; from f32, f16, bf16. */
static void test_casts(void) {
    enum { N = 300 };
    static float x[N], xs[N];
    static hpdl_f16 h[N];
    static hpdl_bf16 b[N];
    static hpdl_e4m3 q4[N];
    static hpdl_e5m2 q5[N];
    const float scale = 37.5f;
    hpdl_rng r;
    float amax, want = 0;
    int i, t;
    hpdl_rng_seed(&r, 9);
    for (i = 0; i < N; i++) {
        x[i] = (float)(hpdl_rng_normal(&r) * (i % 3 == 0 ? 20.0 : 1.0)); /* some beyond e4m3's range once scaled */
        h[i] = hpdl_f16_from_f32(x[i]);
        b[i] = hpdl_bf16_from_f32(x[i]);
    }
    for (t = 0; t < 3; t++) { /* the input as f32, f16, bf16 */
        want = 0;
        for (i = 0; i < N; i++) {
            xs[i] = t == 0 ? x[i] : t == 1 ? hpdl_f16_to_f32(h[i]) : hpdl_bf16_to_f32(b[i]);
            want = fabsf(xs[i]) > want ? fabsf(xs[i]) : want;
        }
        amax = -1;
        HPDL_EXPECT((t == 0 ? hpdl_fp8_cast_e4m3_f32(x, N, scale, q4, &amax)
                     : t == 1 ? hpdl_fp8_cast_e4m3_f16(h, N, scale, q4, &amax)
                              : hpdl_fp8_cast_e4m3_bf16(b, N, scale, q4, &amax)) == HPDL_OK);
        HPDL_EXPECT(amax == want);
        amax = -1;
        HPDL_EXPECT((t == 0 ? hpdl_fp8_cast_e5m2_f32(x, N, scale, q5, &amax)
                     : t == 1 ? hpdl_fp8_cast_e5m2_f16(h, N, scale, q5, &amax)
                              : hpdl_fp8_cast_e5m2_bf16(b, N, scale, q5, NULL)) == HPDL_OK);
        HPDL_EXPECT(amax == (t == 2 ? -1.0f : want)); /* NULL: no amax */
        for (i = 0; i < N; i++) {
            HPDL_EXPECT(q4[i].bits == nearest_by_search(&k_formats[0], xs[i] * scale));
            HPDL_EXPECT(q5[i].bits == nearest_by_search(&k_formats[1], xs[i] * scale));
        }
    }
    { /* saturated somewhere: e4m3's 448 reached by |x| * 37.5 > 448 */
        int saturated = 0;
        for (i = 0; i < N; i++) saturated += (q4[i].bits & 0x7f) == 0x7e;
        HPDL_EXPECT(saturated > 0);
    }
    x[7] = NAN;
    HPDL_EXPECT(hpdl_fp8_cast_e4m3_f32(x, N, scale, q4, &amax) == HPDL_OK && isnan(amax) && (q4[7].bits & 0x7f) == 0x7f);
}

static void test_cast_bad_arguments(void) {
    float x[4] = {1, 2, 3, 4}, amax = 7;
    hpdl_e4m3 q[4];
    hpdl_e5m2 q5[4];
    const float bad_scales[4] = {0.0f, -1.0f, NAN, INFINITY};
    int i;
    memset(q, 0x5a, sizeof q);
    memset(q5, 0x5a, sizeof q5);
    HPDL_EXPECT(hpdl_fp8_cast_e4m3_f32(NULL, 4, 1.0f, q, &amax) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_cast_e4m3_f32(x, 4, 1.0f, NULL, &amax) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_fp8_cast_e4m3_f32(x, -1, 1.0f, q, &amax) == HPDL_ERR_INVALID);
    for (i = 0; i < 4; i++) {
        HPDL_EXPECT(hpdl_fp8_cast_e4m3_f32(x, 4, bad_scales[i], q, &amax) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_fp8_cast_e5m2_f32(x, 4, bad_scales[i], q5, &amax) == HPDL_ERR_INVALID);
    }
    HPDL_EXPECT(amax == 7);
    for (i = 0; i < 4; i++) HPDL_EXPECT(q[i].bits == 0x5a && q5[i].bits == 0x5a);
    HPDL_EXPECT(hpdl_fp8_cast_e4m3_f32(NULL, 0, 1.0f, NULL, &amax) == HPDL_OK && amax == 0.0f);
}

/* ---- GEMM -------------------------------------------------------------------------- */

/* Random finite codes of format f (NaN codes redrawn; e5m2's infinities too). */
static void random_codes(hpdl_rng *r, const fp8_format *f, uint8_t *q, int n) {
    int i;
    for (i = 0; i < n; i++) {
        do q[i] = (uint8_t)hpdl_rng_below(r, 256);
        while (!isfinite(decode(f, q[i])));
    }
}

/* C against sums in double (exact: every product is exact, and K * 2^32 <<
   2^53 in units of the smallest product): f32 within K ulps of the sum of
   |products|; f16 and bf16 the f32 result rounded; amax likewise. All four
   pairs of formats, A and B with padding (lda, ldb > K). */
static void test_gemm_vs_double(void) {
    enum { M = 5, N = 7, K = 19, LDA = 24, LDB = 21, LDC = 9 };
    uint8_t A[M * LDA], B[N * LDB];
    float C[M * LDC], amax = -1, amax16 = -2, amax_bf = -3;
    hpdl_f16 C16[M * LDC];
    hpdl_bf16 Cbf[M * LDC];
    hpdl_fp8_scales s;
    hpdl_rng r;
    int fa, fb, i, j, k;
    hpdl_rng_seed(&r, 11);
    s.a_scale_inv = 0.125f; s.b_scale_inv = 0.75f; s.out_scale = 3.0f;
    for (fa = 0; fa < 2; fa++)
        for (fb = 0; fb < 2; fb++) {
            const fp8_format *pa = &k_formats[fa], *pb = &k_formats[fb];
            double want_amax = 0;
            random_codes(&r, pa, A, M * LDA);
            random_codes(&r, pb, B, N * LDB);
            HPDL_EXPECT(hpdl_fp8_gemm_f32(M, N, K, A, pa->id, LDA, B, pb->id, LDB, s, C, LDC, &amax) == HPDL_OK);
            HPDL_EXPECT(hpdl_fp8_gemm_f16(M, N, K, A, pa->id, LDA, B, pb->id, LDB, s, C16, LDC, &amax16) == HPDL_OK);
            HPDL_EXPECT(hpdl_fp8_gemm_bf16(M, N, K, A, pa->id, LDA, B, pb->id, LDB, s, Cbf, LDC, &amax_bf) == HPDL_OK);
            for (i = 0; i < M; i++)
                for (j = 0; j < N; j++) {
                    double sum = 0, mag = 0, scale = 0.125 * 0.75;
                    for (k = 0; k < K; k++) {
                        double p = (double)decode(pa, A[i * LDA + k]) * decode(pb, B[j * LDB + k]);
                        sum += p;
                        mag += fabs(p);
                    }
                    want_amax = fabs(scale * sum) > want_amax ? fabs(scale * sum) : want_amax;
                    HPDL_EXPECT(fabs(C[i * LDC + j] - 3 * scale * sum) <= 3 * scale * (K * mag * FLT_EPSILON) + 1e-30);
                    HPDL_EXPECT(C16[i * LDC + j].bits == hpdl_f16_from_f32(C[i * LDC + j]).bits);
                    HPDL_EXPECT(Cbf[i * LDC + j].bits == hpdl_bf16_from_f32(C[i * LDC + j]).bits);
                }
            HPDL_EXPECT(fabs(amax - want_amax) <= 1e-5 * want_amax && amax16 == amax && amax_bf == amax);
        }
}

/* A value that must come out exactly: C = out_scale * a_scale_inv *
   b_scale_inv * (A B^T) with powers of two, and amax before out_scale. */
static void test_gemm_layout_and_scales(void) {
    /* A = [1 2; 3 4] as e4m3, B rows (N x K) = [1 0; 0 2; 1 1] */
    const float a[4] = {1, 2, 3, 4}, b[6] = {1, 0, 0, 2, 1, 1};
    const float want[6] = {1, 4, 3, 3, 8, 7}; /* A B^T */
    hpdl_e4m3 A[4], B[6];
    float C[6], amax = 0;
    hpdl_fp8_scales s;
    int i;
    for (i = 0; i < 4; i++) A[i] = hpdl_e4m3_from_f32(a[i]);
    for (i = 0; i < 6; i++) B[i] = hpdl_e4m3_from_f32(b[i]);
    s.a_scale_inv = 0.5f; s.b_scale_inv = 0.25f; s.out_scale = 16.0f;
    HPDL_EXPECT(hpdl_fp8_gemm_f32(2, 3, 2, A, HPDL_FP8_E4M3, 2, B, HPDL_FP8_E4M3, 2, s, C, 3, &amax) == HPDL_OK);
    for (i = 0; i < 6; i++) HPDL_EXPECT(C[i] == want[i] * 2.0f);
    HPDL_EXPECT(amax == 8.0f / 8.0f);
    HPDL_EXPECT(hpdl_fp8_gemm_f32(2, 3, 0, NULL, HPDL_FP8_E4M3, 1, NULL, HPDL_FP8_E4M3, 1, s, C, 3, &amax) == HPDL_OK);
    for (i = 0; i < 6; i++) HPDL_EXPECT(C[i] == 0.0f); /* K = 0: empty sums */
    HPDL_EXPECT(amax == 0.0f);
}

static void test_gemm_bad_arguments(void) {
    uint8_t A[16], B[16];
    float C[16], amax = 7;
    hpdl_fp8_scales good, bad;
    const float bad_scales[4] = {0.0f, -2.0f, NAN, INFINITY};
    int i, which;
    memset(A, 0x38, sizeof A);
    memset(B, 0x38, sizeof B);
    memset(C, 0x5a, sizeof C);
    good.a_scale_inv = good.b_scale_inv = good.out_scale = 1.0f;
#define GEMM(M, N, K, a, fa, lda, b, fb, ldb, s, c, ldc) hpdl_fp8_gemm_f32(M, N, K, a, fa, lda, b, fb, ldb, s, c, ldc, &amax)
    HPDL_EXPECT(GEMM(4, 4, 4, NULL, HPDL_FP8_E4M3, 4, B, HPDL_FP8_E4M3, 4, good, C, 4) == HPDL_ERR_INVALID);
    HPDL_EXPECT(GEMM(4, 4, 4, A, HPDL_FP8_E4M3, 4, NULL, HPDL_FP8_E4M3, 4, good, C, 4) == HPDL_ERR_INVALID);
    HPDL_EXPECT(GEMM(4, 4, 4, A, HPDL_FP8_E4M3, 4, B, HPDL_FP8_E4M3, 4, good, NULL, 4) == HPDL_ERR_INVALID);
    HPDL_EXPECT(GEMM(-1, 4, 4, A, HPDL_FP8_E4M3, 4, B, HPDL_FP8_E4M3, 4, good, C, 4) == HPDL_ERR_INVALID);
    HPDL_EXPECT(GEMM(4, 4, -1, A, HPDL_FP8_E4M3, 4, B, HPDL_FP8_E4M3, 4, good, C, 4) == HPDL_ERR_INVALID);
    HPDL_EXPECT(GEMM(4, 4, 4, A, HPDL_FP8_E4M3, 3, B, HPDL_FP8_E4M3, 4, good, C, 4) == HPDL_ERR_INVALID); /* lda < K */
    HPDL_EXPECT(GEMM(4, 4, 4, A, HPDL_FP8_E4M3, 4, B, HPDL_FP8_E4M3, 3, good, C, 4) == HPDL_ERR_INVALID); /* ldb < K */
    HPDL_EXPECT(GEMM(4, 4, 4, A, HPDL_FP8_E4M3, 4, B, HPDL_FP8_E4M3, 4, good, C, 3) == HPDL_ERR_INVALID); /* ldc < N */
    HPDL_EXPECT(GEMM(4, 4, 4, A, (hpdl_fp8_format)2, 4, B, HPDL_FP8_E4M3, 4, good, C, 4) == HPDL_ERR_INVALID);
    HPDL_EXPECT(GEMM(4, 4, 4, A, HPDL_FP8_E4M3, 4, B, (hpdl_fp8_format)-1, 4, good, C, 4) == HPDL_ERR_INVALID);
    for (which = 0; which < 3; which++)
        for (i = 0; i < 4; i++) {
            bad = good;
            if (which == 0) bad.a_scale_inv = bad_scales[i];
            if (which == 1) bad.b_scale_inv = bad_scales[i];
            if (which == 2) bad.out_scale = bad_scales[i];
            HPDL_EXPECT(GEMM(4, 4, 4, A, HPDL_FP8_E4M3, 4, B, HPDL_FP8_E4M3, 4, bad, C, 4) == HPDL_ERR_INVALID);
        }
#undef GEMM
    HPDL_EXPECT(amax == 7);
    for (i = 0; i < 16; i++) HPDL_EXPECT(hpdl__f32_bits(C[i]) == 0x5a5a5a5au);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_known_values),
        HPDL_TEST(test_every_code_round_trips),
        HPDL_TEST(test_midpoints_round_to_even),
        HPDL_TEST(test_saturation_nan_and_zero),
        HPDL_TEST(test_random_values_vs_search),
        HPDL_TEST(test_amax),
        HPDL_TEST(test_casts),
        HPDL_TEST(test_cast_bad_arguments),
        HPDL_TEST(test_gemm_vs_double),
        HPDL_TEST(test_gemm_layout_and_scales),
        HPDL_TEST(test_gemm_bad_arguments),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
