/* GPU tests of FP8: the casts (bits and amax against hpdl.h's conversions)
   and the FP8 GEMM on Hopper against its CPU twin hpdl_fp8_gemm_<t>, every
   pair of formats, f32/f16/bf16 outputs, odd shapes, poisoned outputs; the
   fused cast + transpose; FP8 training of the MLP (hpdl_cuda_mlp_*_fp8)
   against hpdl_mlp_train_step_fp8_f32, stage by stage and whole steps. */
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
        double p[32], top = fabs(acc), step = 0, lost = 0;
        for (int k = k0; k < k1; k++) {
            p[k - k0] = fp8_value(a[k], fa) * fp8_value(b[k], fb);
            step += p[k - k0];
            top = fmax(top, fabs(p[k - k0]));
        }
        acc += step;
        top = fmax(top, fabs(acc));
        for (int k = 0; k < k1 - k0; k++) lost += fmin(fabs(p[k]), ldexp(top, -10));
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

/* ---- cast_transpose ------------------------------------------------------------------ */

/* The CPU's codes of x (rows x cols, row stride ldx) at scale s, packed
   rows x cols, and their amax. */
static std::vector<uint8_t> cpu_codes(hpdl_fp8_format f, int rows, int cols, const float *x, int ldx, float s,
                                      float *amax) {
    std::vector<float> packed((size_t)rows * cols);
    std::vector<uint8_t> q(packed.size());
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) packed[(size_t)r * cols + c] = x[(size_t)r * ldx + c];
    if (f == HPDL_FP8_E4M3) HPDL_CHECK(hpdl_fp8_cast_e4m3_f32(packed.data(), (int64_t)packed.size(), s, (hpdl_e4m3 *)q.data(), amax));
    else HPDL_CHECK(hpdl_fp8_cast_e5m2_f32(packed.data(), (int64_t)packed.size(), s, (hpdl_e5m2 *)q.data(), amax));
    return q;
}

/* Codes q (rows x ldq) and qt (cols x ldqt) that differ from the CPU's
   cast of x and its transpose, zero codes expected in the padding (q's
   columns >= cols, qt's columns >= rows); either may be empty (not made). */
static int codes_differ(hpdl_fp8_format f, int rows, int cols, const float *x, int ldx, float s,
                        const std::vector<uint8_t> &q, int ldq, const std::vector<uint8_t> &qt, int ldqt) {
    const std::vector<uint8_t> want = cpu_codes(f, rows, cols, x, ldx, s, NULL);
    int bad = 0;
    for (int r = 0; r < rows && !q.empty(); r++)
        for (int c = 0; c < ldq; c++) bad += q[(size_t)r * ldq + c] != (c < cols ? want[(size_t)r * cols + c] : 0);
    for (int c = 0; c < cols && !qt.empty(); c++)
        for (int r = 0; r < ldqt; r++) bad += qt[(size_t)c * ldqt + r] != (r < rows ? want[(size_t)r * cols + c] : 0);
    return bad;
}

/* Odd shapes, a row stride wider than the rows, padding to 16 and beyond,
   both formats, values of every range (cast_inputs): every code of q and
   qt and the amax equal to the CPU's; nothing written past q's and qt's
   rows; q alone and qt alone. */
