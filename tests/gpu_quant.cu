/* GPU tests of the int8 GEMMs (wgmma, mma.sync and dp4a), their fused
   requantization, the quantized MLP, the int8 convolution and the
   quantized CNN, bit for bit against the CPU twins (hpdl_quant_gemm_i8,
   hpdl_quant_gemm_requant_i8/_i32, hpdl_quant_mlp, hpdl_quant_conv2d_i8,
   hpdl_quant_cnn). */
#include "hpdl_cuda.cuh"
#include "tests/hpdl_test_cuda.h"

#include <vector>

static const hpdl_quant_algo ALGOS[] = {HPDL_QUANT_MMA, HPDL_QUANT_DP4A, HPDL_QUANT_WGMMA};

/* Whether `a` may answer HPDL_ERR_UNSUPPORTED: mma without an sm_80 path,
   wgmma off Hopper or on rows that are not 16-byte aligned (pad != 0); on
   an H100/H200 with aligned rows wgmma must run. */
static int may_decline(hpdl_quant_algo a, int pad) {
    cudaDeviceProp p;
    if (a == HPDL_QUANT_DP4A) return 0;
    if (a == HPDL_QUANT_WGMMA && pad == 0 && cudaGetDeviceProperties(&p, 0) == cudaSuccess && p.major == 9) return 0;
    return 1;
}

static void fill_i8(hpdl_rng *r, std::vector<int8_t> &v) {
    for (size_t i = 0; i < v.size(); i++) v[i] = (int8_t)((int)hpdl_rng_below(r, 256) - 128);
}

/* Bt (N x ldt) = B^T for B K x N (ldb), on the host. */
static std::vector<int8_t> transpose_host(int K, int N, const std::vector<int8_t> &B, int ldb, int ldt) {
    std::vector<int8_t> t((size_t)N * ldt, 0);
    for (int k = 0; k < K; k++)
        for (int n = 0; n < N; n++) t[(size_t)n * ldt + k] = B[(size_t)k * ldb + n];
    return t;
}

/* Same bytes everywhere, including the ldc padding (still poisoned in both). */
template <typename T> static int count_mismatches(const std::vector<T> &got, const std::vector<T> &want) {
    int bad = 0;
    for (size_t i = 0; i < got.size(); i++) bad += memcmp(&got[i], &want[i], sizeof(T)) != 0;
    return bad;
}

/* ---- the device twins of the fixed-point helpers (host side, no GPU needed) ---- */

static void test_requant_twins(void) {
    hpdl_rng r;
    /* with +-2^30 and +-2^15, products a * b at and beside the roundings' ties (ab + 2^30 a multiple of 2^31) */
    const int32_t edges[] = {INT32_MIN, INT32_MIN + 1, -(1 << 30), -65537, -65536, -(1 << 15), -3, -2, -1, 0,
                             1, 2, 3, 1 << 15, 65535, 1 << 30, INT32_MAX - 1, INT32_MAX};
    int i, j, e, bad = 0;
    hpdl_rng_seed(&r, 11);
    for (i = 0; i < HPDL_COUNT(edges); i++)
        for (j = 0; j < HPDL_COUNT(edges); j++) {
            bad += hpdl__q_srdhm(edges[i], edges[j]) != hpdl_quant_sat_rounding_doubling_high_mul(edges[i], edges[j]);
            for (e = 0; e <= 31; e++) bad += hpdl__q_rdbpot(edges[i], e) != hpdl_quant_rounding_divide_by_pot(edges[i], e);
        }
    for (i = 0; i < 200000; i++) {
        int32_t a = (int32_t)(uint32_t)hpdl_rng_u64(&r), b = (int32_t)(uint32_t)hpdl_rng_u64(&r);
        e = (int)hpdl_rng_below(&r, 32);
        bad += hpdl__q_srdhm(a, b) != hpdl_quant_sat_rounding_doubling_high_mul(a, b);
        bad += hpdl__q_rdbpot(a, e) != hpdl_quant_rounding_divide_by_pot(a, e);
    }
    HPDL_EXPECT(bad == 0);
}

/* ---- int8 GEMM, int32 out ---------------------------------------------------------- */

typedef struct shape { int M, N, K, pad; int32_t za, zb; } shape;

/* Odd shapes (not multiples of the tiles, K not a multiple of 4, 16 or 32),
   exact tiles, padded (unaligned) and aligned leading dimensions, all zero-point cases. */
static const shape SHAPES[] = {
    {1, 1, 1, 0, 0, 0},        {37, 45, 3, 0, -128, 127}, {130, 257, 67, 5, 3, 0},   {257, 300, 129, 0, 0, -7},
    {128, 256, 64, 0, 0, 0},   {129, 513, 1000, 3, -5, 9}, {300, 70, 33, 16, 127, -128}, {64, 600, 255, 0, -1, 0},
    {513, 129, 2051, 0, 17, 2}};

/* Leading dimension: cols + pad, or cols rounded up to 16 when pad is 0 (cp.async path). */
static int ld_of(int cols, int pad) { return pad ? cols + pad : (cols + 15) / 16 * 16; }

