/* GPU tests of FP8: the casts (bits and amax against hpdl.h's conversions)
   and the FP8 GEMM on Hopper against its CPU twin hpdl_fp8_gemm_<t>, every
   pair of formats, f32/f16/bf16 outputs, odd shapes, poisoned outputs. */
#include "hpdl_cuda.cuh"
#include "tests/hpdl_test_cuda.h"

#include <vector>

static float *device_float(float v) { return upload(std::vector<float>(1, v)); }

static float read_float(const float *d) { return download(d, 1)[0]; }

/* Whether the FP8 GEMM must run here: sm_90a code in this binary and a Hopper GPU. */
static int hopper(void) { return hpdl__wg_available(); }

/* ---- casts ------------------------------------------------------------------------ */

/* Inputs over every range a cast meets: normal values, some far beyond both
   formats' largest value once scaled, infinities, zeros of both signs,
   values below the smallest subnormal. */
static std::vector<float> cast_inputs(size_t n, unsigned seed) {
    std::vector<float> x(n);
    hpdl_rng r;
    hpdl_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        switch (i % 7) {
        case 0: x[i] = (float)(hpdl_rng_normal(&r) * 1e4); break;
        case 1: x[i] = (float)(hpdl_rng_normal(&r) * 1e-4); break;
        default: x[i] = (float)(ldexp(hpdl_rng_uniform(&r), (int)hpdl_rng_below(&r, 40) - 24) * (i % 2 ? -1 : 1));
        }
    }
    x[3] = INFINITY; x[10] = -INFINITY; x[17] = 0.0f; x[24] = -0.0f; x[31] = 1e-30f; x[38] = -1e-30f;
    return x;
}

/* One format's cast from one input type, on n elements: bits and amax
   equal to the CPU's; the byte after the last stays poisoned. */
template <typename T, typename Q, typename GPU, typename CPU>
static void check_cast(const std::vector<T> &x, float scale, GPU gpu, CPU cpu) {
    const size_t n = x.size();
    std::vector<Q> want(n);
    float want_amax = -1;
    T *dx = upload(x);
    Q *dq = poisoned<Q>(n + 1);
    float *dscale = device_float(scale), *damax = device_float(-1);
    int bad = 0;
    HPDL_EXPECT(cpu(x.data(), (int64_t)n, scale, want.data(), &want_amax) == HPDL_OK);
    HPDL_EXPECT(gpu(dx, (int64_t)n, dscale, dq, damax, (cudaStream_t)0) == HPDL_OK);
    std::vector<Q> got = download(dq, n + 1);
    for (size_t i = 0; i < n; i++) bad += got[i].bits != want[i].bits;
    HPDL_EXPECT(bad == 0);
    HPDL_EXPECT(got[n].bits == 0xff);
    HPDL_EXPECT(hpdl__f32_bits(read_float(damax)) == hpdl__f32_bits(want_amax));
    if (bad) fprintf(stderr, "    %d of %zu codes differ\n", bad, n);
    hpdl_cuda_free(dx); hpdl_cuda_free(dq); hpdl_cuda_free(dscale); hpdl_cuda_free(damax);
}

static void test_casts_vs_cpu(void) {
    const size_t n = 100003; /* odd: the last pair is half full */
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    std::vector<float> x = cast_inputs(n, 3);
    std::vector<hpdl_f16> h(n);
    std::vector<hpdl_bf16> b(n);
    for (size_t i = 0; i < n; i++) { h[i] = hpdl_f16_from_f32(x[i]); b[i] = hpdl_bf16_from_f32(x[i]); }
    check_cast<float, hpdl_e4m3>(x, 3.75f, hpdl_cuda_fp8_cast_e4m3_f32<>, hpdl_fp8_cast_e4m3_f32);
    check_cast<float, hpdl_e5m2>(x, 3.75f, hpdl_cuda_fp8_cast_e5m2_f32<>, hpdl_fp8_cast_e5m2_f32);
    check_cast<hpdl_f16, hpdl_e4m3>(h, 0.3f, hpdl_cuda_fp8_cast_e4m3_f16<>, hpdl_fp8_cast_e4m3_f16);
    check_cast<hpdl_f16, hpdl_e5m2>(h, 0.3f, hpdl_cuda_fp8_cast_e5m2_f16<>, hpdl_fp8_cast_e5m2_f16);
    check_cast<hpdl_bf16, hpdl_e4m3>(b, 1.0f, hpdl_cuda_fp8_cast_e4m3_bf16<>, hpdl_fp8_cast_e4m3_bf16);
    check_cast<hpdl_bf16, hpdl_e5m2>(b, 1.0f, hpdl_cuda_fp8_cast_e5m2_bf16<>, hpdl_fp8_cast_e5m2_bf16);
}