static void test_cast_transpose_vs_cpu(void) {
    static const int shapes[][6] = {/* rows, cols, ldx, ldq, ldqt, which: 3 both, 1 q, 2 qt */
                                    {64, 784, 784, 784, 64, 3}, {37, 100, 103, 112, 48, 3}, {1, 10, 10, 16, 16, 3},
                                    {130, 33, 33, 64, 144, 3}, {29, 7, 7, 16, 32, 1}, {45, 70, 71, 80, 48, 2}};
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    for (int i = 0; i < HPDL_COUNT(shapes); i++)
        for (int f = 0; f < 2; f++) {
            const int rows = shapes[i][0], cols = shapes[i][1], ldx = shapes[i][2], ldq = shapes[i][3],
                      ldqt = shapes[i][4], which = shapes[i][5];
            const float s = f == HPDL_FP8_E4M3 ? 3.75f : 300.0f;
            std::vector<float> x = cast_inputs((size_t)rows * ldx > 64 ? (size_t)rows * ldx : 64, 40 + i); /* its specials sit below 39 */
            float *dx = upload(x), *dscale = device_float(s), *damax = device_float(-1), want_amax = 0;
            uint8_t *dq = which & 1 ? poisoned<uint8_t>((size_t)rows * ldq + 1) : NULL;
            uint8_t *dqt = which & 2 ? poisoned<uint8_t>((size_t)cols * ldqt + 1) : NULL;
            hpdl_status st = f == HPDL_FP8_E4M3
                                 ? hpdl_cuda_fp8_cast_transpose_e4m3_f32(rows, cols, dx, ldx, dscale, (hpdl_e4m3 *)dq, ldq,
                                                                         (hpdl_e4m3 *)dqt, ldqt, damax, 0)
                                 : hpdl_cuda_fp8_cast_transpose_e5m2_f32(rows, cols, dx, ldx, dscale, (hpdl_e5m2 *)dq, ldq,
                                                                         (hpdl_e5m2 *)dqt, ldqt, damax, 0);
            HPDL_EXPECT(st == HPDL_OK);
            std::vector<uint8_t> q = dq ? download(dq, (size_t)rows * ldq + 1) : std::vector<uint8_t>();
            std::vector<uint8_t> qt = dqt ? download(dqt, (size_t)cols * ldqt + 1) : std::vector<uint8_t>();
            const int bad = codes_differ((hpdl_fp8_format)f, rows, cols, x.data(), ldx, s, q, ldq, qt, ldqt);
            cpu_codes((hpdl_fp8_format)f, rows, cols, x.data(), ldx, s, &want_amax);
            HPDL_EXPECT(bad == 0);
            HPDL_EXPECT(q.empty() || q.back() == 0xff);
            HPDL_EXPECT(qt.empty() || qt.back() == 0xff);
            HPDL_EXPECT(hpdl__f32_bits(read_float(damax)) == hpdl__f32_bits(want_amax));
            if (bad) fprintf(stderr, "    %dx%d (ldq %d, ldqt %d) format %d: %d codes differ\n", rows, cols, ldq, ldqt, f, bad);
            hpdl_cuda_free(dx); hpdl_cuda_free(dscale); hpdl_cuda_free(damax); hpdl_cuda_free(dq); hpdl_cuda_free(dqt);
        }
}

