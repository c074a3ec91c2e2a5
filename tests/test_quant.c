/* Tests of int8 quantization in hpdl.h: parameters, quantize/dequantize,
   gemmlowp fixed-point arithmetic, int8 GEMM, requantization, calibration,
   histograms. */
#include "hpdl.h"
#include "tests/hpdl_test.h"
#include <unistd.h> /* mkstemp, close */

static double uniform(hpdl_rng *r, double lo, double hi) { return lo + (hi - lo) * hpdl_rng_uniform(r); }

static int8_t rand_i8(hpdl_rng *r) { return (int8_t)((int)hpdl_rng_below(r, 256) - 128); }

static int32_t rand_i32(hpdl_rng *r) { return (int32_t)(uint32_t)hpdl_rng_u64(r); }

/* ---- parameters --------------------------------------------------------------- */

static void test_params_from_range(void) {
    hpdl_quant_params p, poison;
    HPDL_EXPECT(hpdl_quant_params_from_range(-1.0, 3.0, 0, &p) == HPDL_OK);
    HPDL_EXPECT(p.scale == (float)(4.0 / 255) && p.zero_point == -64); /* round(-128 + 63.75) */
    HPDL_EXPECT(hpdl_quant_params_from_range(-1.0, 3.0, 1, &p) == HPDL_OK);
    HPDL_EXPECT(p.scale == (float)(3.0 / 127) && p.zero_point == 0);
    HPDL_EXPECT(hpdl_quant_params_from_range(2.0, 5.0, 0, &p) == HPDL_OK); /* widened to [0, 5] */
    HPDL_EXPECT(p.scale == (float)(5.0 / 255) && p.zero_point == -128);
    HPDL_EXPECT(hpdl_quant_params_from_range(-5.0, -2.0, 0, &p) == HPDL_OK); /* widened to [-5, 0] */
    HPDL_EXPECT(p.zero_point == 127);
    memset(&poison, 0x5a, sizeof poison);
    p = poison;
    HPDL_EXPECT(hpdl_quant_params_from_range(0.0, 0.0, 0, &p) == HPDL_ERR_INVALID); /* zero range */
    HPDL_EXPECT(hpdl_quant_params_from_range(0.0, 0.0, 1, &p) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_params_from_range(3.0, 1.0, 0, &p) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_params_from_range(NAN, 1.0, 0, &p) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_params_from_range(0.0, INFINITY, 0, &p) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_params_from_range(0.0, 1e-300, 0, &p) == HPDL_ERR_INVALID); /* scale underflows */
    HPDL_EXPECT(memcmp(&p, &poison, sizeof p) == 0);
    HPDL_EXPECT(hpdl_quant_params_from_range(0.0, 1.0, 0, NULL) == HPDL_ERR_INVALID);
}

/* Round trip within scale/2 for values in range; saturation outside. */
static void test_quantize_round_trip_and_saturation(void) {
    hpdl_rng r;
    float x[257], back[257];
    int8_t q[257];
    int t, i;
    hpdl_rng_seed(&r, 10);
    for (t = 0; t < 200; t++) {
        double lo = uniform(&r, -100.0, 1.0), hi = uniform(&r, 0.01, 100.0);
        int sym = t % 2;
        hpdl_quant_params p;
        memset(&p, 0, sizeof p);
        HPDL_EXPECT(hpdl_quant_params_from_range(lo, hi, sym, &p) == HPDL_OK);
        for (i = 0; i < 257; i++) x[i] = (float)uniform(&r, lo, hi);
        x[0] = (float)lo;
        x[1] = (float)hi;
        HPDL_EXPECT(hpdl_quant_quantize_f32(x, 257, p, q) == HPDL_OK);
        HPDL_EXPECT(hpdl_quant_dequantize_i8(q, 257, p, back) == HPDL_OK);
        for (i = 0; i < 257; i++)
            HPDL_EXPECT(fabs((double)back[i] - x[i]) <= 0.5 * p.scale * (1 + 1e-5) + 1e-6 * fabs(x[i]));
    }
    {
        hpdl_quant_params p;
        float big[6] = {1000.0f, -1000.0f, INFINITY, -INFINITY, 0.0f, 1.0f};
        int8_t qb[6];
        memset(&p, 0, sizeof p);
        HPDL_EXPECT(hpdl_quant_params_from_range(-1.0, 1.0, 1, &p) == HPDL_OK);
        HPDL_EXPECT(hpdl_quant_quantize_f32(big, 6, p, qb) == HPDL_OK);
        HPDL_EXPECT(qb[0] == 127 && qb[1] == -128 && qb[2] == 127 && qb[3] == -128 && qb[4] == 0 && qb[5] == 127);
        /* exact ties round away from zero: 0.5 and -1.5 steps */
        p.scale = 0.25f;
        p.zero_point = 3;
        big[0] = 0.125f;
        big[1] = -0.375f;
        HPDL_EXPECT(hpdl_quant_quantize_f32(big, 2, p, qb) == HPDL_OK);
        HPDL_EXPECT(qb[0] == 4 && qb[1] == 1);
    }
}