/* NULL scale: 1; a NaN makes the amax NaN and its code a NaN; bad arguments. */
static void test_cast_nan_and_arguments(void) {
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    std::vector<float> x = {1.5f, -600.0f, NAN, 2.0f, 0.25f};
    float *dx = upload(x), *damax = device_float(-1);
    hpdl_e4m3 *dq = poisoned<hpdl_e4m3>(x.size());
    HPDL_EXPECT(hpdl_cuda_fp8_cast_e4m3_f32(dx, 5, NULL, dq, damax, 0) == HPDL_OK);
    std::vector<hpdl_e4m3> q = download(dq, 5);
    HPDL_EXPECT(q[0].bits == hpdl_e4m3_from_f32(1.5f).bits && q[1].bits == 0xfe && q[4].bits == 0x28);
    HPDL_EXPECT(isnan(hpdl_e4m3_to_f32(q[2])) && isnan(read_float(damax)));
    HPDL_EXPECT(hpdl_cuda_fp8_cast_e4m3_f32(dx, 2, NULL, dq, damax, 0) == HPDL_OK && read_float(damax) == 600.0f);
    HPDL_EXPECT(hpdl_cuda_fp8_cast_e4m3_f32(NULL, 5, NULL, dq, damax, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_fp8_cast_e4m3_f32(dx, 5, NULL, NULL, damax, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_fp8_cast_e4m3_f32(dx, -1, NULL, dq, damax, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(read_float(damax) == 600.0f); /* untouched by the refused calls */
    HPDL_EXPECT(hpdl_cuda_fp8_cast_e4m3_f32(dx, 0, NULL, dq, damax, 0) == HPDL_OK && read_float(damax) == 0.0f);
    hpdl_cuda_free(dx); hpdl_cuda_free(damax); hpdl_cuda_free(dq);
}

/* ---- GEMM --------------------------------------------------------------------------- */

/* Codes of rows x ld (padding included) from normal values scaled into the
   format's range, as a cast would make them. */
static std::vector<uint8_t> fp8_matrix(hpdl_fp8_format f, int rows, int ld, float scale, hpdl_rng *r) {
    std::vector<float> x((size_t)rows * ld);
    std::vector<uint8_t> q(x.size());
    for (size_t i = 0; i < x.size(); i++) x[i] = (float)hpdl_rng_normal(r);
    if (f == HPDL_FP8_E4M3) HPDL_CHECK(hpdl_fp8_cast_e4m3_f32(x.data(), (int64_t)x.size(), scale, (hpdl_e4m3 *)q.data(), NULL));
    else HPDL_CHECK(hpdl_fp8_cast_e5m2_f32(x.data(), (int64_t)x.size(), scale, (hpdl_e5m2 *)q.data(), NULL));
    return q;
}

static double as_double(float x) { return x; }
static double as_double(hpdl_f16 x) { return hpdl_f16_to_f32(x); }
static double as_double(hpdl_bf16 x) { return hpdl_bf16_to_f32(x); }
static uint32_t bits_of(float x) { return hpdl__f32_bits(x); }
static uint32_t bits_of(hpdl_f16 x) { return x.bits; }
static uint32_t bits_of(hpdl_bf16 x) { return x.bits; }
static double out_ulp(float) { return 0; } /* besides the sums' error */
static double out_ulp(hpdl_f16) { return ldexp(1, -10); }
static double out_ulp(hpdl_bf16) { return ldexp(1, -7); }

static hpdl_status cpu_gemm(int M, int N, int K, const uint8_t *A, hpdl_fp8_format fa, int lda, const uint8_t *B,
                            hpdl_fp8_format fb, int ldb, hpdl_fp8_scales s, float *C, int ldc, float *amax) {
    return hpdl_fp8_gemm_f32(M, N, K, A, fa, lda, B, fb, ldb, s, C, ldc, amax);
}

static hpdl_status gpu_gemm(int M, int N, int K, const void *A, hpdl_fp8_format fa, int lda, const void *B,
                            hpdl_fp8_format fb, int ldb, const hpdl_cuda_fp8_scales *s, float *C, int ldc) {
    return hpdl_cuda_fp8_gemm_f32(M, N, K, A, fa, lda, B, fb, ldb, s, C, ldc, 0);
}
static hpdl_status gpu_gemm(int M, int N, int K, const void *A, hpdl_fp8_format fa, int lda, const void *B,
                            hpdl_fp8_format fb, int ldb, const hpdl_cuda_fp8_scales *s, hpdl_f16 *C, int ldc) {
    return hpdl_cuda_fp8_gemm_f16(M, N, K, A, fa, lda, B, fb, ldb, s, C, ldc, 0);
}
static hpdl_status gpu_gemm(int M, int N, int K, const void *A, hpdl_fp8_format fa, int lda, const void *B,
                            hpdl_fp8_format fb, int ldb, const hpdl_cuda_fp8_scales *s, hpdl_bf16 *C, int ldc) {
    return hpdl_cuda_fp8_gemm_bf16(M, N, K, A, fa, lda, B, fb, ldb, s, C, ldc, 0);
}

typedef struct gemm_case {
    int M, N, K, lda_pad, ldc_pad;
    int row_step; /* CPU reference on every row_step-th row (and the last): large shapes */
} gemm_case;

/* The largest |C - CPU| / accumulation_bound (below) seen (printed by the tests). */
static double g_worst;

/* An FP8 code's value (hpdl.h's decoding table, built once per format). */
static double fp8_value(uint8_t code, hpdl_fp8_format f) {
    static float value[2][256];
    static int built;
    if (!built) {
        hpdl__fp8_table(HPDL_FP8_E4M3, value[HPDL_FP8_E4M3]);
        hpdl__fp8_table(HPDL_FP8_E5M2, value[HPDL_FP8_E5M2]);
        built = 1;
    }
    return value[f][code];
}

/* What the tensor cores' FP8 accumulation may lose on C[i][j]. A wgmma k32
   step does not round each addition as f32 would: it aligns its 32
   products and the accumulator to the largest exponent among them and keeps
   about 13 fraction bits, truncating the rest (H100, measured 2026-11-26:
   C = 11.6758 where the exact sum is 11.6886 after 9 k32 steps; and
   58.875 for 59.047 in one step whose products reach a few hundred;
   DeepSeek-V3's report says the same of the H800, and cuBLASLt's
   fast-accumulation mode behaves alike). With M the step's largest
   magnitude (accumulator before and after, any product) and u = 2^-10 M
   (eight times 2^-13 to cover the power-of-two alignment and the last
   rounding), each product loses at most min(|p|, u) and the accumulator
   and the step's result u each. Summed over the steps; returned in double,
   unscaled. A missing or doubled k step moves C by a whole step's sum,
   far more (a step's sum is ~sqrt(32) products, the bound ~34 u). */
static double accumulation_bound(const uint8_t *a, hpdl_fp8_format fa, const uint8_t *b, hpdl_fp8_format fb, int K) {
    double acc = 0, bound = 0;
    for (int k0 = 0; k0 < K; k0 += 32) {
        const int k1 = k0 + 32 < K ? k0 + 32 : K;
        double top = fabs(acc), step = 0, lost = 0;
        for (int k = k0; k < k1; k++) {
            const double p = fp8_value(a[k], fa) * fp8_value(b[k], fb);
            step += p;
            top = fmax(top, fabs(p));
        }
        acc += step;
        top = fmax(top, fabs(acc));
        for (int k = k0; k < k1; k++) lost += fmin(fabs(fp8_value(a[k], fa) * fp8_value(b[k], fb)), ldexp(top, -10));
        bound += lost + 2 * ldexp(top, -10);
    }
    return bound;
}

/* One case for one pair of formats and C's type T: C (poisoned, padding
   too) against the CPU twin on the checked rows, within what the tensor
   cores' accumulation may lose (accumulation_bound, scaled as C) plus an
   ulp of T; every element of C written (no poison left), the
   padding untouched; amax against the CPU's (all rows checked: within the
   elements' tolerance) and against max |C| / out_scale of the GPU's own
   output (within C's rounding). */
template <typename T> static void check_gemm(const gemm_case &c, hpdl_fp8_format fa, hpdl_fp8_format fb, hpdl_rng *r) {
    const int M = c.M, N = c.N, K = c.K, lda = K + c.lda_pad, ldc = N + c.ldc_pad;
    const float a_scale = fa == HPDL_FP8_E4M3 ? 64.0f : 4096.0f, b_scale = fb == HPDL_FP8_E4M3 ? 80.0f : 2048.0f;
    hpdl_fp8_scales hs;
    hpdl_cuda_fp8_scales ds;
    std::vector<uint8_t> A = fp8_matrix(fa, M, lda, a_scale, r), B = fp8_matrix(fb, N, lda, b_scale, r);
    std::vector<float> want(N);
    uint8_t *dA = upload(A), *dB = upload(B);
    T *dC = poisoned<T>((size_t)M * ldc);
    float cpu_amax = 0, row_amax, gpu_amax;
    double got_top = 0, lost_top = 0;
    int bad = 0, unwritten = 0, padding = 0, i, j;
    hs.a_scale_inv = 1.0f / a_scale; hs.b_scale_inv = 1.0f / b_scale; hs.out_scale = 0.5f;
    const double alpha = (double)hs.a_scale_inv * hs.b_scale_inv * hs.out_scale; /* C = alpha x the sums */
    ds.a_scale_inv = device_float(hs.a_scale_inv); ds.b_scale_inv = device_float(hs.b_scale_inv);
    ds.out_scale = device_float(hs.out_scale); ds.amax = device_float(-1);
    HPDL_EXPECT(gpu_gemm(M, N, K, dA, fa, lda, dB, fb, lda, &ds, dC, ldc) == HPDL_OK);
    std::vector<T> got = download(dC, (size_t)M * ldc);
    gpu_amax = read_float(ds.amax);
    for (i = 0; i < M; i++) {
        for (j = 0; j < ldc; j++) {
            const uint32_t poison = sizeof(T) == 4 ? 0xffffffffu : 0xffffu;
            if (j < N) unwritten += bits_of(got[(size_t)i * ldc + j]) == poison;
            else padding += bits_of(got[(size_t)i * ldc + j]) != poison;
            if (j < N) got_top = fmax(got_top, fabs(as_double(got[(size_t)i * ldc + j])));
        }
        if (i % c.row_step != 0 && i != M - 1) continue;
        HPDL_CHECK(cpu_gemm(1, N, K, &A[(size_t)i * lda], fa, lda, B.data(), fb, lda, hs, want.data(), N, &row_amax));
        cpu_amax = row_amax > cpu_amax ? row_amax : cpu_amax;
        for (j = 0; j < N; j++) {
            double g = as_double(got[(size_t)i * ldc + j]), w = want[j];
            const double lost = accumulation_bound(&A[(size_t)i * lda], fa, &B[(size_t)j * lda], fb, K) * alpha;
            lost_top = fmax(lost_top, lost);
            if (sizeof(T) == 4 && lost > 0) g_worst = fmax(g_worst, fabs(g - w) / lost);
            if (!(fabs(g - w) <= lost + out_ulp(T()) * fabs(w) + 1e-6)) {
                if (bad++ < 3) fprintf(stderr, "    C[%d][%d] = %.8g, CPU %.8g\n", i, j, g, w);
            }
        }
    }
    HPDL_EXPECT(bad == 0 && unwritten == 0 && padding == 0);
    if (c.row_step == 1) /* the largest output's own error, in amax's units (before out_scale) */
        HPDL_EXPECT(fabs(gpu_amax - cpu_amax) <= lost_top / hs.out_scale + 1e-6 * cpu_amax);
    HPDL_EXPECT(fabs(gpu_amax - got_top / hs.out_scale) <= (1e-5 + out_ulp(T())) * gpu_amax);
    if (bad || unwritten || padding)
        fprintf(stderr, "    %dx%dx%d (lda %d, ldc %d) formats %d x %d, %zu-byte C: %d wrong, %d unwritten, %d padding\n",
                M, N, K, lda, ldc, (int)fa, (int)fb, sizeof(T), bad, unwritten, padding);
    hpdl_cuda_free(dA); hpdl_cuda_free(dB); hpdl_cuda_free(dC);
    hpdl_cuda_free((void *)ds.a_scale_inv); hpdl_cuda_free((void *)ds.b_scale_inv);
    hpdl_cuda_free((void *)ds.out_scale); hpdl_cuda_free(ds.amax);
}

/* Small and odd shapes (M, N, K not multiples of 128 x 256 x 128; K a
   multiple of 16), every pair of formats, every C type. */
static void test_gemm_vs_cpu(void) {
    static const gemm_case cases[] = {
        {1, 1, 16, 0, 0, 1},      {129, 257, 272, 16, 0, 1}, {77, 512, 48, 0, 8, 1}, /* 512 + 8: the TMA store, padding */
        {300, 130, 1040, 0, 3, 1},
    };
    hpdl_rng r;
    int i, fa, fb;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    if (!hopper()) HPDL_SKIP("no Hopper GPU, or no sm_90a code in this binary");
    hpdl_rng_seed(&r, 21);
    for (i = 0; i < HPDL_COUNT(cases); i++)
        for (fa = 0; fa < 2; fa++)
            for (fb = 0; fb < 2; fb++) {
                check_gemm<float>(cases[i], (hpdl_fp8_format)fa, (hpdl_fp8_format)fb, &r);
                check_gemm<hpdl_f16>(cases[i], (hpdl_fp8_format)fa, (hpdl_fp8_format)fb, &r);
                check_gemm<hpdl_bf16>(cases[i], (hpdl_fp8_format)fa, (hpdl_fp8_format)fb, &r);
            }
    printf("    f32 C: largest |C - CPU| / accumulation bound %.3f\n", g_worst);
}

/* Large shapes, the CPU on sampled rows: 2000 x 2800 is 176 tiles of 128 x
   256, so on a 132-SM GPU the last 44 are shared out by k-steps (stream-K,
   K = 3072: 24 k-steps), and the partial sums and amax go through it. */
static void test_gemm_large(void) {
    static const gemm_case big = {2000, 2800, 3072, 0, 0, 41}, tall = {4100, 272, 1024, 32, 16, 97};
    hpdl_rng r;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    if (!hopper()) HPDL_SKIP("no Hopper GPU, or no sm_90a code in this binary");
    hpdl_rng_seed(&r, 22);
    check_gemm<hpdl_bf16>(big, HPDL_FP8_E4M3, HPDL_FP8_E4M3, &r);
    check_gemm<float>(big, HPDL_FP8_E5M2, HPDL_FP8_E4M3, &r);
    check_gemm<hpdl_f16>(tall, HPDL_FP8_E4M3, HPDL_FP8_E5M2, &r);
    printf("    f32 C: largest |C - CPU| / accumulation bound %.3f\n", g_worst);
}

/* NULL scales: all 1, no amax; K = 0: zeros; refusals. */
static void test_gemm_edges_and_arguments(void) {
    const int M = 3, N = 40, K = 32;
    hpdl_rng r;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 23);
    std::vector<uint8_t> A = fp8_matrix(HPDL_FP8_E4M3, M, K, 20.0f, &r), B = fp8_matrix(HPDL_FP8_E4M3, N, K, 20.0f, &r);
    std::vector<float> want((size_t)M * N);
    hpdl_fp8_scales ones;
    hpdl_cuda_fp8_scales only_amax;
    uint8_t *dA = upload(A), *dB = upload(B);
    float *dC = poisoned<float>((size_t)M * N), *damax = device_float(-1);
    ones.a_scale_inv = ones.b_scale_inv = ones.out_scale = 1.0f;
    memset(&only_amax, 0, sizeof only_amax);
    only_amax.amax = damax;
    HPDL_EXPECT(hpdl_cuda_fp8_gemm_f32(M, N, K, dA, (hpdl_fp8_format)2, K, dB, HPDL_FP8_E4M3, K, NULL, dC, N, 0) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_fp8_gemm_f32(-1, N, K, dA, HPDL_FP8_E4M3, K, dB, HPDL_FP8_E4M3, K, NULL, dC, N, 0) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_fp8_gemm_f32(M, N, K, dA, HPDL_FP8_E4M3, K - 1, dB, HPDL_FP8_E4M3, K, NULL, dC, N, 0) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_fp8_gemm_f32(M, N, K, NULL, HPDL_FP8_E4M3, K, dB, HPDL_FP8_E4M3, K, NULL, dC, N, 0) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_fp8_gemm_f32(M, N, K, dA, HPDL_FP8_E4M3, K, dB, HPDL_FP8_E4M3, K, NULL, dC, N - 1, 0) ==
                HPDL_ERR_INVALID);
    {
        std::vector<float> untouched = download(dC, (size_t)M * N);
        int written = 0;
        for (size_t i = 0; i < untouched.size(); i++) written += !isnan(untouched[i]); /* the poison 0xffffffff is a NaN */
        HPDL_EXPECT(written == 0);
    }
    if (!hopper()) {
        HPDL_EXPECT(hpdl_cuda_fp8_gemm_f32(M, N, K, dA, HPDL_FP8_E4M3, K, dB, HPDL_FP8_E4M3, K, NULL, dC, N, 0) ==
                    HPDL_ERR_UNSUPPORTED);
        hpdl_cuda_free(dA); hpdl_cuda_free(dB); hpdl_cuda_free(dC); hpdl_cuda_free(damax);
        HPDL_SKIP("no Hopper GPU, or no sm_90a code in this binary: only the refusals checked");
    }
    /* rows of 24 bytes: TMA cannot read them */
    HPDL_EXPECT(hpdl_cuda_fp8_gemm_f32(M, N, 24, dA, HPDL_FP8_E4M3, 24, dB, HPDL_FP8_E4M3, K, NULL, dC, N, 0) ==
                HPDL_ERR_UNSUPPORTED);
    HPDL_EXPECT(hpdl_cuda_fp8_gemm_f32(M, N, K, dA, HPDL_FP8_E4M3, K, dB, HPDL_FP8_E4M3, K, &only_amax, dC, N, 0) == HPDL_OK);
    HPDL_CHECK(hpdl_fp8_gemm_f32(M, N, K, A.data(), HPDL_FP8_E4M3, K, B.data(), HPDL_FP8_E4M3, K, ones, want.data(), N, NULL));
    {
        std::vector<float> got = download(dC, (size_t)M * N);
        double top = 0, top_lost = 0;
        for (size_t i = 0; i < got.size(); i++) {
            const double lost = accumulation_bound(&A[i / N * K], HPDL_FP8_E4M3, &B[i % N * K], HPDL_FP8_E4M3, K);
            HPDL_EXPECT(fabs(got[i] - want[i]) <= lost);
            top = fmax(top, fabs(want[i]));
            top_lost = fmax(top_lost, lost);
        }
        HPDL_EXPECT(fabs(read_float(damax) - top) <= top_lost);
    }
    HPDL_EXPECT(hpdl_cuda_fp8_gemm_f32(M, N, 0, dA, HPDL_FP8_E4M3, K, dB, HPDL_FP8_E4M3, K, &only_amax, dC, N, 0) == HPDL_OK);
    {
        std::vector<float> got = download(dC, (size_t)M * N);
        int nonzero = 0;
        for (size_t i = 0; i < got.size(); i++) nonzero += got[i] != 0.0f;
        HPDL_EXPECT(nonzero == 0 && read_float(damax) == 0.0f);
    }
    hpdl_cuda_free(dA); hpdl_cuda_free(dB); hpdl_cuda_free(dC); hpdl_cuda_free(damax);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_casts_vs_cpu),
        HPDL_TEST(test_cast_nan_and_arguments),
        HPDL_TEST(test_gemm_vs_cpu),
        HPDL_TEST(test_gemm_large),
        HPDL_TEST(test_gemm_edges_and_arguments),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