static void test_cast_transpose_arguments(void) {
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    std::vector<float> x(12, 1.5f);
    float *dx = upload(x), *damax = device_float(-1);
    hpdl_e4m3 *dq = poisoned<hpdl_e4m3>(64), *dqt = poisoned<hpdl_e4m3>(64);
    HPDL_EXPECT(hpdl_cuda_fp8_cast_transpose_e4m3_f32(3, 4, NULL, 4, NULL, dq, 16, dqt, 16, damax, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_fp8_cast_transpose_e4m3_f32(3, 4, dx, 3, NULL, dq, 16, dqt, 16, damax, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_fp8_cast_transpose_e4m3_f32(3, 4, dx, 4, NULL, dq, 3, dqt, 16, damax, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_fp8_cast_transpose_e4m3_f32(3, 4, dx, 4, NULL, dq, 16, dqt, 2, damax, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_fp8_cast_transpose_e4m3_f32(3, 4, dx, 4, NULL, NULL, 16, NULL, 16, damax, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_fp8_cast_transpose_e5m2_f32(-1, 4, dx, 4, NULL, (hpdl_e5m2 *)dq, 16, NULL, 16, damax, 0) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(read_float(damax) == -1.0f);
    std::vector<uint8_t> untouched = download((const uint8_t *)dq, 64);
    int written = 0;
    for (size_t i = 0; i < untouched.size(); i++) written += untouched[i] != 0xff;
    HPDL_EXPECT(written == 0);
    hpdl_cuda_free(dx); hpdl_cuda_free(damax); hpdl_cuda_free(dq); hpdl_cuda_free(dqt);
}

/* ---- FP8 training of the MLP ---------------------------------------------------------- */

static int pad16(int n) { return (n + 15) / 16 * 16; }

/* How far an FP8 GEMM's f32 output may be from the CPU twin's: C (M x N)
   against hpdl_fp8_gemm_f32 of the same codes a (M x K) and b (N x K,
   K = lda = ldb) with inverse scales sa, sb, each element within
   accumulation_bound (the tensor cores' k32 steps) times sa sb; mask (M x
   N, may be NULL): C is the GEMM's output where mask > 0, else 0 (ReLU's
   derivative); bias (N, may be NULL): C is relu(GEMM + bias), with an f32
   rounding of the sum allowed; and 2^-20 of each value for the f32
   roundings of the CPU's sums and of the output. Returns the elements out
   of bounds; *worst: the largest |C - CPU| / bound. */
static int gemm_outside(int M, int N, int K, const std::vector<uint8_t> &a, hpdl_fp8_format fa,
                        const std::vector<uint8_t> &b, hpdl_fp8_format fb, float sa, float sb, const float *bias,
                        const float *mask, const std::vector<float> &C, double *worst) {
    std::vector<float> z((size_t)M * N);
    hpdl_fp8_scales s;
    int bad = 0;
    s.a_scale_inv = sa; s.b_scale_inv = sb; s.out_scale = 1.0f;
    HPDL_CHECK(hpdl_fp8_gemm_f32(M, N, K, a.data(), fa, K, b.data(), fb, K, s, z.data(), N, NULL));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            const size_t e = (size_t)i * N + j;
            double want = z[e], lost = accumulation_bound(&a[(size_t)i * K], fa, &b[(size_t)j * K], fb, K) * sa * sb;
            if (bias) {
                want = fmax(0.0, (double)(z[e] + bias[j]));
                lost += ldexp(fabs(z[e]) + fabs(bias[j]), -23);
            } else if (mask && !(mask[e] > 0)) {
                want = 0, lost = 0;
            }
            lost += ldexp(fabs(want), -20); /* the CPU's own f32 sums, the output's rounding */
            if (!(fabs(C[e] - want) <= lost + 1e-30)) {
                if (bad++ < 3) fprintf(stderr, "    [%d][%d] = %.8g, CPU %.8g (bound %.3g)\n", i, j, C[e], want, lost);
            }
            if (lost > 0) *worst = fmax(*worst, fabs(C[e] - want) / lost);
        }
    return bad;
}

typedef struct fp8_net {
    int n_widths, widths[4], batch;
} fp8_net;

/* What one FP8 step of the GPU model read and wrote (downloaded after it),
   with the weights and scaling state it started from. */
typedef struct fp8_step_view {
    std::vector<float> A[4], D[3], dW[3], db[3], W_before[3], W_after[3], amax;
    std::vector<uint8_t> in_q[3], in_t[3], w_q[3], w_t[3], g_q[3], g_t[3];
} fp8_step_view;

static fp8_step_view view_after_step(const hpdl_cuda_mlp_fp8 *g, const hpdl_mlp_f32 *before, const hpdl_mlp_f32 *after,
                                     int batch) {
    const hpdl__cmlp_fp8 *f = &g->fp8;
    const int L = g->n_layers, B = batch, PB = pad16(batch);
    fp8_step_view v;
    for (int l = 0; l <= L; l++) v.A[l] = download(g->A[l], (size_t)B * g->widths[l]);
    for (int l = 0; l < L; l++) {
        const int in = g->widths[l], out = g->widths[l + 1];
        v.D[l] = download(g->D[l], (size_t)B * out);
        v.dW[l] = download(g->dW[l], (size_t)in * out);
        v.db[l] = download(g->db[l], (size_t)out);
        v.W_before[l].assign(before->W[l], before->W[l] + (size_t)in * out);
        v.W_after[l].assign(after->W[l], after->W[l] + (size_t)in * out);
        v.in_q[l] = download(f->in_q[l], (size_t)B * pad16(in));
        v.in_t[l] = download(f->in_t[l], (size_t)in * PB);
        v.w_q[l] = download(f->w_q[l], (size_t)in * pad16(out));
        v.w_t[l] = download(f->w_t[l], (size_t)out * pad16(in));
        v.g_q[l] = download(f->g_q[l], (size_t)B * pad16(out));
        v.g_t[l] = download(f->g_t[l], (size_t)out * PB);
    }
    v.amax = download(f->amax, (size_t)3 * L);
    return v;
}

/* The largest |x|, as the casts measure it. */
static float amax_of(const std::vector<float> &x) {
    float a = 0;
    HPDL_CHECK(hpdl_fp8_amax_f32(x.data(), (int64_t)x.size(), &a));
    return a;
}

/* Every stage of one GPU step against its CPU twin on the stage's own
   inputs (what the GPU read), so that no difference carries over from one
   stage into the next: the casts and transposes bit for bit (scales from
   `was`, the state before the step), each GEMM within the accumulation
   bound, the amaxes and the rolled histories exactly (`now`: the state
   after), the loss, the logits' gradient and db to f32 rounding, and the
   SGD update made from the GPU's own dW. Returns the expectations failed. */
static void check_step_stages(const fp8_net &n, const fp8_step_view &v, const hpdl_mlp_f32 *m, const hpdl_mlp_fp8 *was,
                              const hpdl_mlp_fp8 *now, const int32_t *labels, double loss, float lr, double *worst) {
    const int L = n.n_widths - 1, B = n.batch, PB = pad16(B);
    hpdl_mlp_fp8 want = *was; /* only its delayed states are used */
    double want_loss = 0;
    for (int l = 0; l < L; l++) {
        const int in = n.widths[l], out = n.widths[l + 1], pin = pad16(in), pout = pad16(out);
        const float s_in = was->input[l].scale, s_w = was->weight[l].scale, s_g = was->grad[l].scale;
        HPDL_EXPECT(codes_differ(HPDL_FP8_E4M3, B, in, v.A[l].data(), in, s_in, v.in_q[l], pin, v.in_t[l], PB) == 0);
        HPDL_EXPECT(codes_differ(HPDL_FP8_E4M3, in, out, v.W_before[l].data(), out, s_w, v.w_q[l], pout, v.w_t[l], pin) == 0);
        HPDL_EXPECT(codes_differ(HPDL_FP8_E5M2, B, out, v.D[l].data(), out, s_g, v.g_q[l], pout, v.g_t[l], PB) == 0);
        HPDL_EXPECT(hpdl__f32_bits(v.amax[3 * l]) == hpdl__f32_bits(amax_of(v.A[l])));
        HPDL_EXPECT(hpdl__f32_bits(v.amax[3 * l + 1]) == hpdl__f32_bits(amax_of(v.W_before[l])));
        HPDL_EXPECT(hpdl__f32_bits(v.amax[3 * l + 2]) == hpdl__f32_bits(amax_of(v.D[l])));
        HPDL_CHECK(hpdl_fp8_delayed_record(&want.input[l], v.amax[3 * l]));
        HPDL_CHECK(hpdl_fp8_delayed_record(&want.weight[l], v.amax[3 * l + 1]));
        HPDL_CHECK(hpdl_fp8_delayed_record(&want.grad[l], v.amax[3 * l + 2]));
        HPDL_EXPECT(memcmp(&now->input[l], &want.input[l], sizeof want.input[l]) == 0);
        HPDL_EXPECT(memcmp(&now->weight[l], &want.weight[l], sizeof want.weight[l]) == 0);
        HPDL_EXPECT(memcmp(&now->grad[l], &want.grad[l], sizeof want.grad[l]) == 0);
        /* forward: A[l+1] = relu(in . W + b), the logits without their bias */
        HPDL_EXPECT(gemm_outside(B, out, pin, v.in_q[l], HPDL_FP8_E4M3, v.w_t[l], HPDL_FP8_E4M3, 1.0f / s_in, 1.0f / s_w,
                                 l < L - 1 ? m->b[l] : NULL, NULL, v.A[l + 1], worst) == 0);
        /* dW = in^T . dOut */
        HPDL_EXPECT(gemm_outside(in, out, PB, v.in_t[l], HPDL_FP8_E4M3, v.g_t[l], HPDL_FP8_E5M2, 1.0f / s_in, 1.0f / s_g,
                                 NULL, NULL, v.dW[l], worst) == 0);
        /* D[l-1] = (dOut . W^T) * relu'(A[l]) */
        if (l > 0)
            HPDL_EXPECT(gemm_outside(B, in, pout, v.g_q[l], HPDL_FP8_E5M2, v.w_q[l], HPDL_FP8_E4M3, 1.0f / s_g, 1.0f / s_w,
                                     NULL, v.A[l].data(), v.D[l - 1], worst) == 0);
        for (int j = 0; j < out; j++) { /* db: column sums of D[l] in f32, <= 64 roundings of 2^-24 */
            double sum = 0, mag = 0;
            for (int i = 0; i < B; i++) { sum += v.D[l][(size_t)i * out + j]; mag += fabs(v.D[l][(size_t)i * out + j]); }
            HPDL_EXPECT(fabs(v.db[l][j] - sum) <= 1e-5 * mag + 1e-30);
        }
        for (size_t e = 0; e < v.W_after[l].size(); e++) /* SGD from the GPU's dW (l2 = 0) */
            HPDL_EXPECT(fabs(v.W_after[l][e] - (v.W_before[l][e] - lr * v.dW[l][e])) <=
                        1e-6 * fabs(v.W_before[l][e]) + 1e-6 * lr * fabs(v.dW[l][e]) + 1e-30);
    }
    /* softmax + cross-entropy of the logits (+ bias), and their gradient / B: f32 on the GPU, whose
       rounding of z + b (|z| ~ 10: 1e-6) moves a probability by at most a quarter of that, and its exp */
    for (int i = 0; i < B; i++) {
        const int C = n.widths[L];
        double top = -INFINITY, sum = 0;
        std::vector<double> z(C);
        for (int j = 0; j < C; j++) z[j] = (double)v.A[L][(size_t)i * C + j] + m->b[L - 1][j], top = fmax(top, z[j]);
        for (int j = 0; j < C; j++) sum += exp(z[j] - top);
        want_loss += (log(sum) + top - z[labels[i]]) / B;
        for (int j = 0; j < C; j++)
            HPDL_EXPECT(fabs(v.D[L - 1][(size_t)i * C + j] - (exp(z[j] - top) / sum - (j == labels[i])) / B) <= 1e-5 / B);
    }
    HPDL_EXPECT(fabs(loss - want_loss) <= 1e-5 * want_loss);
}

static void fill_batch(hpdl_rng *r, int batch, int in, int classes, std::vector<float> *X, std::vector<int32_t> *y) {
    X->resize((size_t)batch * in);
    y->resize((size_t)batch);
    for (size_t i = 0; i < X->size(); i++) (*X)[i] = (float)hpdl_rng_normal(r);
    for (int i = 0; i < batch; i++) (*y)[i] = (int32_t)hpdl_rng_below(r, (uint64_t)classes);
}

/* The GPU FP8 step, stage by stage, against hpdl.h's twin (see
   check_step_stages): the course's 784-128-10 at batch 64 (784 is a
   multiple of 16, 10 classes are padded to 16) and a 3-layer net whose
   widths and batch all need padding. The delayed scales start from a CPU
   run of three steps, so they are not 1; two GPU steps, the first run
   eagerly and captured, the second a replay of the captured graph. */
static void test_mlp_fp8_step_stages(void) {
    static const fp8_net nets[] = {{3, {784, 128, 10}, 64}, {4, {50, 72, 33, 7}, 29}};
    const float lr = 0.05f;
    double worst = 0;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    if (!hopper()) HPDL_SKIP("no Hopper GPU, or no sm_90a code in this binary");
    for (int k = 0; k < HPDL_COUNT(nets); k++) {
        const fp8_net &n = nets[k];
        const int L = n.n_widths - 1, in = n.widths[0], classes = n.widths[L];
        hpdl_mlp_f32 m, grad, before, after;
        hpdl_mlp_work_f32 w;
        hpdl_mlp_fp8 s, was, now;
        hpdl_cuda_mlp_fp8 g;
        hpdl_rng r;
        std::vector<float> X;
        std::vector<int32_t> y;
        hpdl_rng_seed(&r, 50 + k);
        HPDL_CHECK(hpdl_mlp_create_f32(&m, n.n_widths, n.widths, HPDL_ACT_RELU, 7 + k));
        HPDL_CHECK(hpdl_mlp_create_zero_f32(&grad, n.n_widths, n.widths, HPDL_ACT_RELU));
        HPDL_CHECK(hpdl_mlp_create_zero_f32(&before, n.n_widths, n.widths, HPDL_ACT_RELU));
        HPDL_CHECK(hpdl_mlp_create_zero_f32(&after, n.n_widths, n.widths, HPDL_ACT_RELU));
        HPDL_CHECK(hpdl_mlp_work_create_f32(&w, &m, n.batch));
        HPDL_CHECK(hpdl_mlp_fp8_create(&s, &m, n.batch, 16, 0));
        HPDL_CHECK(hpdl_mlp_fp8_create(&was, &m, n.batch, 16, 0));
        HPDL_CHECK(hpdl_mlp_fp8_create(&now, &m, n.batch, 16, 0));
        for (int step = 0; step < 3; step++) { /* the CPU twin's scales */
            fill_batch(&r, n.batch, in, classes, &X, &y);
            HPDL_CHECK(hpdl_mlp_train_step_fp8_f32(&m, &w, &grad, &s, n.batch, X.data(), y.data(), lr, 0, NULL));
        }
        HPDL_EXPECT(s.input[0].scale != 1.0f && s.grad[L - 1].scale != 1.0f);
        HPDL_CHECK(hpdl_cuda_mlp_create_fp8(&g, &m, n.batch));
        HPDL_CHECK(hpdl_cuda_mlp_fp8_upload_scaling(&g, &s));
        for (int step = 0; step < 2; step++) {
            double loss = -1;
            fill_batch(&r, n.batch, in, classes, &X, &y);
            float *dX = upload(X);
            int32_t *dy = upload(y);
            HPDL_CHECK(hpdl_cuda_mlp_download_fp8(&g, &before));
            HPDL_CHECK(hpdl_cuda_mlp_fp8_download_scaling(&g, &was));
            HPDL_EXPECT(hpdl_cuda_mlp_train_step_fp8(&g, n.batch, dX, dy, lr, 0, &loss) == HPDL_OK);
            HPDL_CHECK(hpdl_cuda_mlp_download_fp8(&g, &after));
            HPDL_CHECK(hpdl_cuda_mlp_fp8_download_scaling(&g, &now));
            check_step_stages(n, view_after_step(&g, &before, &after, n.batch), &before, &was, &now, y.data(), loss, lr,
                              &worst);
            hpdl_cuda_free(dX); hpdl_cuda_free(dy);
        }
        HPDL_EXPECT(g.use_graphs == 1 && g.graphs[0].exec != NULL && g.graphs[0].batch == n.batch); /* replayed */
        hpdl_cuda_mlp_destroy_fp8(&g);
        hpdl_mlp_fp8_destroy(&s); hpdl_mlp_fp8_destroy(&was); hpdl_mlp_fp8_destroy(&now);
        hpdl_mlp_work_destroy_f32(&w);
        hpdl_mlp_destroy_f32(&m); hpdl_mlp_destroy_f32(&grad); hpdl_mlp_destroy_f32(&before); hpdl_mlp_destroy_f32(&after);
    }
    printf("    GEMM stages: largest |GPU - CPU| / accumulation bound %.3f\n", worst);
}

/* ||a - b|| / ||b|| over one weight matrix's change from w0. */
static double update_difference(const float *a, const float *b, const float *w0, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += ((double)b[i] - w0[i]) * ((double)b[i] - w0[i]);
    }
    return sqrt(num / den);
}

/* Whole steps, GPU and CPU twin from the same weights and empty histories
   on the same three batches (784-128-10, batch 64). The two differ only
   where the tensor cores' sums round differently from the CPU's f32 sums,
   but such a difference can move a later cast by one FP8 code and so
   reaches everything downstream; the two runs are then two FP8 roundings
   of one computation, no further apart than FP8 is from f32: the bounds of
   tests/test_fp8_train.c (loss 2^-4, weight gradients 2^-2, here on the
   weights' change over the steps). After the first step the roles whose
   tensors are the same on both (the input of layer 0, the weights) hold
   the same history and scale. The differences are printed. */
static void test_mlp_fp8_vs_cpu_twin(void) {
    const int widths[3] = {784, 128, 10}, B = 64, steps = 3;
    const float lr = 0.05f;
    hpdl_mlp_f32 m, m0, grad, got;
    hpdl_mlp_work_f32 w;
    hpdl_mlp_fp8 s, gs;
    hpdl_cuda_mlp_fp8 g;
    hpdl_rng r;
    std::vector<float> X;
    std::vector<int32_t> y;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    if (!hopper()) HPDL_SKIP("no Hopper GPU, or no sm_90a code in this binary");
    hpdl_rng_seed(&r, 60);
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 3));
    HPDL_CHECK(hpdl_mlp_create_f32(&m0, 3, widths, HPDL_ACT_RELU, 3));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&got, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_create_zero_f32(&grad, 3, widths, HPDL_ACT_RELU));
    HPDL_CHECK(hpdl_mlp_work_create_f32(&w, &m, B));
    HPDL_CHECK(hpdl_mlp_fp8_create(&s, &m, B, HPDL_CUDA_MLP_FP8_HISTORY, 0));
    HPDL_CHECK(hpdl_mlp_fp8_create(&gs, &m, B, HPDL_CUDA_MLP_FP8_HISTORY, 0));
    HPDL_CHECK(hpdl_cuda_mlp_create_fp8(&g, &m, B));
    for (int step = 0; step < steps; step++) {
        double lc = 0, lg = 0;
        fill_batch(&r, B, widths[0], widths[2], &X, &y);
        float *dX = upload(X);
        int32_t *dy = upload(y);
        HPDL_CHECK(hpdl_cuda_mlp_train_step_fp8(&g, B, dX, dy, lr, 0, &lg));
        HPDL_CHECK(hpdl_mlp_train_step_fp8_f32(&m, &w, &grad, &s, B, X.data(), y.data(), lr, 0, &lc));
        printf("    step %d: loss GPU %.6f, CPU %.6f\n", step, lg, lc);
        HPDL_EXPECT(fabs(lg - lc) <= 0.0625 * lc);
        if (step == 0) {
            HPDL_CHECK(hpdl_cuda_mlp_fp8_download_scaling(&g, &gs));
            HPDL_EXPECT(memcmp(&gs.input[0], &s.input[0], sizeof s.input[0]) == 0);
            for (int l = 0; l < 2; l++) HPDL_EXPECT(memcmp(&gs.weight[l], &s.weight[l], sizeof s.weight[l]) == 0);
        }
        hpdl_cuda_free(dX); hpdl_cuda_free(dy);
    }
    HPDL_CHECK(hpdl_cuda_mlp_download_fp8(&g, &got));
    for (int l = 0; l < 2; l++) {
        const double e = update_difference(got.W[l], m.W[l], m0.W[l], (size_t)widths[l] * widths[l + 1]);
        printf("    W%d: GPU's change over %d steps against the CPU twin's, relative difference %.3e\n", l, steps, e);
        HPDL_EXPECT(e <= 0.25);
    }
    hpdl_cuda_mlp_destroy_fp8(&g);
    hpdl_mlp_fp8_destroy(&s); hpdl_mlp_fp8_destroy(&gs);
    hpdl_mlp_work_destroy_f32(&w);
    hpdl_mlp_destroy_f32(&m); hpdl_mlp_destroy_f32(&m0); hpdl_mlp_destroy_f32(&grad); hpdl_mlp_destroy_f32(&got);
}

/* Whole epochs through the data-set path (graphs, shuffling, the last
   short batch: 250 = 7 x 32 + 26) on four Gaussian blobs: the loss falls
   and the f32 evaluation of the master weights separates them. */
static void test_mlp_fp8_epochs(void) {
    enum { N = 250, D = 20, C = 4, B = 32 };
    const int widths[3] = {D, 24, C};
    std::vector<float> X((size_t)N * D), centre((size_t)C * D);
    std::vector<int32_t> y(N);
    hpdl_mlp_f32 m;
    hpdl_cuda_mlp_fp8 g;
    hpdl_cuda_dataset d;
    hpdl_cuda_mlp_stats first = {}, last = {}, eval = {}; /* read even when a call above failed */
    hpdl_rng r;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    if (!hopper()) HPDL_SKIP("no Hopper GPU, or no sm_90a code in this binary");
    hpdl_rng_seed(&r, 70);
    for (size_t i = 0; i < centre.size(); i++) centre[i] = (float)(1.5 * hpdl_rng_normal(&r));
    for (int i = 0; i < N; i++) {
        y[i] = i % C;
        for (int j = 0; j < D; j++) X[(size_t)i * D + j] = centre[(size_t)y[i] * D + j] + (float)(0.7 * hpdl_rng_normal(&r));
    }
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 4));
    HPDL_CHECK(hpdl_cuda_mlp_create_fp8(&g, &m, B));
    HPDL_CHECK(hpdl_cuda_dataset_upload(&d, N, D, X.data(), N, y.data(), HPDL_DATA_RESIDENT, 0));
    HPDL_EXPECT(hpdl_cuda_mlp_train_epoch_fp8(&g, &d, B, 0.1, 0, 1, &first) == HPDL_OK);
    for (int e = 1; e < 15; e++) HPDL_EXPECT(hpdl_cuda_mlp_train_epoch_fp8(&g, &d, B, 0.1, 0, 1, &last) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_mlp_evaluate_fp8(&g, &d, &eval) == HPDL_OK);
    printf("    loss %.4f in the first epoch, %.4f in the 15th; accuracy %.3f (f32 evaluation)\n", first.loss, last.loss,
           eval.accuracy);
    HPDL_EXPECT(last.loss < 0.5 * first.loss && eval.accuracy >= 0.9);
    hpdl_cuda_dataset_destroy(&d);
    hpdl_cuda_mlp_destroy_fp8(&g);
    hpdl_mlp_destroy_f32(&m);
}