static void test_gemm_i8_exact(void) {
    hpdl_rng r;
    int s, a;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 21);
    for (s = 0; s < HPDL_COUNT(SHAPES); s++) {
        shape sh = SHAPES[s];
        int lda = ld_of(sh.K, sh.pad), ldb = ld_of(sh.N, sh.pad), ldt = ld_of(sh.K, sh.pad), ldc = sh.N + 3;
        std::vector<int8_t> A((size_t)sh.M * lda), B((size_t)sh.K * ldb);
        std::vector<int32_t> want((size_t)sh.M * ldc, -1); /* -1: the poison's bit pattern */
        fill_i8(&r, A);
        fill_i8(&r, B);
        HPDL_CHECK(hpdl_quant_gemm_i8(sh.M, sh.N, sh.K, A.data(), lda, sh.za, B.data(), ldb, sh.zb, want.data(), ldc));
        std::vector<int8_t> Bt = transpose_host(sh.K, sh.N, B, ldb, ldt);
        int8_t *dA = upload(A), *dB = upload(B), *dBt = upload(Bt);
        for (a = 0; a < HPDL_COUNT(ALGOS); a++) {
            int32_t *dC = poisoned<int32_t>(want.size()), *dC2 = poisoned<int32_t>(want.size());
            hpdl_status st = hpdl_cuda_quant_gemm_i8(ALGOS[a], sh.M, sh.N, sh.K, dA, lda, sh.za, dB, ldb, sh.zb, dC, ldc, 0);
            if (st == HPDL_ERR_UNSUPPORTED && may_decline(ALGOS[a], sh.pad)) {
                fprintf(stderr, "    (%s: not for this build/GPU/layout)\n", hpdl_quant_algo_name(ALGOS[a]));
            } else {
                HPDL_EXPECT(st == HPDL_OK);
                HPDL_EXPECT(hpdl_cuda_quant_gemm_nt_i8(ALGOS[a], sh.M, sh.N, sh.K, dA, lda, sh.za, dBt, ldt, sh.zb, dC2, ldc,
                                                       0) == HPDL_OK);
                int bad = count_mismatches(download(dC, want.size()), want);
                int bad_nt = count_mismatches(download(dC2, want.size()), want);
                if (bad || bad_nt)
                    fprintf(stderr, "    %s %dx%dx%d za=%d zb=%d: %d / %d mismatches\n", hpdl_quant_algo_name(ALGOS[a]), sh.M,
                            sh.N, sh.K, sh.za, sh.zb, bad, bad_nt);
                HPDL_EXPECT(bad == 0);
                HPDL_EXPECT(bad_nt == 0);
            }
            hpdl_cuda_free(dC);
            hpdl_cuda_free(dC2);
        }
        hpdl_cuda_free(dA);
        hpdl_cuda_free(dB);
        hpdl_cuda_free(dBt);
    }
}

/* ---- fused requantization --------------------------------------------------------- */

/* Multipliers that map the accumulators of a K-deep product onto a few
   times the int8 range, so that some outputs saturate. */
static void make_output(hpdl_rng *r, int N, int K, int per_channel, int relu, int with_bias, std::vector<int32_t> &m0,
                        std::vector<int> &shift, std::vector<int32_t> &bias, hpdl_quant_output *o) {
    int n = per_channel ? N : 1, j;
    m0.resize(n);
    shift.resize(n);
    bias.resize(N);
    for (j = 0; j < n; j++) {
        double real = (0.5 + 3.0 * hpdl_rng_uniform(r)) * 127.0 / (128.0 * 128.0 * sqrt((double)K) + 1.0);
        HPDL_CHECK(hpdl_quant_multiplier(real, &m0[j], &shift[j]));
    }
    for (j = 0; j < N; j++) bias[j] = (int32_t)hpdl_rng_below(r, 200001) - 100000;
    o->bias = with_bias ? bias.data() : NULL;
    o->multiplier = m0.data();
    o->shift = shift.data();
    o->per_channel = per_channel;
    o->zero_point = (int32_t)hpdl_rng_below(r, 41) - 20;
    o->relu = relu;
}

static void test_gemm_requant_exact(void) {
    hpdl_rng r;
    int s, a, variant;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 31);
    for (s = 0; s < HPDL_COUNT(SHAPES); s++)
        for (variant = 0; variant < 4; variant++) { /* per-tensor / per-channel x ReLU off / on */
            shape sh = SHAPES[s];
            int per_channel = variant & 1, relu = variant >> 1, zb = per_channel ? 0 : sh.zb;
            int lda = ld_of(sh.K, sh.pad), ldb = ld_of(sh.N, sh.pad), ldt = ld_of(sh.K, sh.pad), ldc = sh.N + 5;
            std::vector<int8_t> A((size_t)sh.M * lda), B((size_t)sh.K * ldb), want8((size_t)sh.M * ldc, -1);
            std::vector<int32_t> want32((size_t)sh.M * ldc, -1), m0, bias;
            std::vector<int> shift;
            hpdl_quant_output o;
            hpdl_cuda_quant_output d;
            fill_i8(&r, A);
            fill_i8(&r, B);
            make_output(&r, sh.N, sh.K, per_channel, relu, variant != 2, m0, shift, bias, &o);
            HPDL_CHECK(hpdl_quant_gemm_requant_i8(sh.M, sh.N, sh.K, A.data(), lda, sh.za, B.data(), ldb, zb, &o,
                                                  want8.data(), ldc));
            HPDL_CHECK(hpdl_quant_gemm_requant_i32(sh.M, sh.N, sh.K, A.data(), lda, sh.za, B.data(), ldb, zb, &o,
                                                   want32.data(), ldc));
            std::vector<int8_t> Bt = transpose_host(sh.K, sh.N, B, ldb, ldt);
            int8_t *dA = upload(A), *dB = upload(B), *dBt = upload(Bt);
            HPDL_CHECK(hpdl_cuda_quant_output_create(&d, &o, sh.N));
            for (a = 0; a < HPDL_COUNT(ALGOS); a++) {
                int8_t *dC = poisoned<int8_t>(want8.size()), *dC2 = poisoned<int8_t>(want8.size());
                int32_t *dC32 = poisoned<int32_t>(want32.size());
                hpdl_status st = hpdl_cuda_quant_gemm_requant_i8(ALGOS[a], sh.M, sh.N, sh.K, dA, lda, sh.za, dB, ldb, zb, &d,
                                                                 dC, ldc, 0);
                if (!(st == HPDL_ERR_UNSUPPORTED && may_decline(ALGOS[a], sh.pad))) {
                    int bad, bad_nt, bad32;
                    HPDL_EXPECT(st == HPDL_OK);
                    HPDL_EXPECT(hpdl_cuda_quant_gemm_requant_nt_i8(ALGOS[a], sh.M, sh.N, sh.K, dA, lda, sh.za, dBt, ldt, zb,
                                                                   &d, dC2, ldc, 0) == HPDL_OK);
                    HPDL_EXPECT(hpdl_cuda_quant_gemm_requant_nt_i32(ALGOS[a], sh.M, sh.N, sh.K, dA, lda, sh.za, dBt, ldt, zb,
                                                                    &d, dC32, ldc, 0) == HPDL_OK);
                    bad = count_mismatches(download(dC, want8.size()), want8);
                    bad_nt = count_mismatches(download(dC2, want8.size()), want8);
                    bad32 = count_mismatches(download(dC32, want32.size()), want32);
                    if (bad || bad_nt || bad32)
                        fprintf(stderr, "    %s %dx%dx%d variant %d: %d / %d / %d mismatches\n",
                                hpdl_quant_algo_name(ALGOS[a]), sh.M, sh.N, sh.K, variant, bad, bad_nt, bad32);
                    HPDL_EXPECT(bad == 0 && bad_nt == 0 && bad32 == 0);
                }
                hpdl_cuda_free(dC);
                hpdl_cuda_free(dC2);
                hpdl_cuda_free(dC32);
            }
            hpdl_cuda_quant_output_destroy(&d);
            hpdl_cuda_free(dA);
            hpdl_cuda_free(dB);
            hpdl_cuda_free(dBt);
        }
}