static void test_quantize_bad_input(void) {
    float x[4] = {0.5f, NAN, 1.0f, 2.0f};
    int8_t q[4] = {11, 11, 11, 11};
    float back[4] = {7.0f, 7.0f, 7.0f, 7.0f};
    hpdl_quant_params p, bad;
    p.scale = 0.1f;
    p.zero_point = 0;
    bad = p;
    bad.scale = 0.0f;
    HPDL_EXPECT(hpdl_quant_quantize_f32(x, 4, p, q) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(hpdl_quant_quantize_f32(x, 4, bad, q) == HPDL_ERR_INVALID);
    bad = p;
    bad.zero_point = 128;
    HPDL_EXPECT(hpdl_quant_quantize_f32(x, 1, bad, q) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_quantize_f32(NULL, 4, p, q) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_quantize_f32(x, -1, p, q) == HPDL_ERR_INVALID);
    HPDL_EXPECT(q[0] == 11 && q[1] == 11 && q[2] == 11 && q[3] == 11);
    HPDL_EXPECT(hpdl_quant_dequantize_i8(q, 4, bad, back) == HPDL_ERR_INVALID && back[0] == 7.0f);
    HPDL_EXPECT(hpdl_quant_params_f32(x, 4, 0, &p) == HPDL_ERR_NUMERIC && p.scale == 0.1f);
    HPDL_EXPECT(hpdl_quant_params_f32(x, 0, 0, &p) == HPDL_ERR_INVALID);
}

/* Per-channel along both axes: each channel gets its own range and error
   bound; one constant-zero channel is refused before anything is written. */
static void test_per_channel(void) {
    enum { R = 7, C = 5, LD = 6 };
    float w[R * LD], back = 0.0f;
    int8_t q[R * C];
    hpdl_quant_params pc[R], poison;
    hpdl_rng r;
    int axis, i, j;
    hpdl_rng_seed(&r, 11);
    for (i = 0; i < R * LD; i++) w[i] = (float)uniform(&r, -1.0, 1.0) * (float)(1 + (i % LD)) * (float)(1 + i / LD);
    for (axis = 0; axis < 2; axis++) {
        int channels = axis == 0 ? R : C;
        HPDL_EXPECT(hpdl_quant_params_per_channel_f32(w, R, C, LD, axis, 1, pc) == HPDL_OK);
        for (i = 0; i < channels; i++) { /* scale = max |w| of the channel / 127 */
            double amax = 0.0;
            for (j = 0; j < (axis == 0 ? C : R); j++) {
                double v = fabs(axis == 0 ? w[i * LD + j] : w[j * LD + i]);
                if (v > amax) amax = v;
            }
            HPDL_EXPECT(pc[i].scale == (float)(amax / 127) && pc[i].zero_point == 0);
        }
        HPDL_EXPECT(hpdl_quant_quantize_channels_f32(w, R, C, LD, axis, pc, q, C) == HPDL_OK);
        for (i = 0; i < R; i++)
            for (j = 0; j < C; j++) {
                hpdl_quant_params p = pc[axis == 0 ? i : j];
                HPDL_EXPECT(hpdl_quant_dequantize_i8(&q[i * C + j], 1, p, &back) == HPDL_OK);
                HPDL_EXPECT(fabs((double)back - w[i * LD + j]) <= 0.5 * p.scale * (1 + 1e-5));
            }
    }
    memset(&poison, 0x5a, sizeof poison);
    for (i = 0; i < R; i++) pc[i] = poison;
    for (i = 0; i < R; i++) w[i * LD + 3] = 0.0f; /* column 3 all zero */
    HPDL_EXPECT(hpdl_quant_params_per_channel_f32(w, R, C, LD, 1, 1, pc) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_params_per_channel_f32(w, R, C, 4, 0, 1, pc) == HPDL_ERR_INVALID); /* ld < cols */
    HPDL_EXPECT(hpdl_quant_params_per_channel_f32(w, R, C, LD, 2, 1, pc) == HPDL_ERR_INVALID);
    for (i = 0; i < R; i++) HPDL_EXPECT(memcmp(&pc[i], &poison, sizeof poison) == 0);
}

/* ---- gemmlowp fixed point ------------------------------------------------------- */

/* Exact reference: floor(a*b / 2^31 + 1/2), i.e. to nearest with ties
   upwards, which is what gemmlowp's nudge-and-truncate computes. */
static int64_t ref_high_mul(int32_t a, int32_t b) {
    int64_t x = (int64_t)a * b + ((int64_t)1 << 30), d = (int64_t)1 << 31;
    return x >= 0 ? x / d : -((-x + d - 1) / d);
}

/* x / 2^e rounded to nearest, ties away from zero. */

static int64_t ref_div_pot(int32_t x, int e) {
    int64_t mag = x < 0 ? -(int64_t)x : x, q;
    if (e == 0) return x;
    q = (mag + ((int64_t)1 << (e - 1))) >> e;
    return x < 0 ? -q : q;
}

static void test_fixed_point_primitives(void) {
    hpdl_rng r;
    int t;
    hpdl_rng_seed(&r, 12);
    HPDL_EXPECT(hpdl_quant_sat_rounding_doubling_high_mul(INT32_MIN, INT32_MIN) == INT32_MAX);
    HPDL_EXPECT(hpdl_quant_sat_rounding_doubling_high_mul(INT32_MAX, INT32_MAX) == INT32_MAX - 1);
    HPDL_EXPECT(hpdl_quant_sat_rounding_doubling_high_mul(1 << 30, 3) == 2);  /* 1.5 -> 2 */
    HPDL_EXPECT(hpdl_quant_sat_rounding_doubling_high_mul(1 << 30, -3) == -1); /* -1.5 -> -1 */
    HPDL_EXPECT(hpdl_quant_sat_rounding_doubling_high_mul(1 << 30, -5) == -2); /* -2.5 -> -2 */
    HPDL_EXPECT(hpdl_quant_sat_rounding_doubling_high_mul((1 << 30) + 1, -3) == -2); /* -1.5000000014 */
    HPDL_EXPECT(hpdl_quant_rounding_divide_by_pot(5, 1) == 3 && hpdl_quant_rounding_divide_by_pot(-5, 1) == -3);
    HPDL_EXPECT(hpdl_quant_rounding_divide_by_pot(-6, 2) == -2 && hpdl_quant_rounding_divide_by_pot(INT32_MIN, 31) == -1);
    for (t = 0; t < 200000; t++) {
        int32_t a = rand_i32(&r), b = rand_i32(&r);
        int e = (int)hpdl_rng_below(&r, 32);
        if (t % 4 == 0) a >>= (int)hpdl_rng_below(&r, 31); /* small magnitudes too */
        if (!(a == INT32_MIN && b == INT32_MIN))
            HPDL_EXPECT(hpdl_quant_sat_rounding_doubling_high_mul(a, b) == ref_high_mul(a, b));
        HPDL_EXPECT(hpdl_quant_rounding_divide_by_pot(a, e) == ref_div_pot(a, e));
    }
}

/* M0 * 2^-31 * 2^-shift equals M to 2^-31 relative; applied to random int32
   values, the integer pipeline is within 1 of round(acc * M) in double. */
static void test_multiplier_matches_double(void) {
    hpdl_rng r;
    int t, k;
    int32_t m0 = 5;
    int shift = 5;
    hpdl_rng_seed(&r, 13);
    for (t = 0; t < 5000; t++) {
        double M = ldexp(uniform(&r, 0.5, 1.0), -(int)hpdl_rng_below(&r, 25));
        HPDL_EXPECT(hpdl_quant_multiplier(M, &m0, &shift) == HPDL_OK);
        HPDL_EXPECT(m0 >= (1 << 30) && shift >= 0 && shift <= 31);
        HPDL_EXPECT(fabs(ldexp((double)m0, -31 - shift) - M) <= ldexp(1.0, -32 - shift) * 1.0000001);
        for (k = 0; k < 40; k++) {
            int32_t acc = rand_i32(&r) >> (int)hpdl_rng_below(&r, 31);
            int32_t got = hpdl_quant_rounding_divide_by_pot(hpdl_quant_sat_rounding_doubling_high_mul(acc, m0), shift);
            HPDL_EXPECT(fabs((double)got - round((double)acc * M)) <= 1.0);
        }
    }
    HPDL_EXPECT(hpdl_quant_multiplier(1.0 - 1e-12, &m0, &shift) == HPDL_OK && m0 == INT32_MAX && shift == 0);
    m0 = 5;
    shift = 5;
    HPDL_EXPECT(hpdl_quant_multiplier(0.0, &m0, &shift) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_multiplier(1.0, &m0, &shift) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_multiplier(1e-12, &m0, &shift) == HPDL_ERR_INVALID); /* shift > 31 */
    HPDL_EXPECT(hpdl_quant_multiplier(NAN, &m0, &shift) == HPDL_ERR_INVALID);
    HPDL_EXPECT(m0 == 5 && shift == 5);
}

/* ---- int8 GEMM ---------------------------------------------------------------------- */

static void fill_i8(hpdl_rng *r, int8_t *x, int n) {
    int i;
    for (i = 0; i < n; i++) x[i] = rand_i8(r);
}

static int64_t ref_dot(int K, const int8_t *a, int za, const int8_t *b, int ldb, int zb) {
    int64_t acc = 0;
    int k;
    for (k = 0; k < K; k++) acc += (int64_t)(a[k] - za) * (b[(int64_t)k * ldb] - zb);
    return acc;
}

/* Bit-exact against an int64 reference on odd shapes with padded leading
   dimensions; the padding stays untouched. */
static void test_gemm_i8_exact(void) {
    static const int shapes[4][3] = {{1, 1, 1}, {7, 13, 29}, {33, 5, 64}, {17, 31, 3}};
    hpdl_rng r;
    int s;
    hpdl_rng_seed(&r, 14);
    for (s = 0; s < 4; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], lda = K + 3, ldb = N + 2, ldc = N + 1, i, j;
        int8_t *A = (int8_t *)hpdl_alloc((size_t)M * lda, 1), *B = (int8_t *)hpdl_alloc((size_t)K * ldb, 1);
        int32_t *C = (int32_t *)hpdl_alloc((size_t)M * ldc, sizeof *C);
        int32_t za = rand_i8(&r), zb = s == 0 ? 0 : rand_i8(&r);
        HPDL_EXPECT(A && B && C);
        if (!A || !B || !C) return;
        fill_i8(&r, A, M * lda);
        fill_i8(&r, B, K * ldb);
        for (i = 0; i < M * ldc; i++) C[i] = 0x5a5a5a5a;
        HPDL_EXPECT(hpdl_quant_gemm_i8(M, N, K, A, lda, za, B, ldb, zb, C, ldc) == HPDL_OK);
        for (i = 0; i < M; i++) {
            for (j = 0; j < N; j++) HPDL_EXPECT(C[i * ldc + j] == ref_dot(K, A + i * lda, za, B + j, ldb, zb));
            HPDL_EXPECT(C[i * ldc + N] == 0x5a5a5a5a);
        }
        HPDL_FREE(A); HPDL_FREE(B); HPDL_FREE(C);
    }
}