/* Bad arguments: HPDL_ERR_INVALID and nothing changed; without Hopper
   (or sm_90a code), create says HPDL_ERR_UNSUPPORTED. */
static void test_mlp_fp8_arguments(void) {
    const int widths[3] = {20, 8, 3}, other[3] = {20, 9, 3};
    hpdl_mlp_f32 m, m2;
    hpdl_mlp_fp8 s, s_other, wrong;
    hpdl_cuda_mlp_fp8 g;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 1));
    HPDL_CHECK(hpdl_mlp_create_f32(&m2, 3, other, HPDL_ACT_RELU, 1));
    HPDL_CHECK(hpdl_mlp_fp8_create(&s, &m, 8, 4, 1));
    HPDL_CHECK(hpdl_mlp_fp8_create(&wrong, &m, 8, 4, 1));
    HPDL_CHECK(hpdl_mlp_fp8_create(&s_other, &m2, 8, 4, 1));
    HPDL_EXPECT(hpdl_cuda_mlp_create_fp8(NULL, &m, 8) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_create_fp8(&g, NULL, 8) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_create_fp8(&g, &m, 0) == HPDL_ERR_INVALID);
    if (!hopper()) {
        HPDL_EXPECT(hpdl_cuda_mlp_create_fp8(&g, &m, 8) == HPDL_ERR_UNSUPPORTED);
        hpdl_mlp_fp8_destroy(&s); hpdl_mlp_fp8_destroy(&wrong); hpdl_mlp_fp8_destroy(&s_other);
        hpdl_mlp_destroy_f32(&m); hpdl_mlp_destroy_f32(&m2);
        HPDL_SKIP("no Hopper GPU, or no sm_90a code in this binary: only the refusals checked");
    }
    HPDL_CHECK(hpdl_cuda_mlp_create_fp8(&g, &m, 8));
    wrong.input[1].format = HPDL_FP8_E5M2; /* the kernels cast inputs to e4m3 */
    HPDL_EXPECT(hpdl_cuda_mlp_fp8_upload_scaling(&g, &wrong) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_fp8_upload_scaling(&g, &s_other) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_fp8_upload_scaling(&g, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_fp8_upload_scaling(NULL, &s) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_fp8_download_scaling(&g, &s_other) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_fp8_download_scaling(&g, NULL) == HPDL_ERR_INVALID);
    /* the refused calls left the GPU's state as create made it: empty, 16 long, margin 0 */
    HPDL_EXPECT(hpdl_cuda_mlp_fp8_download_scaling(&g, &s) == HPDL_OK);
    HPDL_EXPECT(s.input[1].length == HPDL_CUDA_MLP_FP8_HISTORY && s.input[1].margin == 0 && s.grad[0].scale == 1.0f &&
                s.grad[0].format == HPDL_FP8_E5M2 && s.weight[0].format == HPDL_FP8_E4M3);
    HPDL_EXPECT(hpdl_cuda_mlp_train_step_fp8(&g, 9, g.A[0], g.batch_labels, 0.1, 0, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_mlp_train_step_fp8(&g, 8, NULL, g.batch_labels, 0.1, 0, NULL) == HPDL_ERR_INVALID);
    hpdl_cuda_mlp_destroy_fp8(&g);
    hpdl_mlp_fp8_destroy(&s); hpdl_mlp_fp8_destroy(&wrong); hpdl_mlp_fp8_destroy(&s_other);
    hpdl_mlp_destroy_f32(&m); hpdl_mlp_destroy_f32(&m2);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_casts_vs_cpu),
        HPDL_TEST(test_cast_nan_and_arguments),
        HPDL_TEST(test_gemm_vs_cpu),
        HPDL_TEST(test_gemm_large),
        HPDL_TEST(test_gemm_edges_and_arguments),
        HPDL_TEST(test_cast_transpose_vs_cpu),
        HPDL_TEST(test_cast_transpose_arguments),
        HPDL_TEST(test_mlp_fp8_step_stages),
        HPDL_TEST(test_mlp_fp8_vs_cpu_twin),
        HPDL_TEST(test_mlp_fp8_epochs),
        HPDL_TEST(test_mlp_fp8_arguments),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