/* The requantized outputs really span the int8 range (else the test above
   would prove little): saturation at both ends without ReLU. */
static void test_requant_outputs_saturate(void) {
    hpdl_rng r;
    std::vector<int8_t> A(200 * 300), B(300 * 100), C(200 * 100);
    std::vector<int32_t> m0, bias;
    std::vector<int> shift;
    hpdl_quant_output o;
    int lo = 0, hi = 0;
    hpdl_rng_seed(&r, 41);
    fill_i8(&r, A);
    fill_i8(&r, B);
    make_output(&r, 100, 300, 1, 0, 1, m0, shift, bias, &o);
    HPDL_CHECK(hpdl_quant_gemm_requant_i8(200, 100, 300, A.data(), 300, 3, B.data(), 100, 0, &o, C.data(), 100));
    for (size_t i = 0; i < C.size(); i++) { lo += C[i] == -128; hi += C[i] == 127; }
    HPDL_EXPECT(lo > 0 && hi > 0 && lo + hi < (int)C.size() / 2);
}

/* ---- layout transformation and input quantization ----------------------------------- */

static void test_transpose_and_quantize(void) {
    hpdl_rng r;
    const int rows = 70, cols = 45, ldx = 50, ldy = 77;
    std::vector<int8_t> X((size_t)rows * ldx), want((size_t)cols * ldy, -1), q_want((size_t)rows * ldx, -1);
    std::vector<float> F((size_t)rows * ldx);
    hpdl_quant_params p;
    int i, j;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 51);
    fill_i8(&r, X);
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) want[(size_t)j * ldy + i] = X[(size_t)i * ldx + j];
    p.scale = 0.05f;
    p.zero_point = -17;
    for (i = 0; i < (int)F.size(); i++) /* ties at k + 0.5 scales, and beyond both ends */
        F[i] = i % 7 == 0 ? (float)(0.05 * ((int)hpdl_rng_below(&r, 400) - 200) + 0.025) : (float)(hpdl_rng_normal(&r) * 6.0);
    for (i = 0; i < rows; i++) HPDL_CHECK(hpdl_quant_quantize_f32(&F[(size_t)i * ldx], cols, p, &q_want[(size_t)i * ldx]));
    int8_t *dX = upload(X), *dY = poisoned<int8_t>(want.size()), *dQ = poisoned<int8_t>(q_want.size());
    float *dF = upload(F);
    HPDL_EXPECT(hpdl_cuda_quant_transpose_i8(rows, cols, dX, ldx, dY, ldy, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_quant_quantize_f32(rows, cols, dF, ldx, p, dQ, ldx, 0) == HPDL_OK);
    HPDL_EXPECT(count_mismatches(download(dY, want.size()), want) == 0);
    HPDL_EXPECT(count_mismatches(download(dQ, q_want.size()), q_want) == 0);
    /* four columns a thread: columns and row lengths multiples of 4, rows 16-byte aligned */
    const int cols4 = 48, ld4 = 52;
    std::vector<float> F4((size_t)rows * ld4);
    std::vector<int8_t> q4_want(F4.size(), -1);
    for (i = 0; i < (int)F4.size(); i++) F4[i] = F[(size_t)i % F.size()];
    for (i = 0; i < rows; i++) HPDL_CHECK(hpdl_quant_quantize_f32(&F4[(size_t)i * ld4], cols4, p, &q4_want[(size_t)i * ld4]));
    float *dF4 = upload(F4);
    int8_t *dQ4 = poisoned<int8_t>(q4_want.size());
    HPDL_EXPECT(hpdl_cuda_quant_quantize_f32(rows, cols4, dF4, ld4, p, dQ4, ld4, 0) == HPDL_OK);
    HPDL_EXPECT(count_mismatches(download(dQ4, q4_want.size()), q4_want) == 0);
    hpdl_cuda_free(dX);
    hpdl_cuda_free(dY);
    hpdl_cuda_free(dQ);
    hpdl_cuda_free(dF);
    hpdl_cuda_free(dF4);
    hpdl_cuda_free(dQ4);
}

/* ---- bad arguments: HPDL_ERR_INVALID, output untouched ------------------------------ */