/* The K limit: the worst case at K = HPDL_QUANT_MAX_K is still exact; one
   more is refused. Bad arguments write nothing. */
static void test_gemm_i8_limits_and_errors(void) {
    int K = HPDL_QUANT_MAX_K, i;
    int8_t *a = (int8_t *)hpdl_alloc((size_t)K + 1, 1), *b = (int8_t *)hpdl_alloc((size_t)K + 1, 1);
    int32_t c = 0x5a5a5a5a;
    HPDL_EXPECT(a && b);
    if (!a || !b) return;
    for (i = 0; i <= K; i++) { a[i] = -128; b[i] = -128; }
    HPDL_EXPECT(hpdl_quant_gemm_i8(1, 1, K, a, K, 127, b, 1, 127, &c, 1) == HPDL_OK);
    HPDL_EXPECT(c == 255 * 255 * K);
    c = 0x5a5a5a5a;
    HPDL_EXPECT(hpdl_quant_gemm_i8(1, 1, K + 1, a, K + 1, 127, b, 1, 127, &c, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_gemm_i8(1, 1, 4, a, 3, 0, b, 1, 0, &c, 1) == HPDL_ERR_INVALID);   /* lda < K */
    HPDL_EXPECT(hpdl_quant_gemm_i8(1, 1, 4, a, 4, 128, b, 1, 0, &c, 1) == HPDL_ERR_INVALID); /* zero point */
    HPDL_EXPECT(hpdl_quant_gemm_i8(-1, 1, 4, a, 4, 0, b, 1, 0, &c, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_gemm_i8(1, 1, 4, NULL, 4, 0, b, 1, 0, &c, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(c == 0x5a5a5a5a);
    HPDL_FREE(a); HPDL_FREE(b);
}

/* The integer-only layer against the same computation in double with the
   real multiplier: within 1 everywhere, per tensor and per channel, with
   bias and fused ReLU. */
static void test_gemm_requant_vs_double(void) {
    enum { M = 9, N = 11, K = 37 };
    int8_t A[M * K], B[K * N], C[M * N];
    int32_t bias[N], m0[N];
    int shift[N], per_channel, relu, i, j;
    double real[N];
    hpdl_quant_output o;
    hpdl_rng r;
    hpdl_rng_seed(&r, 15);
    fill_i8(&r, A, M * K);
    fill_i8(&r, B, K * N);
    for (j = 0; j < N; j++) {
        bias[j] = (int32_t)hpdl_rng_below(&r, 20001) - 10000;
        real[j] = uniform(&r, 1e-4, 2e-3);
        HPDL_EXPECT(hpdl_quant_multiplier(real[j], &m0[j], &shift[j]) == HPDL_OK);
    }
    for (per_channel = 0; per_channel < 2; per_channel++)
        for (relu = 0; relu < 2; relu++) {
            int32_t za = -3, zy = 5, max_err = 0;
            o.bias = bias;
            o.multiplier = m0;
            o.shift = shift;
            o.per_channel = per_channel;
            o.zero_point = zy;
            o.relu = relu;
            memset(C, 0x5a, sizeof C);
            HPDL_EXPECT(hpdl_quant_gemm_requant_i8(M, N, K, A, K, za, B, N, 0, &o, C, N) == HPDL_OK);
            for (i = 0; i < M; i++)
                for (j = 0; j < N; j++) {
                    double acc = (double)ref_dot(K, A + i * K, za, B + j, N, 0) + bias[j];
                    double want = round(acc * real[per_channel ? j : 0]) + zy;
                    int32_t err;
                    want = want > 127 ? 127 : want < (relu ? zy : -128) ? (relu ? zy : -128) : want;
                    err = (int32_t)fabs(C[i * N + j] - want);
                    if (err > max_err) max_err = err;
                }
            HPDL_EXPECT(max_err <= 1);
        }
    /* bad output stages: nothing written */
    memset(C, 0x5a, sizeof C);
    m0[0] = 1 << 29;
    HPDL_EXPECT(hpdl_quant_gemm_requant_i8(M, N, K, A, K, 0, B, N, 0, &o, C, N) == HPDL_ERR_INVALID);
    m0[0] = 1 << 30;
    shift[N - 1] = 32; /* only read per channel */
    HPDL_EXPECT(hpdl_quant_gemm_requant_i8(M, N, K, A, K, 0, B, N, 0, &o, C, N) == HPDL_ERR_INVALID);
    o.zero_point = -129;
    o.per_channel = 0;
    HPDL_EXPECT(hpdl_quant_gemm_requant_i8(M, N, K, A, K, 0, B, N, 0, &o, C, N) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_gemm_requant_i8(M, N, K, A, K, 0, B, N, 0, NULL, C, N) == HPDL_ERR_INVALID);
    for (i = 0; i < M * N; i++) HPDL_EXPECT(C[i] == (int8_t)0x5a);
}

/* The int8 convolution against the f64 one on the shifted integers x - zx
   (padding 0 = a padded zx), plus the bias, requantised by
   hpdl_quant_requantize: bit for bit, with and without the ReLU clamp, on
   odd shapes (stride 2, padding, dilation, 1x1, H != W). Bad arguments:
   HPDL_ERR_INVALID, nothing written. */
static void test_conv2d_i8_exact(void) {
    enum { N = 2, C = 5, H = 7, W = 6, K = 11 };
    const int shapes[][4] = {{3, 1, 1, 1}, {3, 2, 0, 1}, {1, 1, 0, 1}, {5, 2, 2, 1}, {3, 1, 2, 2}}; /* R, stride, pad, dilation */
    int8_t x[N * H * W * C], w[5 * 5 * C * K], y[N * H * W * K];
    double xs[N * H * W * C], wk[5 * 5 * C * K], acc[N * H * W * K];
    int32_t bias[K], m0[K];
    int shift[K], t, i, k, relu;
    hpdl_quant_output o;
    hpdl_rng r;
    hpdl_rng_seed(&r, 31);
    fill_i8(&r, x, N * H * W * C);
    fill_i8(&r, w, 5 * 5 * C * K);
    for (k = 0; k < K; k++) {
        bias[k] = (int32_t)hpdl_rng_below(&r, 20001) - 10000;
        HPDL_EXPECT(hpdl_quant_multiplier(uniform(&r, 1e-4, 2e-3), &m0[k], &shift[k]) == HPDL_OK);
    }
    o.bias = bias; o.multiplier = m0; o.shift = shift; o.per_channel = 1; o.zero_point = 4;
    for (t = 0; t < HPDL_COUNT(shapes); t++)
        for (relu = 0; relu < 2; relu++) {
            const int R = shapes[t][0], taps = R * R * C, zx = -7;
            hpdl_conv2d_params p = hpdl_conv2d_params_make(R, shapes[t][1], shapes[t][2], shapes[t][3], 1);
            hpdl_tensor4 xd = hpdl_tensor4_make(N, C, H, W, HPDL_NHWC), yd = xd;
            int bad = 0;
            HPDL_EXPECT(hpdl_conv2d_output_desc(&p, &xd, K, &yd) == HPDL_OK);
            for (i = 0; i < N * H * W * C; i++) xs[i] = x[i] - zx;
            for (k = 0; k < K; k++) /* KRSC from taps x outputs */
                for (i = 0; i < taps; i++) wk[k * taps + i] = w[i * K + k];
            HPDL_EXPECT(hpdl_conv2d_forward_f64(&p, &xd, xs, wk, &yd, acc) == HPDL_OK);
            o.relu = relu;
            memset(y, 0x5a, sizeof y);
            HPDL_EXPECT(hpdl_quant_conv2d_i8(&p, &xd, x, zx, w, &o, &yd, y) == HPDL_OK);
            for (i = 0; i < yd.n * yd.h * yd.w * K; i++) {
                int8_t want = 0;
                HPDL_EXPECT(hpdl_quant_requantize((int32_t)acc[i] + bias[i % K], m0[i % K], shift[i % K], 4, &want) == HPDL_OK);
                if (relu && want < 4) want = 4;
                bad += y[i] != want;
            }
            HPDL_EXPECT(bad == 0);
        }
    {
        hpdl_conv2d_params p = hpdl_conv2d_params_make(3, 1, 1, 1, 1);
        hpdl_tensor4 xd = hpdl_tensor4_make(N, C, H, W, HPDL_NHWC), yd = hpdl_tensor4_make(N, K, H, W, HPDL_NHWC);
        hpdl_tensor4 nchw = hpdl_tensor4_make(N, C, H, W, HPDL_NCHW), wrong = hpdl_tensor4_make(N, K, H + 1, W, HPDL_NHWC);
        memset(y, 0x5a, sizeof y);
        HPDL_EXPECT(hpdl_quant_conv2d_i8(&p, &xd, x, -129, w, &o, &yd, y) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_quant_conv2d_i8(&p, &nchw, x, 0, w, &o, &yd, y) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_quant_conv2d_i8(&p, &xd, x, 0, w, &o, &wrong, y) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_quant_conv2d_i8(&p, &xd, NULL, 0, w, &o, &yd, y) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_quant_conv2d_i8(&p, &xd, x, 0, w, NULL, &yd, y) == HPDL_ERR_INVALID);
        p.stride_h = 0;
        HPDL_EXPECT(hpdl_quant_conv2d_i8(&p, &xd, x, 0, w, &o, &yd, y) == HPDL_ERR_INVALID);
        for (i = 0; i < N * H * W * K; i++) HPDL_EXPECT(y[i] == (int8_t)0x5a);
    }
}

/* A whole float layer y = x W + b run integer-only (asymmetric activations,
   per-channel symmetric weights, int32 bias) lands within a few output steps
   of the float result. */
static void test_quantized_layer_end_to_end(void) {
    enum { M = 16, K = 64, N = 10 };
    float x[M * K], w[K * N], b[N], y[M * N], ylo = 1e30f, yhi = -1e30f, back = 0.0f;
    int8_t xq[M * K], wq[K * N], yq[M * N];
    int32_t bq[N], m0[N];
    int shift[N], i, j, k;
    hpdl_quant_params px, pw[N], py;
    hpdl_quant_output o;
    hpdl_rng r;
    hpdl_rng_seed(&r, 16);
    memset(&px, 0, sizeof px);
    memset(&py, 0, sizeof py);
    for (i = 0; i < M * K; i++) x[i] = (float)uniform(&r, -0.5, 2.0);
    for (i = 0; i < K * N; i++) w[i] = (float)(0.2 * hpdl_rng_normal(&r));
    for (j = 0; j < N; j++) b[j] = (float)uniform(&r, -1.0, 1.0);
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            double acc = b[j];
            for (k = 0; k < K; k++) acc += (double)x[i * K + k] * w[k * N + j];
            y[i * N + j] = (float)acc;
            if (y[i * N + j] < ylo) ylo = y[i * N + j];
            if (y[i * N + j] > yhi) yhi = y[i * N + j];
        }
    HPDL_EXPECT(hpdl_quant_params_f32(x, M * K, 0, &px) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_params_per_channel_f32(w, K, N, N, 1, 1, pw) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_params_from_range(ylo, yhi, 0, &py) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_quantize_f32(x, M * K, px, xq) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_quantize_channels_f32(w, K, N, N, 1, pw, wq, N) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_bias_f32(b, N, px.scale, pw, 1, bq) == HPDL_OK);
    for (j = 0; j < N; j++) HPDL_EXPECT(bq[j] == (int32_t)round(b[j] / ((double)px.scale * pw[j].scale)));
    HPDL_EXPECT(hpdl_quant_layer_multipliers(px.scale, pw, N, py.scale, m0, shift) == HPDL_OK);
    o.bias = bq;
    o.multiplier = m0;
    o.shift = shift;
    o.per_channel = 1;
    o.zero_point = py.zero_point;
    o.relu = 0;
    HPDL_EXPECT(hpdl_quant_gemm_requant_i8(M, N, K, xq, K, px.zero_point, wq, N, 0, &o, yq, N) == HPDL_OK);
    for (i = 0; i < M * N; i++) {
        HPDL_EXPECT(hpdl_quant_dequantize_i8(&yq[i], 1, py, &back) == HPDL_OK);
        HPDL_EXPECT(fabs((double)back - y[i]) <= 4.0 * py.scale);
    }
}

/* ---- calibration and histograms ------------------------------------------------------ */

static int64_t hist_sum(const int64_t *h, int n) {
    int64_t s = 0;
    int i;
    for (i = 0; i < n; i++) s += h[i];
    return s;
}

static void test_calibration(void) {
    hpdl_quant_calib c;
    float batch[1000];
    double lo = 0.0, hi = 0.0, width;
    int b, i;
    hpdl_rng r;
    hpdl_rng_seed(&r, 17);
    memset(&c, 0, sizeof c);
    HPDL_EXPECT(hpdl_quant_calib_init(&c, 2048) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_calib_minmax(&c, &lo, &hi) == HPDL_ERR_INVALID); /* empty set */
    HPDL_EXPECT(hpdl_quant_calib_percentile(&c, 99.0, &lo, &hi) == HPDL_ERR_INVALID);
    /* batches of growing range force the histogram to double several times */
    for (b = 0; b < 40; b++) {
        double amp = b < 20 ? 0.1 : 1.0;
        for (i = 0; i < 1000; i++) batch[i] = (float)uniform(&r, -amp, 3.0 * amp);
        HPDL_EXPECT(hpdl_quant_calib_observe_f32(&c, batch, 1000) == HPDL_OK);
    }
    HPDL_EXPECT(c.count == 40000 && hist_sum(c.hist, c.bins) == 40000);
    HPDL_EXPECT(hpdl_quant_calib_minmax(&c, &lo, &hi) == HPDL_OK);
    HPDL_EXPECT(lo >= -1.0 && lo < -0.99 && hi <= 3.0 && hi > 2.99);
    /* half the values are uniform on [-0.1, 0.3], half on [-1, 3]: the 99th
       percentile solves 0.5 + 0.5 (p + 1) / 4 = 0.99, p = 2.92 */
    width = 2.0 * c.range / c.bins;
    HPDL_EXPECT(hpdl_quant_calib_percentile(&c, 99.0, &lo, &hi) == HPDL_OK);
    HPDL_EXPECT(fabs(hi - 2.92) < 0.02 + width);
    HPDL_EXPECT(fabs(lo - (-0.92)) < 0.02 + width); /* 1%: 0.5 (p + 1) / 4 = 0.01 */
    hpdl_quant_calib_free(&c);
    /* a known discrete distribution: 1..10000, zeros first */
    HPDL_EXPECT(hpdl_quant_calib_init(&c, 1000) == HPDL_OK);
    for (i = 0; i < 1000; i++) batch[i] = 0.0f;
    HPDL_EXPECT(hpdl_quant_calib_observe_f32(&c, batch, 1000) == HPDL_OK);
    for (b = 0; b < 10; b++) {
        for (i = 0; i < 1000; i++) batch[i] = (float)(b * 1000 + i + 1);
        HPDL_EXPECT(hpdl_quant_calib_observe_f32(&c, batch, 1000) == HPDL_OK);
    }
    width = 2.0 * c.range / c.bins;
    HPDL_EXPECT(hpdl_quant_calib_percentile(&c, 90.0, &lo, &hi) == HPDL_OK);
    HPDL_EXPECT(fabs(hi - 8900.0) <= width + 1.0); /* 9900 of 11000 values are <= 8900 */
    HPDL_EXPECT(fabs(lo - 100.0) <= width + 1.0); /* 1000 zeros and 1..100 are 10% */
    HPDL_EXPECT(hpdl_quant_calib_percentile(&c, 100.0, &lo, &hi) == HPDL_OK && lo == 0.0 && hi == 10000.0);
    /* bad batches change nothing */
    batch[5] = NAN;
    HPDL_EXPECT(hpdl_quant_calib_observe_f32(&c, batch, 1000) == HPDL_ERR_NUMERIC);
    batch[5] = INFINITY;
    HPDL_EXPECT(hpdl_quant_calib_observe_f32(&c, batch, 1000) == HPDL_ERR_NUMERIC);
    HPDL_EXPECT(hpdl_quant_calib_observe_f32(&c, NULL, 1000) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_calib_percentile(&c, 40.0, &lo, &hi) == HPDL_ERR_INVALID);
    HPDL_EXPECT(c.count == 11000 && hist_sum(c.hist, c.bins) == 11000 && c.max == 10000.0);
    hpdl_quant_calib_free(&c);
    HPDL_EXPECT(hpdl_quant_calib_init(&c, 7) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_quant_calib_init(NULL, 8) == HPDL_ERR_INVALID);
}

static void test_histogram(void) {
    hpdl_quant_hist h;
    float x[5000];
    hpdl_rng r;
    int i, lines = 0;
    int64_t outside = 0;
    char path[] = "/tmp/hpdl_test_hist_XXXXXX", line[128];
    FILE *f;
    hpdl_rng_seed(&r, 18);
    memset(&h, 0, sizeof h);
    for (i = 0; i < 5000; i++) {
        x[i] = (float)hpdl_rng_normal(&r);
        outside += x[i] < -2.0f || x[i] > 2.0f;
    }
    HPDL_EXPECT(hpdl_quant_hist_init(&h, 64, -2.0, 2.0) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_hist_add_f32(&h, x, 3000) == HPDL_OK);
    HPDL_EXPECT(hpdl_quant_hist_add_f32(&h, x + 3000, 2000) == HPDL_OK);
    HPDL_EXPECT(hist_sum(h.counts, h.bins) == 5000 && h.total == 5000 && h.clipped == outside);
    HPDL_EXPECT(h.counts[31] > h.counts[5] && h.counts[32] > h.counts[60]); /* bell shaped */
    x[7] = NAN;
    HPDL_EXPECT(hpdl_quant_hist_add_f32(&h, x, 5000) == HPDL_ERR_NUMERIC && h.total == 5000);
    HPDL_EXPECT(hpdl_quant_hist_init(&h, 0, -1.0, 1.0) == HPDL_ERR_INVALID && h.bins == 64);
    HPDL_EXPECT(hpdl_quant_hist_init(&h, 8, 1.0, 1.0) == HPDL_ERR_INVALID && h.bins == 64);
    {
        int fd = mkstemp(path);
        HPDL_EXPECT(fd >= 0);
        if (fd >= 0) close(fd);
    }
    HPDL_EXPECT(hpdl_quant_hist_write_csv(&h, path) == HPDL_OK);
    f = fopen(path, "r");
    HPDL_EXPECT(f != NULL);
    if (f) {
        int64_t total = 0;
        while (fgets(line, sizeof line, f)) {
            double blo, bhi;
            long long n;
            if (lines++ == 0) { HPDL_EXPECT(strcmp(line, "bin_lo,bin_hi,count\n") == 0); continue; }
            HPDL_EXPECT(sscanf(line, "%lf,%lf,%lld", &blo, &bhi, &n) == 3);
            total += n;
        }
        fclose(f);
        HPDL_EXPECT(lines == 65 && total == 5000);
    }
    remove(path);
    HPDL_EXPECT(hpdl_quant_hist_write_csv(&h, "/nonexistent-dir/h.csv") == HPDL_ERR_IO);
    hpdl_quant_hist_free(&h);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_params_from_range),
        HPDL_TEST(test_quantize_round_trip_and_saturation),
        HPDL_TEST(test_quantize_bad_input),
        HPDL_TEST(test_per_channel),
        HPDL_TEST(test_fixed_point_primitives),
        HPDL_TEST(test_multiplier_matches_double),
        HPDL_TEST(test_gemm_i8_exact),
        HPDL_TEST(test_gemm_i8_limits_and_errors),
        HPDL_TEST(test_gemm_requant_vs_double),
        HPDL_TEST(test_conv2d_i8_exact),
        HPDL_TEST(test_quantized_layer_end_to_end),
        HPDL_TEST(test_calibration),
        HPDL_TEST(test_histogram),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