static void test_bad_args(void) {
    std::vector<int8_t> A(64, 1), B(64, 2);
    std::vector<int32_t> m0(1, 1 << 30), bias(8, 0);
    std::vector<int> shift(1, 3);
    hpdl_quant_output o;
    hpdl_cuda_quant_output d, none;
    hpdl_quant_params p;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    o.bias = bias.data(); o.multiplier = m0.data(); o.shift = shift.data();
    o.per_channel = 0; o.zero_point = 0; o.relu = 0;
    memset(&none, 0, sizeof none);
    HPDL_CHECK(hpdl_cuda_quant_output_create(&d, &o, 8));
    int8_t *dA = upload(A), *dB = upload(B), *dC8 = poisoned<int8_t>(64);
    int32_t *dC = poisoned<int32_t>(64);
    const hpdl_quant_algo bad_algo = (hpdl_quant_algo)7;
    HPDL_EXPECT(hpdl_cuda_quant_gemm_i8(HPDL_QUANT_AUTO, 8, 8, 8, NULL, 8, 0, dB, 8, 0, dC, 8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_gemm_i8(HPDL_QUANT_AUTO, -1, 8, 8, dA, 8, 0, dB, 8, 0, dC, 8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_gemm_i8(HPDL_QUANT_AUTO, 8, 8, 8, dA, 7, 0, dB, 8, 0, dC, 8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_gemm_i8(HPDL_QUANT_AUTO, 8, 8, 8, dA, 8, 128, dB, 8, 0, dC, 8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_gemm_i8(HPDL_QUANT_AUTO, 8, 8, 8, dA, 8, 0, dB, 8, -129, dC, 8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_gemm_i8(bad_algo, 8, 8, 8, dA, 8, 0, dB, 8, 0, dC, 8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_gemm_nt_i8(HPDL_QUANT_AUTO, 8, 8, HPDL_QUANT_MAX_K + 1, dA, HPDL_QUANT_MAX_K + 1, 0, dB,
                                           HPDL_QUANT_MAX_K + 1, 0, dC, 8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_gemm_nt_i8(HPDL_QUANT_AUTO, 8, 8, 8, dA, 8, 0, dB, 7, 0, dC, 8, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_gemm_requant_i8(HPDL_QUANT_AUTO, 8, 8, 8, dA, 8, 0, dB, 8, 0, NULL, dC8, 8, 0) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_gemm_requant_i8(HPDL_QUANT_AUTO, 8, 7, 8, dA, 8, 0, dB, 8, 0, &d, dC8, 8, 0) ==
                HPDL_ERR_INVALID); /* made for 8 channels */
    HPDL_EXPECT(hpdl_cuda_quant_gemm_requant_nt_i8(HPDL_QUANT_AUTO, 8, 8, 8, dA, 8, 0, dB, 8, 0, &none, dC8, 8, 0) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_gemm_requant_nt_i32(HPDL_QUANT_AUTO, 8, 8, 8, dA, 8, 0, dB, 8, 0, &d, dC, 7, 0) ==
                HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_transpose_i8(8, 8, dA, 8, dC8, 7, 0) == HPDL_ERR_INVALID);
    p.scale = 0.0f;
    p.zero_point = 0;
    HPDL_EXPECT(hpdl_cuda_quant_quantize_f32(2, 2, (const float *)dC, 2, p, dC8, 2, 0) == HPDL_ERR_INVALID);
    m0[0] = 5; /* not in [2^30, 2^31) */
    HPDL_EXPECT(hpdl_cuda_quant_output_create(&none, &o, 8) == HPDL_ERR_INVALID);
    HPDL_EXPECT(none.multiplier == NULL);
    std::vector<int32_t> c = download(dC, 64);
    std::vector<int8_t> c8 = download(dC8, 64);
    int touched = 0;
    for (int i = 0; i < 64; i++) touched += c[i] != -1 || c8[i] != -1;
    HPDL_EXPECT(touched == 0);
    hpdl_cuda_quant_output_destroy(&d);
    hpdl_cuda_free(dA);
    hpdl_cuda_free(dB);
    hpdl_cuda_free(dC);
    hpdl_cuda_free(dC8);
}

/* ---- the quantized MLP: GPU int32 logits == CPU int32 logits ----------------------- */

static void test_quant_mlp_matches_cpu(void) {
    const int widths[] = {100, 70, 33, 10}, n = 300, classes = 10;
    hpdl_rng r;
    hpdl_mlp_f32 m;
    hpdl_quant_mlp q;
    hpdl_quant_mlp_work w;
    std::vector<float> X((size_t)n * widths[0]);
    std::vector<int32_t> labels(n);
    double cpu_acc = 0, gpu_acc = -1;
    int a, l, i;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 61);
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 4, widths, HPDL_ACT_RELU, 62));
    for (l = 0; l < m.n_layers; l++) /* non-zero biases, so the int32 biases matter */
        for (i = 0; i < widths[l + 1]; i++) m.b[l][i] = (float)(0.3 * hpdl_rng_normal(&r));
    for (i = 0; i < (int)X.size(); i++) X[i] = (float)(hpdl_rng_uniform(&r) * 2.0 - 0.5);
    for (i = 0; i < n; i++) labels[i] = (int32_t)hpdl_rng_below(&r, classes);
    HPDL_CHECK(hpdl_quant_mlp_build(&q, &m, n, X.data(), 100.0));
    HPDL_CHECK(hpdl_quant_mlp_work_create(&w, &q, n));
    HPDL_CHECK(hpdl_quant_mlp_forward(&q, HPDL_QUANT_INTEGER, &w, n, X.data()));
    std::vector<int32_t> want(w.logits, w.logits + (size_t)n * classes);
    HPDL_CHECK(hpdl_quant_mlp_accuracy(&q, HPDL_QUANT_INTEGER, &w, n, X.data(), labels.data(), &cpu_acc));
    float *dX = upload(X);
    int32_t *dy = upload(labels);
    for (a = 0; a < HPDL_COUNT(ALGOS); a++) {
        hpdl_cuda_quant_mlp g;
        HPDL_CHECK(hpdl_cuda_quant_mlp_create(&g, &q, 128, ALGOS[a])); /* 128 < n: several batches */
        HPDL_CHECK(hpdl_cuda_poison(g.logits, (size_t)128 * classes * sizeof(int32_t)));
        hpdl_status st = hpdl_cuda_quant_mlp_forward(&g, 128, dX, 0);
        if (!(st == HPDL_ERR_UNSUPPORTED && may_decline(ALGOS[a], 0 /* the model's rows are 16-byte aligned */))) {
            std::vector<int32_t> want_first(want.begin(), want.begin() + 128 * classes);
            HPDL_EXPECT(st == HPDL_OK);
            HPDL_EXPECT(count_mismatches(download(g.logits, (size_t)128 * classes), want_first) == 0);
            HPDL_EXPECT(hpdl_cuda_quant_mlp_accuracy(&g, n, dX, dy, &gpu_acc, 0) == HPDL_OK);
            HPDL_EXPECT(gpu_acc == cpu_acc);
            HPDL_EXPECT(hpdl_cuda_quant_mlp_forward(&g, 129, dX, 0) == HPDL_ERR_INVALID);
        }
        hpdl_cuda_quant_mlp_destroy(&g);
    }
    hpdl_cuda_free(dX);
    hpdl_cuda_free(dy);
    hpdl_quant_mlp_work_destroy(&w);
    hpdl_quant_mlp_free(&q);
    hpdl_mlp_destroy_f32(&m);
}

/* ---- the int8 convolution: GPU == hpdl_quant_conv2d_i8, byte for byte ---------------- */

/* hpdl__q_fixed (residual sums, global pooling) against the CPU's
   hpdl__quant_fixed_apply, host side: multipliers below and above 1. */
static void test_fixed_twin(void) {
    const double reals[] = {1e-6, 0.3, 0.5, 0.999, 1.0, 1.7, 37.5};
    const int32_t xs[] = {-(1 << 20), -65537, -1025, -1024, -3, -1, 0, 1, 3, 1023, 1024, 65537, 1 << 20};
    hpdl_rng r;
    int i, j, bad = 0;
    hpdl_rng_seed(&r, 71);
    for (i = 0; i < HPDL_COUNT(reals); i++) {
        hpdl_quant_fixed f;
        HPDL_CHECK(hpdl__quant_fixed_make(reals[i], &f));
        for (j = 0; j < HPDL_COUNT(xs); j++) bad += hpdl__q_fixed(xs[j], f) != hpdl__quant_fixed_apply(xs[j], f);
        for (j = 0; j < 20000; j++) {
            int32_t x = (int32_t)hpdl_rng_below(&r, 1 << 22) - (1 << 21); /* 2^10 (a - za) and pixel sums are this small */
            bad += hpdl__q_fixed(x, f) != hpdl__quant_fixed_apply(x, f);
        }
    }
    HPDL_EXPECT(bad == 0);
}

/* The convolution's rungs, and whether one may answer HPDL_ERR_UNSUPPORTED
   for C input channels, K output channels, R x R filters and x offset by
   x_offset bytes: mma on a GPU older than sm_80; wgmma off Hopper, or where
   channels are not a multiple of 16 or x is not 16-byte aligned (on an
   H100/H200 it must run everywhere else). dp4a (direct) runs on any GPU
   where it applies and must decline elsewhere (conv_direct_applies). */
static const hpdl_quant_algo CONV_ALGOS[] = {HPDL_QUANT_MMA, HPDL_QUANT_WGMMA, HPDL_QUANT_IM2COL, HPDL_QUANT_DP4A};
static int conv_direct_applies(int C, int K, int R) { return K <= 16 && R * R * C <= 1024; }
static int conv_may_decline(hpdl_quant_algo a, int C, int K, int R, int x_offset) {
    cudaDeviceProp p;
    if (a == HPDL_QUANT_IM2COL) return 0; /* the GEMM under it runs on any GPU */
    if (a == HPDL_QUANT_DP4A) return !conv_direct_applies(C, K, R);
    if (a == HPDL_QUANT_MMA) return cudaGetDeviceProperties(&p, 0) != cudaSuccess || p.major < 8;
    return may_decline(a, 0) || C % 16 != 0 || x_offset % 16 != 0;
}

/* One convolution on each rung against the CPU: random codes and weights,
   per-channel requantisation (make_output), output poisoned first. x_offset
   shifts x by that many bytes (unaligned rows take the element path). A
   rung that may decline and does is skipped. */
static int conv_case(hpdl_rng *r, int N, int C, int H, int W, int K, int R, int stride, int pad, int dilation, int32_t zx,
                     int relu, int x_offset) {
    hpdl_conv2d_params p = hpdl_conv2d_params_make(R, stride, pad, dilation, 1);
    hpdl_tensor4 xd = hpdl_tensor4_make(N, C, H, W, HPDL_NHWC), yd = xd;
    std::vector<int8_t> x((size_t)N * H * W * C + x_offset), w((size_t)R * R * C * K);
    std::vector<int32_t> m0, bias;
    std::vector<int> shift;
    hpdl_quant_output o;
    hpdl_cuda_quant_output d;
    hpdl_status st;
    HPDL_CHECK(hpdl_conv2d_output_desc(&p, &xd, K, &yd));
    size_t ny = (size_t)yd.n * yd.h * yd.w * K;
    std::vector<int8_t> want(ny, (int8_t)0x5a);
    fill_i8(r, x);
    fill_i8(r, w);
    make_output(r, K, R * R * C, 1, relu, 1, m0, shift, bias, &o);
    HPDL_CHECK(hpdl_quant_conv2d_i8(&p, &xd, x.data() + x_offset, zx, w.data(), &o, &yd, want.data()));
    HPDL_CHECK(hpdl_cuda_quant_output_create(&d, &o, K));
    int8_t *dx = upload(x), *dw = upload(w), *dy = poisoned<int8_t>(ny);
    int bad = 0;
    for (int a = 0; a < HPDL_COUNT(CONV_ALGOS); a++) {
        HPDL_CHECK(hpdl_cuda_poison(dy, ny));
        st = hpdl_cuda_quant_conv2d_algo_i8(CONV_ALGOS[a], &p, &xd, dx + x_offset, zx, dw, &d, &yd, dy, 0);
        if (CONV_ALGOS[a] == HPDL_QUANT_DP4A && !conv_direct_applies(C, K, R)) {
            bad += st != HPDL_ERR_UNSUPPORTED;
            continue;
        }
        if (st == HPDL_ERR_UNSUPPORTED && conv_may_decline(CONV_ALGOS[a], C, K, R, x_offset)) continue;
        int wrong = st == HPDL_OK ? count_mismatches(download(dy, ny), want) : -1;
        if (wrong)
            fprintf(stderr, "    conv %s N%d C%d %dx%d K%d R%d stride %d pad %d dilation %d zx %d relu %d: %s, %d wrong\n",
                    hpdl_quant_algo_name(CONV_ALGOS[a]), N, C, H, W, K, R, stride, pad, dilation, zx, relu,
                    hpdl_status_string(st), wrong);
        bad += wrong != 0;
    }
    hpdl_cuda_free(dx);
    hpdl_cuda_free(dw);
    hpdl_cuda_free(dy);
    hpdl_cuda_quant_output_destroy(&d);
    return bad;
}

static void test_conv_i8_exact(void) {
    /* N, C, H, W, K, R, stride, pad, dilation, zx, relu, x offset */
    const int cases[][12] = {
        {1, 3, 9, 7, 5, 3, 1, 1, 1, -7, 0, 0},      /* the stem: 3 channels, element path */
        {2, 1, 13, 11, 6, 5, 1, 0, 1, -128, 1, 0},  /* one channel, 5x5 */
        {3, 16, 8, 10, 11, 3, 2, 1, 1, 5, 1, 0},    /* 16-byte chunks, stride 2 */
        {2, 32, 9, 9, 70, 3, 1, 1, 1, -3, 0, 0},    /* K over 64: the 128x128 tiles */
        {1, 48, 5, 6, 130, 1, 1, 0, 1, 127, 1, 0},  /* 1x1, K past 128 */
        {2, 64, 7, 7, 64, 1, 2, 0, 1, -20, 0, 0},   /* strided 1x1 shortcut */
        {1, 20, 6, 5, 9, 3, 1, 1, 1, 9, 0, 0},      /* channels not a multiple of 16 */
        {2, 16, 7, 9, 13, 3, 1, 2, 2, -1, 1, 0},    /* dilation 2, pad 2 */
        {2, 32, 6, 6, 40, 3, 1, 1, 1, 11, 0, 1},    /* x one byte off: unaligned rows */
        {5, 64, 12, 12, 128, 3, 1, 1, 1, 3, 1, 0},  /* several K tiles and pixel tiles */
        {1, 128, 4, 4, 256, 3, 2, 1, 1, -60, 0, 0}, /* deep K (1152), few pixels */
        /* for the wgmma rung: k steps of (tap, 64 or 128 channels), 64/128/256-wide tiles, zeros in the padding */
        {2, 16, 9, 11, 24, 3, 1, 1, 1, -128, 1, 0},  /* one partial 64-channel step, 24 of 64 columns */
        {2, 160, 7, 7, 72, 3, 1, 1, 1, 17, 0, 0},    /* C 160: a whole step and a partial one; K 72 */
        {3, 32, 17, 15, 200, 3, 2, 1, 1, -5, 1, 0},  /* stride 2, K 200 of a 256-wide tile */
        {2, 64, 8, 8, 64, 1, 1, 0, 1, -128, 1, 0},   /* 1x1: the pixels as one row */
        {1, 128, 10, 10, 320, 3, 1, 1, 1, 100, 0, 0}, /* two column tiles (256 + 64) */
        {2, 32, 20, 20, 40, 5, 1, 2, 1, -30, 0, 0},  /* 5x5, two taps deep in the padding */
        {2, 48, 9, 9, 16, 3, 2, 0, 1, 7, 1, 0},      /* stride 2 without padding */
        {1, 16, 5, 5, 16, 3, 1, 2, 1, 90, 0, 0},     /* pad 2 for a 3x3: whole rows of taps outside */
        {9, 16, 5, 5, 32, 3, 1, 1, 1, -2, 0, 0},     /* boxes of several images */
        {4, 64, 16, 16, 128, 3, 2, 1, 1, -128, 1, 0}, /* a ResNet down-sampling layer */
        {1, 32, 6, 6, 8, 3, 1, 1, 1, 60, 0, 16},     /* x 16 bytes on: aligned, K 8 */
        /* 72 pixel tiles: more than an H100/H200 takes in one wave, so the tiles stay 256 and 128 wide */
        {9, 16, 32, 32, 200, 3, 1, 1, 1, -100, 1, 0},
        {9, 32, 32, 32, 100, 3, 1, 1, 1, 45, 0, 0},
        {9, 96, 32, 32, 136, 3, 1, 1, 1, -77, 1, 0}, /* ... with k steps of 128 channels */
        /* the lab's small CNN, which AUTO gives the direct (dp4a) rung */
        {3, 3, 32, 32, 6, 5, 1, 0, 1, -128, 1, 0},  /* its first layer: 75-byte rows */
        {2, 6, 14, 14, 16, 5, 1, 0, 1, -9, 0, 3},   /* its second, x 3 bytes off */
        {2, 5, 9, 8, 3, 3, 2, 1, 2, 40, 1, 0},      /* stride 2, dilation 2, padding */
    };
    hpdl_rng r;
    int i, bad = 0;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 81);
    for (i = 0; i < HPDL_COUNT(cases); i++) {
        const int *c = cases[i];
        bad += conv_case(&r, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11]) != 0;
    }
    HPDL_EXPECT(bad == 0);
}

static int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

/* Requantisation corner cases through a 1x1 convolution whose one output
   channel has weight 1 on input channel 0 and 0 on the other 15 (so acc
   = x - zx + bias), multiplier 1/2 and shift 1: the fixed-point multiply
   halves with ties upwards, the shift halves again with ties away from
   zero (so 1 -> 1/2 -> 1, -1 -> 0, -3 -> -1 -> -1); negative
   accumulators; biases that saturate either int8 end or the int32 sum.
   The CPU against this arithmetic written out, each rung against the CPU. */
static void test_conv_requant_cases(void) {
    const int n = 256, C = 16;
    const int32_t biases[] = {0, 1, -1, 2, -2, 600, -600, INT32_MAX, INT32_MIN};
    hpdl_conv2d_params p = hpdl_conv2d_params_make(1, 1, 0, 1, 1);
    hpdl_tensor4 xd = hpdl_tensor4_make(1, C, 1, n, HPDL_NHWC), yd = hpdl_tensor4_make(1, 1, 1, n, HPDL_NHWC);
    std::vector<int8_t> x((size_t)n * C), w(C, 0), want(n);
    int32_t m0 = 1 << 30;
    int shift = 1, i, a, b, bad = 0, zx = 3;
    hpdl_rng r;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 83);
    fill_i8(&r, x);
    w[0] = 1;
    for (i = 0; i < n; i++) x[(size_t)i * C] = (int8_t)(i - 128);
    int8_t *dx = upload(x), *dw = upload(w), *dy = poisoned<int8_t>(n);
    for (b = 0; b < HPDL_COUNT(biases); b++) {
        hpdl_quant_output o = {&biases[b], &m0, &shift, 0, -5, 0};
        hpdl_cuda_quant_output d;
        HPDL_CHECK(hpdl_cuda_quant_output_create(&d, &o, 1));
        HPDL_CHECK(hpdl_quant_conv2d_i8(&p, &xd, x.data(), zx, w.data(), &o, &yd, want.data()));
        for (i = 0; i < n; i++) {
            int64_t acc = (int64_t)x[(size_t)i * C] - zx + biases[b], h, v;
            acc = acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : acc;
            h = floor_half(acc + 1);                               /* acc / 2, ties upwards */
            v = (h >= 0 ? (h + 1) / 2 : -((-h + 1) / 2)) - 5;      /* h / 2, ties away from zero */
            v = v > 127 ? 127 : v < -128 ? -128 : v;
            bad += want[i] != (int8_t)v;
        }
        for (a = 0; a < HPDL_COUNT(CONV_ALGOS); a++) {
            HPDL_CHECK(hpdl_cuda_poison(dy, n));
            hpdl_status st = hpdl_cuda_quant_conv2d_algo_i8(CONV_ALGOS[a], &p, &xd, dx, zx, dw, &d, &yd, dy, 0);
            if (st == HPDL_ERR_UNSUPPORTED && conv_may_decline(CONV_ALGOS[a], C, 1, 1, 0)) continue;
            HPDL_EXPECT(st == HPDL_OK);
            bad += count_mismatches(download(dy, n), want);
        }
        hpdl_cuda_quant_output_destroy(&d);
    }
    HPDL_EXPECT(bad == 0);
    hpdl_cuda_free(dx);
    hpdl_cuda_free(dw);
    hpdl_cuda_free(dy);
}

/* Bad arguments: HPDL_ERR_INVALID, y untouched. */
static void test_conv_bad_args(void) {
    hpdl_conv2d_params p = hpdl_conv2d_params_make(3, 1, 1, 1, 1);
    hpdl_tensor4 xd = hpdl_tensor4_make(2, 16, 5, 5, HPDL_NHWC), yd = hpdl_tensor4_make(2, 8, 5, 5, HPDL_NHWC);
    hpdl_tensor4 nchw = hpdl_tensor4_make(2, 16, 5, 5, HPDL_NCHW), wrong = hpdl_tensor4_make(2, 8, 4, 5, HPDL_NHWC);
    std::vector<int32_t> m0, bias;
    std::vector<int> shift;
    hpdl_quant_output o;
    hpdl_cuda_quant_output d, d9;
    hpdl_rng r;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 91);
    make_output(&r, 9, 144, 1, 0, 1, m0, shift, bias, &o);
    HPDL_CHECK(hpdl_cuda_quant_output_create(&d, &o, 8));
    HPDL_CHECK(hpdl_cuda_quant_output_create(&d9, &o, 9));
    int8_t *dx = poisoned<int8_t>(2 * 16 * 25), *dw = poisoned<int8_t>(144 * 8), *dy = poisoned<int8_t>(2 * 8 * 25);
    std::vector<int8_t> before = download(dy, 2 * 8 * 25);
    HPDL_EXPECT(hpdl_cuda_quant_conv2d_i8(&p, &xd, dx, 128, dw, &d, &yd, dy, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_conv2d_i8(&p, &xd, NULL, 0, dw, &d, &yd, dy, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_conv2d_i8(&p, &xd, dx, 0, NULL, &d, &yd, dy, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_conv2d_i8(&p, &xd, dx, 0, dw, NULL, &yd, dy, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_conv2d_i8(&p, &xd, dx, 0, dw, &d9, &yd, dy, 0) == HPDL_ERR_INVALID); /* 9 channels for 8 */
    HPDL_EXPECT(hpdl_cuda_quant_conv2d_i8(&p, &nchw, dx, 0, dw, &d, &yd, dy, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_conv2d_i8(&p, &xd, dx, 0, dw, &d, &wrong, dy, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cuda_quant_conv2d_algo_i8((hpdl_quant_algo)7, &p, &xd, dx, 0, dw, &d, &yd, dy, 0) == HPDL_ERR_INVALID);
    p.groups = 2;
    HPDL_EXPECT(hpdl_cuda_quant_conv2d_i8(&p, &xd, dx, 0, dw, &d, &yd, dy, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(count_mismatches(download(dy, 2 * 8 * 25), before) == 0);
    hpdl_cuda_free(dx);
    hpdl_cuda_free(dw);
    hpdl_cuda_free(dy);
    hpdl_cuda_quant_output_destroy(&d);
    hpdl_cuda_quant_output_destroy(&d9);
}

/* ---- the quantized CNN: GPU int32 logits == CPU int32 logits ---------------------------- */

/* Builds q from freshly initialised parameters of net (batch norms folded)
   calibrated on n images X. */
static void quant_cnn_from_init(const hpdl_cnn *net, uint64_t seed, int n, const float *X, hpdl_quant_cnn *q) {
    std::vector<double> p((size_t)net->param_count), state((size_t)net->state_count + 1), pf((size_t)net->param_count);
    std::vector<float> p32((size_t)net->param_count);
    hpdl_cnn folded;
    HPDL_CHECK(hpdl_cnn_init(net, seed, p.data(), state.data()));
    HPDL_CHECK(hpdl_cnn_fold_batchnorm(net, p.data(), state.data(), 1e-5, &folded, pf.data(), NULL));
    for (int64_t i = 0; i < folded.param_count; i++) p32[i] = (float)pf[i];
    HPDL_CHECK(hpdl_quant_cnn_build(q, &folded, p32.data(), n, X, 100.0));
}

/* The GPU runner on q against hpdl_quant_cnn_logits/_accuracy: batches of
   max_batch (3, odd) over n images, logits byte for byte, with the
   convolutions on the mma rung and then on AUTO's (wgmma where it applies). */
static int quant_cnn_case(const char *name, const hpdl_quant_cnn *q, int n, const std::vector<float> &X) {
    const int classes = q->net.classes, features = (int)(X.size() / n), max_batch = 3;
    const hpdl_quant_algo algos[] = {HPDL_QUANT_MMA, HPDL_QUANT_AUTO};
    hpdl_cuda_quant_cnn g;
    std::vector<int32_t> want((size_t)n * classes), got((size_t)max_batch * classes), labels(n);
    double cpu_acc = 0;
    int i0, bad = 0, i, a;
    for (i = 0; i < n; i++) labels[i] = i % classes;
    HPDL_CHECK(hpdl_quant_cnn_logits(q, n, X.data(), want.data()));
    HPDL_CHECK(hpdl_quant_cnn_accuracy(q, n, X.data(), labels.data(), &cpu_acc));
    float *dX = upload(X);
    int32_t *dl = upload(labels);
    HPDL_CHECK(hpdl_cuda_quant_cnn_create(&g, q, max_batch));
    for (a = 0; a < HPDL_COUNT(algos); a++) {
        double gpu_acc = -1;
        int differ = 0;
        g.conv_algo = algos[a];
        for (i0 = 0; i0 < n; i0 += max_batch) {
            int batch = n - i0 < max_batch ? n - i0 : max_batch;
            memset(got.data(), 0x5a, got.size() * sizeof(int32_t));
            HPDL_EXPECT(hpdl_cuda_quant_cnn_logits(&g, batch, dX + (size_t)i0 * features, got.data(), 0) == HPDL_OK);
            for (i = 0; i < batch * classes; i++) differ += got[i] != want[(size_t)i0 * classes + i];
        }
        HPDL_EXPECT(hpdl_cuda_quant_cnn_accuracy(&g, n, dX, dl, &gpu_acc, 0) == HPDL_OK);
        HPDL_EXPECT(gpu_acc == cpu_acc);
        fprintf(stderr, "    %s, convolutions by %s: %d of %d logits differ; accuracy CPU %.3f GPU %.3f\n", name,
                hpdl_quant_algo_name(algos[a]), differ, n * classes, cpu_acc, gpu_acc);
        bad += differ;
    }
    HPDL_EXPECT(hpdl_cuda_quant_cnn_forward(&g, max_batch + 1, dX, 0) == HPDL_ERR_INVALID);
    hpdl_cuda_quant_cnn_destroy(&g);
    hpdl_cuda_free(dX);
    hpdl_cuda_free(dl);
    return bad;
}

static void test_quant_cnn_matches_cpu(void) {
    const int n = 7;
    hpdl_rng r;
    hpdl_cnn net;
    hpdl_quant_cnn q;
    hpdl_cnn_layer l[12];
    int k = 0, i;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 101);
    std::vector<float> X1((size_t)n * 16 * 16), X3((size_t)n * 3 * 10 * 10);
    for (i = 0; i < (int)X1.size(); i++) X1[i] = (float)(2 * hpdl_rng_uniform(&r) - 1);
    for (i = 0; i < (int)X3.size(); i++) X3[i] = (float)(2 * hpdl_rng_uniform(&r) - 1);
    /* the lab's small CNN: 5x5 convolutions, max pooling, linear layers */
    HPDL_CHECK(hpdl_cnn_small(&net, hpdl_shape_make(1, 16, 16), 10, HPDL_NHWC));
    quant_cnn_from_init(&net, 102, n, X1.data(), &q);
    HPDL_EXPECT(quant_cnn_case("small CNN", &q, n, X1) == 0);
    hpdl_quant_cnn_free(&q);
    /* residual sums (with and without a folded ReLU; identity and strided
       1x1 shortcuts), padded max pooling, a ReLU on its own, global pooling */
    l[k++] = hpdl_cnn_conv(16, 3, 1, 1, 1);
    l[k++] = hpdl_cnn_simple(HPDL_CNN_RELU); /* 1: folded into the conv */
    l[k++] = hpdl_cnn_conv(16, 3, 1, 1, 1);
    l[k++] = hpdl_cnn_add(2, 1);             /* 3: identity shortcut, no ReLU */
    l[k++] = hpdl_cnn_pool(HPDL_CNN_MAXPOOL, 3, 1, 1);
    l[k++] = hpdl_cnn_simple(HPDL_CNN_RELU); /* 5: after a pooling: its own kernel */
    l[k++] = hpdl_cnn_conv(32, 3, 2, 1, 1);
    l[k] = hpdl_cnn_conv(32, 1, 2, 0, 1);    /* 7: strided 1x1 shortcut from 5 */
    l[k++].input = 5;
    l[k++] = hpdl_cnn_add(6, 7);
    l[k++] = hpdl_cnn_simple(HPDL_CNN_RELU); /* folded into the sum */
    l[k++] = hpdl_cnn_simple(HPDL_CNN_GLOBAL_AVGPOOL);
    l[k++] = hpdl_cnn_linear(5);
    HPDL_CHECK(hpdl_cnn_define(&net, k, l, hpdl_shape_make(3, 10, 10), HPDL_NHWC));
    quant_cnn_from_init(&net, 103, n, X3.data(), &q);
    HPDL_EXPECT(quant_cnn_case("residual CNN", &q, n, X3) == 0);
    hpdl_quant_cnn_free(&q);
    /* ResNet-18 (CIFAR form) on 3x8x8 images: every stage, batch norms folded */
    std::vector<float> X8((size_t)n * 3 * 8 * 8, 0.0f);
    for (i = 0; i < (int)X8.size(); i++) X8[i] = (float)(2 * hpdl_rng_uniform(&r) - 1);
    HPDL_CHECK(hpdl_cnn_resnet18(&net, hpdl_shape_make(3, 8, 8), 10, HPDL_NHWC));
    quant_cnn_from_init(&net, 104, n, X8.data(), &q);
    HPDL_EXPECT(quant_cnn_case("ResNet-18", &q, n, X8) == 0);
    hpdl_quant_cnn_free(&q);
}

static void test_quant_cnn_bad_args(void) {
    hpdl_cuda_quant_cnn g;
    hpdl_quant_cnn q;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    memset(&q, 0, sizeof q);
    memset(&g, 0x5a, sizeof g);
    HPDL_EXPECT(hpdl_cuda_quant_cnn_create(&g, &q, 4) == HPDL_ERR_INVALID); /* not built */
    HPDL_EXPECT(hpdl_cuda_quant_cnn_create(&g, NULL, 4) == HPDL_ERR_INVALID);
    HPDL_EXPECT(((unsigned char *)&g)[0] == 0x5a);
    memset(&g, 0, sizeof g);
    HPDL_EXPECT(hpdl_cuda_quant_cnn_forward(&g, 1, NULL, 0) == HPDL_ERR_INVALID);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_requant_twins),           HPDL_TEST(test_gemm_i8_exact),
        HPDL_TEST(test_gemm_requant_exact),      HPDL_TEST(test_requant_outputs_saturate),
        HPDL_TEST(test_transpose_and_quantize),  HPDL_TEST(test_bad_args),
        HPDL_TEST(test_quant_mlp_matches_cpu),   HPDL_TEST(test_fixed_twin),
        HPDL_TEST(test_conv_i8_exact),           HPDL_TEST(test_conv_requant_cases),
        HPDL_TEST(test_conv_bad_args),           HPDL_TEST(test_quant_cnn_matches_cpu),
        HPDL_TEST(test_quant_cnn_bad_args)};
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
