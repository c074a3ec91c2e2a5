/* bench/quantize: int8 GEMM throughput (TOPS) of hpdl's tensor-core (wgmma on
   Hopper, mma.sync) and dp4a kernels against hpdl's f16 GEMM (AUTO), cuBLAS f16 and cuBLASLt
   int8, at 1024..8192 (M = N = K); then quantized vs float MLP inference
   throughput (samples/s) at the test set's size; then quantized CNN
   inference (images/s, batch 256, 3x32x32: the lab's small CNN and
   ResNet-18, fresh weights, batch norms folded, calibrated on random
   images) against hpdl's f16 and f32 inference of the same folded network
   (the GPU CNN backend's forward, hpdl_cuda_cnn_layer_times) and PyTorch f16
   eager inference (bench/pytorch/cnn.py --infer; BN layers unfolded there;
   skipped with its message without torch); then, built with cuDNN, the int8
   convolution per ResNet-50 layer (bench/conv's, batch 128) in TOPS against
   hpdl's and cuDNN's f16 forward in TFLOP/s, timed in turns.

       make build/bench/quantize && build/bench/quantize [max_size]
       flags: --max-size N (the same as a bare max_size) [8192], --cnn 0|1 (the
       CNN rows) [1], --output DIR [$HPDL_RESULTS, else results/<gpu>], --help,
       --version

   Checks first: each int8 kernel and cuBLASLt against the CPU
   (hpdl_quant_gemm_i8) on small shapes, bit for bit; on the big sizes mma
   against dp4a, wgmma and cuBLASLt on the device, bit for bit; f16 against mma on
   small integers (exact in f16 with f32 accumulation); the GPU quantized
   MLP's and CNNs' int32 logits against the CPU's. Timing: warm-up, CUDA events, median,
   L2 flushed before each run. Layout: A row-major M x K, B given N x K (the
   int8 tensor-core layout, "TN" for cuBLASLt); f16 runs A x B with both
   row-major (its usual call).

   CSV: quantize.csv (headline: int8 mma TOPS vs cuBLASLt int8 and vs hpdl
   f16 per size; MLP samples/s vs float; CNN images/s vs hpdl f16, f32 and
   PyTorch f16; ResNet-50 int8 convolution TOPS vs cuDNN f16),
   quantize_gemm.csv (size, variant, ms, TOPS), quantize_mlp.csv (model,
   variant, ms, samples/s or images/s; the CNNs as cnn_<net>),
   quantize_conv.csv (layer, variant, ms, TOPS). */
#include "hpdl_cuda.cuh"

#include <cublasLt.h>
#include <sys/stat.h>

#include <vector>

/* ---- device data ------------------------------------------------------------------------ */

static __device__ __forceinline__ uint32_t hash32(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
    return (uint32_t)x;
}

/* int8 values in [-span, span) (span 128: the full range). */
__global__ void fill_i8(int8_t *p, size_t n, uint64_t seed, int span) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (int8_t)((int)(hash32(i + seed * 0x9e3779b97f4a7c15ull) % (uint32_t)(2 * span)) - span);
}

__global__ void i8_to_f16(const int8_t *x, __half *y, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = __int2half_rn(x[i]);
}

/* Counts a[i] != b[i]; against f16 values bh, counts those further from
   a[i] than f16's rounding (2^-11 relative, with margin). */
__global__ void count_diff(const int32_t *a, const int32_t *b, const __half *bh, size_t n, unsigned long long *bad) {
    unsigned long long local = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        local += bh ? fabsf((float)a[i] - __half2float(bh[i])) > 1e-3f * fabsf((float)a[i]) + 0.5f : a[i] != b[i];
    if (local) atomicAdd(bad, local);
}

static const unsigned GRID = 1024, BLOCK = 256;

static unsigned long long mismatches(const int32_t *a, const int32_t *b, const __half *bh, size_t n) {
    unsigned long long *d, h = 0;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d, sizeof *d));
    HPDL_CUDA_CHECK(cudaMemset(d, 0, sizeof *d));
    count_diff<<<GRID, BLOCK>>>(a, b, bh, n, d);
    HPDL_CUDA_CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    hpdl_cuda_free(d);
    return h;
}

/* ---- cuBLASLt int8 ---------------------------------------------------------------------- */

/* Row-major C (M x N, int32) = A (M x K) * Bt^T (Bt N x K), as column-major
   C^T (N x M) = op(Bt_cm) * A_cm, where Bt_cm is Bt read column-major (K x N,
   transposed: op T) and A_cm is A read column-major (K x M, op N): the "TN"
   layout cuBLASLt's int8 kernels require (CUBLAS_COMPUTE_32I, int32 scale). */
typedef struct lt_gemm {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    void *ws;
    size_t ws_bytes;
    const int8_t *A, *Bt;
    int32_t *C;
} lt_gemm;

static int lt_create(lt_gemm *g, int M, int N, int K, const int8_t *A, const int8_t *Bt, int32_t *C) {
    cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    memset(g, 0, sizeof *g);
    g->A = A; g->Bt = Bt; g->C = C;
    g->ws_bytes = 32u << 20;
    HPDL_CHECK(hpdl_cuda_alloc(&g->ws, g->ws_bytes));
    if (cublasLtCreate(&g->h) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32I, CUDA_R_32I) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&g->la, CUDA_R_8I, K, N, K) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_8I, K, M, K) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&g->lc, CUDA_R_32I, N, M, N) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS)
        return 0;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &g->ws_bytes, sizeof g->ws_bytes);
    if (cublasLtMatmulAlgoGetHeuristic(g->h, g->desc, g->la, g->lb, g->lc, g->lc, pref, 1, &res, &found) !=
            CUBLAS_STATUS_SUCCESS ||
        found < 1)
        found = 0;
    cublasLtMatmulPreferenceDestroy(pref);
    if (found) g->algo = res.algo;
    return found;
}

static void lt_destroy(lt_gemm *g) {
    if (g->lc) cublasLtMatrixLayoutDestroy(g->lc);
    if (g->lb) cublasLtMatrixLayoutDestroy(g->lb);
    if (g->la) cublasLtMatrixLayoutDestroy(g->la);
    if (g->desc) cublasLtMatmulDescDestroy(g->desc);
    if (g->h) cublasLtDestroy(g->h);
    hpdl_cuda_free(g->ws);
}

static void lt_run(void *ctx, cudaStream_t stream) {
    lt_gemm *g = (lt_gemm *)ctx;
    int32_t one = 1, zero = 0;
    HPDL_CUBLAS_CHECK(cublasLtMatmul(g->h, g->desc, &one, g->Bt, g->la, g->A, g->lb, &zero, g->C, g->lc, g->C, g->lc,
                                     &g->algo, g->ws, g->ws_bytes, stream));
}

/* ---- the variants ------------------------------------------------------------------------ */

typedef struct gemm_case {
    int n;
    const int8_t *A, *Bt;
    int32_t *C;
    const hpdl_f16 *Ah, *Bh;
    hpdl_f16 *Ch;
    hpdl_quant_algo algo;
    hpdl_gemm_algo falgo;
} gemm_case;

static void run_int8(void *ctx, cudaStream_t stream) {
    gemm_case *c = (gemm_case *)ctx;
    HPDL_CHECK(hpdl_cuda_quant_gemm_nt_i8(c->algo, c->n, c->n, c->n, c->A, c->n, 0, c->Bt, c->n, 0, c->C, c->n, stream));
}

static void run_f16(void *ctx, cudaStream_t stream) {
    gemm_case *c = (gemm_case *)ctx;
    HPDL_CHECK(hpdl_cuda_gemm_algo_f16(c->falgo, HPDL_NO_TRANS, HPDL_NO_TRANS, c->n, c->n, c->n, 1.0f, c->Ah, c->n, c->Bh,
                                       c->n, 0.0f, c->Ch, c->n, stream));
}

/* ---- checks ------------------------------------------------------------------------------ */

/* Each int8 kernel (and cuBLASLt where given) against the CPU on odd shapes, bit for bit. */
static int check_small(void) {
    static const int shapes[][5] = {{333, 257, 301, 3, -2}, {128, 256, 64, 0, 0}, {77, 1000, 45, -128, 5}};
    static const hpdl_quant_algo algos[3] = {HPDL_QUANT_MMA, HPDL_QUANT_DP4A, HPDL_QUANT_WGMMA};
    hpdl_rng r;
    int s, a, ok = 1;
    hpdl_rng_seed(&r, 5);
    for (s = 0; s < 3; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], za = shapes[s][3], zb = shapes[s][4];
        std::vector<int8_t> A((size_t)M * K), B((size_t)K * N);
        std::vector<int32_t> want((size_t)M * N), got((size_t)M * N);
        int8_t *dA, *dB;
        int32_t *dC;
        for (size_t i = 0; i < A.size(); i++) A[i] = (int8_t)((int)hpdl_rng_below(&r, 256) - 128);
        for (size_t i = 0; i < B.size(); i++) B[i] = (int8_t)((int)hpdl_rng_below(&r, 256) - 128);
        HPDL_CHECK(hpdl_quant_gemm_i8(M, N, K, A.data(), K, za, B.data(), N, zb, want.data(), N));
        HPDL_CHECK(hpdl_cuda_alloc((void **)&dA, A.size()));
        HPDL_CHECK(hpdl_cuda_alloc((void **)&dB, B.size()));
        HPDL_CHECK(hpdl_cuda_alloc((void **)&dC, want.size() * 4));
        HPDL_CUDA_CHECK(cudaMemcpy(dA, A.data(), A.size(), cudaMemcpyHostToDevice));
        HPDL_CUDA_CHECK(cudaMemcpy(dB, B.data(), B.size(), cudaMemcpyHostToDevice));
        for (a = 0; a < 3; a++) {
            hpdl_status st;
            HPDL_CHECK(hpdl_cuda_poison(dC, want.size() * 4));
            st = hpdl_cuda_quant_gemm_i8(algos[a], M, N, K, dA, K, za, dB, N, zb, dC, N, 0);
            if (st == HPDL_ERR_UNSUPPORTED && algos[a] == HPDL_QUANT_WGMMA) continue; /* rows not 16-byte aligned, or not Hopper */
            HPDL_CHECK(st);
            HPDL_CUDA_CHECK(cudaMemcpy(got.data(), dC, got.size() * 4, cudaMemcpyDeviceToHost));
            if (memcmp(got.data(), want.data(), got.size() * 4)) {
                printf("CHECK FAILED: %s %dx%dx%d differs from the CPU\n", hpdl_quant_algo_name(algos[a]), M, N, K);
                ok = 0;
            }
        }
        hpdl_cuda_free(dA);
        hpdl_cuda_free(dB);
        hpdl_cuda_free(dC);
    }
    printf("check: mma, dp4a (and wgmma where it runs) == CPU (hpdl_quant_gemm_i8) on 3 odd shapes with zero points: %s\n",
           ok ? "ok" : "FAILED");
    return ok;
}

/* cuBLASLt against the CPU at 256^3 (its shapes must be multiples of 4). */
static int check_cublaslt_small(void) {
    const int n = 256;
    std::vector<int8_t> A((size_t)n * n), Bt((size_t)n * n), B((size_t)n * n);
    std::vector<int32_t> want((size_t)n * n), got((size_t)n * n);
    hpdl_rng r;
    lt_gemm lt;
    int8_t *dA, *dBt;
    int32_t *dC;
    int ok;
    hpdl_rng_seed(&r, 6);
    for (size_t i = 0; i < A.size(); i++) A[i] = (int8_t)((int)hpdl_rng_below(&r, 256) - 128);
    for (size_t i = 0; i < Bt.size(); i++) Bt[i] = (int8_t)((int)hpdl_rng_below(&r, 256) - 128);
    for (int k = 0; k < n; k++)
        for (int j = 0; j < n; j++) B[(size_t)k * n + j] = Bt[(size_t)j * n + k];
    HPDL_CHECK(hpdl_quant_gemm_i8(n, n, n, A.data(), n, 0, B.data(), n, 0, want.data(), n));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dA, A.size()));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dBt, Bt.size()));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dC, want.size() * 4));
    HPDL_CUDA_CHECK(cudaMemcpy(dA, A.data(), A.size(), cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dBt, Bt.data(), Bt.size(), cudaMemcpyHostToDevice));
    HPDL_CHECK(hpdl_cuda_poison(dC, want.size() * 4));
    ok = lt_create(&lt, n, n, n, dA, dBt, dC);
    if (ok) {
        lt_run(&lt, 0);
        HPDL_CUDA_CHECK(cudaMemcpy(got.data(), dC, got.size() * 4, cudaMemcpyDeviceToHost));
        ok = memcmp(got.data(), want.data(), got.size() * 4) == 0;
        printf("check: cuBLASLt int8 == CPU at 256^3: %s\n", ok ? "ok" : "FAILED");
    } else {
        printf("check: cuBLASLt int8: no algorithm for this GPU/library, it is left out\n");
        ok = -1;
    }
    lt_destroy(&lt);
    hpdl_cuda_free(dA);
    hpdl_cuda_free(dBt);
    hpdl_cuda_free(dC);
    return ok;
}

/* ---- GEMM sizes ---------------------------------------------------------------------------- */

typedef struct gemm_result { double wgmma, mma, dp4a, lt, f16, f16_cublas; } gemm_result; /* TOPS, 0: not run */

static double tops(int n, double ms) { return ms > 0 ? 2.0 * n * (double)n * n / (ms * 1e-3) / 1e12 : 0.0; }

static double time_ms(hpdl_cuda_work_fn fn, void *ctx, int n, hpdl_cuda_l2_flusher *fl) {
    double ms = 0;
    int reps = n >= 8192 ? 10 : n >= 4096 ? 20 : 50;
    HPDL_CHECK(hpdl_cuda_time_median_ms(fn, ctx, 0, 3, reps, fl, &ms));
    return ms;
}

static int bench_size(int n, int use_lt, hpdl_cuda_l2_flusher *fl, FILE *detail, gemm_result *res) {
    size_t nn = (size_t)n * n;
    int8_t *A, *Bt, *B8;
    int32_t *C, *C2;
    hpdl_f16 *Ah, *Bh, *Ch;
    gemm_case c;
    lt_gemm lt;
    unsigned long long bad_dp4a, bad_wgmma = 0, bad_lt = 0, bad_f16;
    int ok = 1, have_lt = 0, have_wgmma;
    memset(res, 0, sizeof *res);
    HPDL_CHECK(hpdl_cuda_alloc((void **)&A, nn));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&Bt, nn));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&B8, nn));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&C, nn * 4));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&C2, nn * 4));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&Ah, nn * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&Bh, nn * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&Ch, nn * 2));
    fill_i8<<<GRID, BLOCK>>>(A, nn, 1 + n, 128);
    fill_i8<<<GRID, BLOCK>>>(Bt, nn, 2 + n, 128);
    memset(&c, 0, sizeof c);
    c.n = n; c.A = A; c.Bt = Bt; c.C = C; c.Ah = Ah; c.Bh = Bh; c.Ch = Ch;

    /* checks: mma vs dp4a and cuBLASLt on full-range data, bit for bit; f16
       vs int8 (B given K x N: the transposing path) on integers in [-2, 2),
       exact in f32 accumulation, so within f16's output rounding */
    c.algo = HPDL_QUANT_MMA;
    run_int8(&c, 0);
    c.C = C2; c.algo = HPDL_QUANT_DP4A;
    run_int8(&c, 0);
    c.C = C;
    bad_dp4a = mismatches(C, C2, NULL, nn);
    have_wgmma = hpdl_cuda_quant_gemm_nt_i8(HPDL_QUANT_WGMMA, n, n, n, A, n, 0, Bt, n, 0, C2, n, 0) == HPDL_OK;
    if (have_wgmma) bad_wgmma = mismatches(C, C2, NULL, nn);
    if (use_lt && (have_lt = lt_create(&lt, n, n, n, A, Bt, C2))) {
        HPDL_CHECK(hpdl_cuda_poison(C2, nn * 4));
        lt_run(&lt, 0);
        bad_lt = mismatches(C, C2, NULL, nn);
    }
    fill_i8<<<GRID, BLOCK>>>(B8, nn, 3 + n, 2);
    { /* small-integer A in C2's memory */
        int8_t *A2 = (int8_t *)C2;
        fill_i8<<<GRID, BLOCK>>>(A2, nn, 4 + n, 2);
        i8_to_f16<<<GRID, BLOCK>>>(A2, (__half *)Ah, nn);
        i8_to_f16<<<GRID, BLOCK>>>(B8, (__half *)Bh, nn); /* Bh = B8 read as K x N */
        HPDL_CHECK(hpdl_cuda_quant_gemm_i8(HPDL_QUANT_AUTO, n, n, n, A2, n, 0, B8, n, 0, C, n, 0));
        c.falgo = HPDL_GEMM_AUTO;
        run_f16(&c, 0);
        bad_f16 = mismatches(C, NULL, (const __half *)Ch, nn);
    }
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    printf("check %5d: dp4a == mma: %s   wgmma == mma: %s   cuBLASLt == mma: %s   f16 AUTO ~ int8 (small integers): %s\n",
           n, bad_dp4a ? "FAILED" : "ok", !have_wgmma ? "n/a" : bad_wgmma ? "FAILED" : "ok",
           !have_lt ? "n/a" : bad_lt ? "FAILED" : "ok", bad_f16 ? "FAILED" : "ok");
    ok = !bad_dp4a && !bad_wgmma && !bad_lt && !bad_f16;

    /* timing on full-range int8 and f16 in [-1, 1) */
    fill_i8<<<GRID, BLOCK>>>(A, nn, 1 + n, 128);
    if (have_wgmma) {
        c.algo = HPDL_QUANT_WGMMA;
        res->wgmma = tops(n, time_ms(run_int8, &c, n, fl));
    }
    c.algo = HPDL_QUANT_MMA;
    res->mma = tops(n, time_ms(run_int8, &c, n, fl));
    c.algo = HPDL_QUANT_DP4A;
    res->dp4a = tops(n, time_ms(run_int8, &c, n, fl));
    if (have_lt) res->lt = tops(n, time_ms(lt_run, &lt, n, fl));
    c.falgo = HPDL_GEMM_AUTO;
    res->f16 = tops(n, time_ms(run_f16, &c, n, fl));
    c.falgo = HPDL_GEMM_CUBLAS;
    res->f16_cublas = tops(n, time_ms(run_f16, &c, n, fl));
    {   /* a variant that did not run (wgmma off Hopper, no cuBLASLt algorithm) reads n/a, not 0 */
        double v[6] = {res->wgmma, res->mma, res->dp4a, res->lt, res->f16, res->f16_cublas};
        int i;
        printf("%6d", n);
        for (i = 0; i < 6; i++)
            if (v[i] > 0) printf(" %14.1f", v[i]);
            else printf(" %14s", "n/a");
        printf("\n");
    }
    if (detail) {
        if (have_wgmma) fprintf(detail, "%d,int8_wgmma,%.6g\n", n, res->wgmma);
        fprintf(detail, "%d,int8_mma,%.6g\n%d,int8_dp4a,%.6g\n", n, res->mma, n, res->dp4a);
        if (have_lt) fprintf(detail, "%d,int8_cublaslt,%.6g\n", n, res->lt);
        fprintf(detail, "%d,f16_hpdl_auto,%.6g\n%d,f16_cublas,%.6g\n", n, res->f16, n, res->f16_cublas);
    }
    if (use_lt) lt_destroy(&lt);
    hpdl_cuda_free(A); hpdl_cuda_free(Bt); hpdl_cuda_free(B8); hpdl_cuda_free(C); hpdl_cuda_free(C2);
    hpdl_cuda_free(Ah); hpdl_cuda_free(Bh); hpdl_cuda_free(Ch);
    return ok;
}

/* ---- MLP inference ------------------------------------------------------------------------ */

/* Float forward on the GPU with hpdl's GEMMs: per layer Y = X W (+ b, ReLU when hidden). */
template <typename T> __global__ void bias_relu(T *y, int rows, int cols, const T *b, int relu) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (size_t)rows * cols; i += (size_t)gridDim.x * blockDim.x) {
        float v = (float)y[i] + (float)b[i % cols];
        y[i] = (T)(relu && v < 0.0f ? 0.0f : v);
    }
}

__global__ void f32_to_f16(const float *x, __half *y, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = __float2half_rn(x[i]);
}

typedef struct float_mlp {
    int L, batch, widths[HPDL_MLP_MAX_LAYERS + 1], half;
    const float *X;
    void *W[HPDL_MLP_MAX_LAYERS], *b[HPDL_MLP_MAX_LAYERS], *act[HPDL_MLP_MAX_LAYERS + 1];
} float_mlp;

static void float_forward(void *ctx, cudaStream_t stream) {
    float_mlp *f = (float_mlp *)ctx;
    int l;
    if (f->half) f32_to_f16<<<GRID, BLOCK, 0, stream>>>(f->X, (__half *)f->act[0], (size_t)f->batch * f->widths[0]);
    for (l = 0; l < f->L; l++) {
        int n_in = f->widths[l], n_out = f->widths[l + 1], relu = l < f->L - 1;
        const void *in = l || f->half ? f->act[l] : (const void *)f->X;
        if (f->half) {
            HPDL_CHECK(hpdl_cuda_gemm_f16(HPDL_NO_TRANS, HPDL_NO_TRANS, f->batch, n_out, n_in, 1.0f, (const hpdl_f16 *)in,
                                          n_in, (const hpdl_f16 *)f->W[l], n_out, 0.0f, (hpdl_f16 *)f->act[l + 1], n_out,
                                          stream));
            bias_relu<__half><<<GRID, BLOCK, 0, stream>>>((__half *)f->act[l + 1], f->batch, n_out, (const __half *)f->b[l], relu);
        } else {
            HPDL_CHECK(hpdl_cuda_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, f->batch, n_out, n_in, 1.0f, (const float *)in, n_in,
                                          (const float *)f->W[l], n_out, 0.0f, (float *)f->act[l + 1], n_out, stream));
            bias_relu<float><<<GRID, BLOCK, 0, stream>>>((float *)f->act[l + 1], f->batch, n_out, (const float *)f->b[l], relu);
        }
    }
}

static void float_mlp_create(float_mlp *f, const hpdl_mlp_f32 *m, int batch, const float *X, int half) {
    size_t es = half ? 2 : 4;
    int l;
    memset(f, 0, sizeof *f);
    f->L = m->n_layers; f->batch = batch; f->X = X; f->half = half;
    memcpy(f->widths, m->widths, sizeof f->widths);
    for (l = 0; l <= f->L; l++) HPDL_CHECK(hpdl_cuda_alloc(&f->act[l], (size_t)batch * m->widths[l] * es));
    for (l = 0; l < f->L; l++) {
        size_t nw = (size_t)m->widths[l] * m->widths[l + 1], nb = (size_t)m->widths[l + 1];
        std::vector<hpdl_f16> hw(nw), hb(nb);
        for (size_t i = 0; i < nw; i++) hw[i] = hpdl_f16_from_f32(m->W[l][i]);
        for (size_t i = 0; i < nb; i++) hb[i] = hpdl_f16_from_f32(m->b[l][i]);
        HPDL_CHECK(hpdl_cuda_alloc(&f->W[l], nw * es));
        HPDL_CHECK(hpdl_cuda_alloc(&f->b[l], nb * es));
        HPDL_CUDA_CHECK(cudaMemcpy(f->W[l], half ? (const void *)hw.data() : m->W[l], nw * es, cudaMemcpyHostToDevice));
        HPDL_CUDA_CHECK(cudaMemcpy(f->b[l], half ? (const void *)hb.data() : m->b[l], nb * es, cudaMemcpyHostToDevice));
    }
}

static void float_mlp_destroy(float_mlp *f) {
    int l;
    for (l = 0; l <= f->L; l++) hpdl_cuda_free(f->act[l]);
    for (l = 0; l < f->L; l++) { hpdl_cuda_free(f->W[l]); hpdl_cuda_free(f->b[l]); }
}

typedef struct quant_run { hpdl_cuda_quant_mlp *g; int batch; const float *X; } quant_run;

static void quant_forward(void *ctx, cudaStream_t stream) {
    quant_run *q = (quant_run *)ctx;
    HPDL_CHECK(hpdl_cuda_quant_mlp_forward(q->g, q->batch, q->X, stream));
}

/* One model: random He weights and biases, inputs like normalized pixels;
   quantized (calibrated on 512 rows), checked against the CPU on the first
   64 rows (the CPU twin is a plain triple loop), timed. */
static int bench_mlp(const char *name, int n_widths, const int *widths, int batch, FILE *headline, FILE *detail) {
    hpdl_rng r;
    hpdl_mlp_f32 m;
    hpdl_quant_mlp q;
    hpdl_quant_mlp_work w;
    hpdl_cuda_quant_mlp g;
    float_mlp f32, f16;
    quant_run qr;
    int l, check_rows = 64, classes = widths[n_widths - 1], ok;
    double ms_q, ms_dp4a, ms_f32, ms_f16;
    std::vector<float> X((size_t)batch * widths[0]);
    float *dX;
    hpdl_rng_seed(&r, 9);
    HPDL_CHECK(hpdl_mlp_create_f32(&m, n_widths, widths, HPDL_ACT_RELU, 10));
    for (l = 0; l < m.n_layers; l++)
        for (int j = 0; j < widths[l + 1]; j++) m.b[l][j] = (float)(0.1 * hpdl_rng_normal(&r));
    for (size_t i = 0; i < X.size(); i++) X[i] = (float)(hpdl_rng_uniform(&r) * 2.8 - 0.8);
    HPDL_CHECK(hpdl_quant_mlp_build(&q, &m, 512, X.data(), 100.0));
    HPDL_CHECK(hpdl_quant_mlp_work_create(&w, &q, check_rows));
    HPDL_CHECK(hpdl_quant_mlp_forward(&q, HPDL_QUANT_INTEGER, &w, check_rows, X.data()));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dX, X.size() * sizeof(float)));
    HPDL_CUDA_CHECK(cudaMemcpy(dX, X.data(), X.size() * sizeof(float), cudaMemcpyHostToDevice));
    HPDL_CHECK(hpdl_cuda_quant_mlp_create(&g, &q, batch, HPDL_QUANT_AUTO));
    HPDL_CHECK(hpdl_cuda_quant_mlp_forward(&g, batch, dX, 0));
    {
        std::vector<int32_t> got((size_t)check_rows * classes);
        HPDL_CUDA_CHECK(cudaMemcpy(got.data(), g.logits, got.size() * 4, cudaMemcpyDeviceToHost));
        ok = memcmp(got.data(), w.logits, got.size() * 4) == 0;
    }
    qr.g = &g; qr.batch = batch; qr.X = dX;
    ms_q = time_ms(quant_forward, &qr, 4096, NULL);
    g.algo = HPDL_QUANT_DP4A;
    ms_dp4a = time_ms(quant_forward, &qr, 4096, NULL);
    float_mlp_create(&f32, &m, batch, dX, 0);
    float_mlp_create(&f16, &m, batch, dX, 1);
    ms_f32 = time_ms(float_forward, &f32, 4096, NULL);
    ms_f16 = time_ms(float_forward, &f16, 4096, NULL);
    printf("%-8s batch %5d  GPU int8 logits == CPU: %-6s int8 mma %9.3f ms (%10.0f /s)  dp4a %9.3f ms  "
           "f32 %9.3f ms (%10.0f /s)  f16 %9.3f ms\n",
           name, batch, ok ? "ok" : "FAILED", ms_q, batch / (ms_q * 1e-3), ms_dp4a, ms_f32, batch / (ms_f32 * 1e-3), ms_f16);
    {
        char metric[96];
        snprintf(metric, sizeof metric, "mlp_%s_int8_samples_per_s", name);
        hpdl_csv_row(headline, metric, batch / (ms_q * 1e-3), "samples/s", "float_f32_hpdl", batch / (ms_f32 * 1e-3), 1);
        snprintf(metric, sizeof metric, "mlp_%s_int8_vs_f16_samples_per_s", name);
        hpdl_csv_row(headline, metric, batch / (ms_q * 1e-3), "samples/s", "float_f16_hpdl", batch / (ms_f16 * 1e-3), 1);
    }
    if (detail)
        fprintf(detail, "%s,int8_mma,%.6g,%.6g\n%s,int8_dp4a,%.6g,%.6g\n%s,f32,%.6g,%.6g\n%s,f16,%.6g,%.6g\n", name, ms_q,
                batch / (ms_q * 1e-3), name, ms_dp4a, batch / (ms_dp4a * 1e-3), name, ms_f32, batch / (ms_f32 * 1e-3),
                name, ms_f16, batch / (ms_f16 * 1e-3));
    float_mlp_destroy(&f32);
    float_mlp_destroy(&f16);
    hpdl_cuda_quant_mlp_destroy(&g);
    hpdl_cuda_free(dX);
    hpdl_quant_mlp_work_destroy(&w);
    hpdl_quant_mlp_free(&q);
    hpdl_mlp_destroy_f32(&m);
    return ok;
}

/* ---- CNN inference ------------------------------------------------------------------------- */

#define CNN_BATCH 256
#define CNN_CHECK_IMAGES 4  /* GPU int8 logits against the CPU's (a plain loop: seconds for ResNet-18) */
#define CNN_CALIB_IMAGES 16 /* calibration: f32 forward passes on the CPU */
#define TORCH_SCRIPT "bench/pytorch/cnn.py"

typedef struct quant_cnn_run { hpdl_cuda_quant_cnn *g; const float *X; } quant_cnn_run;

static void quant_cnn_forward(void *ctx, cudaStream_t stream) {
    quant_cnn_run *q = (quant_cnn_run *)ctx;
    HPDL_CHECK(hpdl_cuda_quant_cnn_forward(q->g, CNN_BATCH, q->X, stream));
}

static void to_elem(float v, float *out) { *out = v; }
static void to_elem(float v, hpdl_f16 *out) { *out = hpdl_f16_from_f32(v); }

/* hpdl's float inference of the folded network on the GPU backend (T: f32,
   or f16 with f16 images): the whole forward's median time from
   hpdl_cuda_cnn_layer_times. */
template <typename T>
static double float_cnn_ms(const hpdl_cnn *net, const std::vector<double> &params, const std::vector<float> &X) {
    hpdl_cuda_cnn g;
    hpdl_cnn_run r;
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0, 0, 0);
    std::vector<double> layer_ms((size_t)net->n_layers);
    std::vector<T> x(X.size());
    double whole = 0;
    T *dX = NULL;
    for (size_t i = 0; i < X.size(); i++) to_elem(X[i], &x[i]);
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dX, x.size() * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMemcpy(dX, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
    HPDL_CHECK(hpdl_cuda_cnn_create<T>(&g, HPDL_CONV_AUTO, 0));
    HPDL_CHECK(hpdl_cnn_run_create(&r, net, &g.be, CNN_BATCH, &opt));
    HPDL_CHECK(hpdl_cnn_set_params(&r, params.data(), NULL));
    HPDL_CHECK(hpdl_cuda_cnn_layer_times(&g, &r, CNN_BATCH, dX, 10, layer_ms.data(), &whole));
    hpdl_cnn_run_destroy(&r);
    hpdl_cuda_cnn_destroy(&g);
    hpdl_cuda_free(dX);
    return whole;
}

/* PyTorch f16 eager inference (bench/pytorch/cnn.py --infer) of both nets
   at CNN_BATCH: ms per batch into torch_ms[0] (small), [1] (ResNet-18); 0
   where it did not run (the script's words are printed). */
static void torch_cnn_ms(double torch_ms[2]) {
    char line[512];
    FILE *p = popen("python3 " TORCH_SCRIPT " --infer --net small,resnet18 --shape 3x32x32 --batch 256 2>&1", "r");
    torch_ms[0] = torch_ms[1] = 0;
    if (!p) { printf("  pytorch: cannot run python3 (%s)\n", strerror(errno)); return; }
    while (fgets(line, sizeof line, p)) {
        char name[32];
        int b;
        double ms;
        if (sscanf(line, "pytorch_cnn_infer net %31s batch %d ms %lf", name, &b, &ms) == 3 && b == CNN_BATCH)
            torch_ms[strcmp(name, "small") != 0] = ms;
        else
            printf("  %s", line);
    }
    pclose(p);
}

/* One network (3x32x32 images, 10 classes): fresh parameters, batch norms
   folded, quantized (calibrated on random images); GPU int8 logits checked
   against the CPU's on CNN_CHECK_IMAGES images; int8 (convolutions by AUTO:
   wgmma on Hopper; and all on the mma rung), f32 and f16 inference timed
   at CNN_BATCH, against PyTorch f16 (torch_ms, 0: absent). */
static int bench_cnn(const char *name, const hpdl_cnn *net, double torch_ms, FILE *headline, FILE *detail) {
    hpdl_rng r;
    hpdl_cnn folded;
    hpdl_quant_cnn q;
    hpdl_cuda_quant_cnn g;
    quant_cnn_run qr;
    const int classes = net->classes, features = (int)hpdl__shape_count(net->input);
    std::vector<double> p((size_t)net->param_count), state((size_t)net->state_count + 1), pf((size_t)net->param_count);
    std::vector<float> p32((size_t)net->param_count), X((size_t)CNN_BATCH * features);
    std::vector<int32_t> want((size_t)CNN_CHECK_IMAGES * classes), got(want.size());
    double ms_q, ms_q_mma, ms_f32, ms_f16;
    float *dX;
    int ok;
    hpdl_rng_seed(&r, 12);
    for (size_t i = 0; i < X.size(); i++) X[i] = (float)(2 * hpdl_rng_uniform(&r) - 1);
    HPDL_CHECK(hpdl_cnn_init(net, 13, p.data(), state.data()));
    HPDL_CHECK(hpdl_cnn_fold_batchnorm(net, p.data(), state.data(), 1e-5, &folded, pf.data(), NULL));
    for (int64_t i = 0; i < folded.param_count; i++) p32[i] = (float)pf[i];
    HPDL_CHECK(hpdl_quant_cnn_build(&q, &folded, p32.data(), CNN_CALIB_IMAGES, X.data(), 100.0));
    HPDL_CHECK(hpdl_quant_cnn_logits(&q, CNN_CHECK_IMAGES, X.data(), want.data()));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dX, X.size() * sizeof(float)));
    HPDL_CUDA_CHECK(cudaMemcpy(dX, X.data(), X.size() * sizeof(float), cudaMemcpyHostToDevice));
    HPDL_CHECK(hpdl_cuda_quant_cnn_create(&g, &q, CNN_BATCH));
    HPDL_CHECK(hpdl_cuda_quant_cnn_logits(&g, CNN_CHECK_IMAGES, dX, got.data(), 0));
    ok = memcmp(got.data(), want.data(), want.size() * sizeof(int32_t)) == 0;
    qr.g = &g; qr.X = dX;
    ms_q = time_ms(quant_cnn_forward, &qr, 4096, NULL);
    g.conv_algo = HPDL_QUANT_MMA;
    ms_q_mma = time_ms(quant_cnn_forward, &qr, 4096, NULL);
    g.conv_algo = HPDL_QUANT_AUTO;
    ms_f32 = float_cnn_ms<float>(&folded, pf, X);
    ms_f16 = float_cnn_ms<hpdl_f16>(&folded, pf, X);
    printf("%-9s batch %d  GPU int8 logits == CPU: %-6s int8 %8.3f ms (%9.0f img/s)  int8 mma %8.3f ms  "
           "f16 %8.3f ms (%9.0f img/s)  f32 %8.3f ms  PyTorch f16 ",
           name, CNN_BATCH, ok ? "ok" : "FAILED", ms_q, CNN_BATCH / (ms_q * 1e-3), ms_q_mma, ms_f16,
           CNN_BATCH / (ms_f16 * 1e-3), ms_f32);
    if (torch_ms > 0) printf("%8.3f ms (%9.0f img/s)\n", torch_ms, CNN_BATCH / (torch_ms * 1e-3));
    else printf("not run\n");
    {
        char metric[96];
        snprintf(metric, sizeof metric, "cnn_%s_int8_vs_f16_images_per_s", name);
        hpdl_csv_row(headline, metric, CNN_BATCH / (ms_q * 1e-3), "images/s", "float_f16_hpdl", CNN_BATCH / (ms_f16 * 1e-3), 1);
        snprintf(metric, sizeof metric, "cnn_%s_int8_vs_f32_images_per_s", name);
        hpdl_csv_row(headline, metric, CNN_BATCH / (ms_q * 1e-3), "images/s", "float_f32_hpdl", CNN_BATCH / (ms_f32 * 1e-3), 1);
        snprintf(metric, sizeof metric, "cnn_%s_int8_vs_torch_f16_images_per_s", name);
        if (torch_ms > 0)
            hpdl_csv_row(headline, metric, CNN_BATCH / (ms_q * 1e-3), "images/s", "pytorch_eager_f16", CNN_BATCH / (torch_ms * 1e-3), 1);
    }
    if (detail) {
        fprintf(detail, "cnn_%s,int8,%.6g,%.6g\ncnn_%s,int8_mma,%.6g,%.6g\ncnn_%s,f16,%.6g,%.6g\ncnn_%s,f32,%.6g,%.6g\n",
                name, ms_q, CNN_BATCH / (ms_q * 1e-3), name, ms_q_mma, CNN_BATCH / (ms_q_mma * 1e-3), name, ms_f16,
                CNN_BATCH / (ms_f16 * 1e-3), name, ms_f32, CNN_BATCH / (ms_f32 * 1e-3));
        if (torch_ms > 0) fprintf(detail, "cnn_%s,pytorch_f16,%.6g,%.6g\n", name, torch_ms, CNN_BATCH / (torch_ms * 1e-3));
    }
    hpdl_cuda_quant_cnn_destroy(&g);
    hpdl_quant_cnn_free(&q);
    hpdl_cuda_free(dX);
    return ok;
}

/* ---- int8 convolutions of ResNet-50 ----------------------------------------------------------- */

typedef struct conv_layer {
    const char *name;
    int n, c, h, k, kernel, stride, pad; /* square images */
} conv_layer;

/* bench/conv's ResNet-50 layers at batch 128. */
static const conv_layer k_r50[] = {
    {"r50_stem_7x7s2", 128, 3, 224, 64, 7, 2, 3},           {"r50_conv2_3x3", 128, 64, 56, 64, 3, 1, 1},
    {"r50_conv3_3x3", 128, 128, 28, 128, 3, 1, 1},          {"r50_conv4_3x3", 128, 256, 14, 256, 3, 1, 1},
    {"r50_conv5_3x3", 128, 512, 7, 512, 3, 1, 1},           {"r50_conv2_1x1_256to64", 128, 256, 56, 64, 1, 1, 0},
    {"r50_conv2_1x1_64to256", 128, 64, 56, 256, 1, 1, 0},   {"r50_conv4_1x1_1024to256", 128, 1024, 14, 256, 1, 1, 0},
    {"r50_conv5_1x1_512to2048", 128, 512, 7, 2048, 1, 1, 0},
};

/* One int8 convolution as the quantized CNN runs it: the filter transposed
   and summed once (outside the timing), the rung AUTO or MMA. */
typedef struct qconv_run {
    hpdl_quant_algo algo;
    hpdl__conv_geom geo;
    const int8_t *x, *wt;
    const int32_t *wsum, *wtap;
    int ldw;
    const hpdl_cuda_quant_output *o;
    int8_t *y;
} qconv_run;

static void run_qconv(void *ctx, cudaStream_t stream) {
    qconv_run *c = (qconv_run *)ctx;
    HPDL_CHECK(hpdl__qconv_run<int8_t>(c->algo, c->geo, c->x, -128, c->wt, c->ldw, c->wsum, c->wtap, NULL, c->o,
                                       HPDL__QOUT_REQUANT_I8, c->y, stream));
}

typedef struct hconv_run { /* hpdl's or cuDNN's f16 forward */
    hpdl_conv_algo algo;
    hpdl_conv2d_params p;
    hpdl_tensor4 xd, yd;
    const __half *x, *w;
    __half *y;
} hconv_run;

static void run_hconv(void *ctx, cudaStream_t stream) {
    hconv_run *c = (hconv_run *)ctx;
    HPDL_CHECK(hpdl_cuda_conv2d_forward_algo<__half>(c->algo, &c->p, &c->xd, c->x, c->w, &c->yd, c->y, stream));
}

/* One layer: random int8 codes (zero point -128, ReLU clamp) and the same
   values / 128 in f16. Checks the int8 output of AUTO against the mma rung
   (byte for byte; the rungs are checked against the CPU by gpu_quant) and
   hpdl's f16 against cuDNN's (largest |difference| / largest |cuDNN|), then
   times int8, hpdl f16 and cuDNN f16 in turns (median of 30). Writes the
   TOPS / TFLOP-equivalents (2 N K P Q C R S per run). */
static int bench_conv_layer(const conv_layer *l, hpdl_rng *r, FILE *headline, FILE *detail) {
    hpdl_conv2d_params p = hpdl_conv2d_params_make(l->kernel, l->stride, l->pad, 1, 1);
    hpdl_tensor4 xd = hpdl_tensor4_make(l->n, l->c, l->h, l->h, HPDL_NHWC), yd;
    const int taps = l->kernel * l->kernel, K = taps * l->c;
    HPDL_CHECK(hpdl_conv2d_output_desc(&p, &xd, l->k, &yd));
    const size_t nx = hpdl_tensor4_count(&xd), ny = hpdl_tensor4_count(&yd), nw = (size_t)K * l->k;
    std::vector<int8_t> x(nx), w(nw), y_auto(ny), y_mma(ny);
    std::vector<__half> xh(nx), wh(nw), yh(ny), yc(ny);
    std::vector<int32_t> m0((size_t)l->k), bias((size_t)l->k);
    std::vector<int> shift((size_t)l->k);
    for (size_t i = 0; i < nx; i++) x[i] = (int8_t)((int)hpdl_rng_below(r, 256) - 128), xh[i] = __float2half(x[i] / 128.0f);
    for (size_t i = 0; i < nw; i++) w[i] = (int8_t)((int)hpdl_rng_below(r, 256) - 128), wh[i] = __float2half(w[i] / 128.0f);
    for (int j = 0; j < l->k; j++) {
        HPDL_CHECK(hpdl_quant_multiplier(3.0 * 127.0 / (128.0 * 128.0 * sqrt((double)K)), &m0[(size_t)j], &shift[(size_t)j]));
        bias[(size_t)j] = (int32_t)hpdl_rng_below(r, 20001) - 10000;
    }
    hpdl_quant_output o = {bias.data(), m0.data(), shift.data(), 1, -128, 1};
    hpdl_cuda_quant_output d;
    HPDL_CHECK(hpdl_cuda_quant_output_create(&d, &o, l->k));
    int8_t *dx, *dw, *wt, *dy_auto, *dy_mma;
    __half *dxh, *dwh, *dyh, *dyc;
    int32_t *wsum, *wtap = NULL;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dx, nx));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dw, nw));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&wt, (size_t)l->k * hpdl__qconv_ldw(K)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&wsum, (size_t)l->k * (1 + taps) * sizeof(int32_t)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dy_auto, ny));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dy_mma, ny));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dxh, nx * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dwh, nw * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dyh, ny * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dyc, ny * 2));
    HPDL_CUDA_CHECK(cudaMemcpy(dx, x.data(), nx, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dw, w.data(), nw, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dxh, xh.data(), nx * 2, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dwh, wh.data(), nw * 2, cudaMemcpyHostToDevice));
    if (hpdl__qconv_has_taps(taps, l->c)) wtap = wsum + l->k;
    HPDL_CHECK(hpdl__qconv_filter(taps, l->c, l->k, dw, wt, wsum, wtap, 0));
    qconv_run q = {HPDL_QUANT_AUTO, hpdl__conv_geom(), dx, wt, wsum, wtap, hpdl__qconv_ldw(K), &d, dy_auto}, qm = q;
    HPDL_CHECK(hpdl__quant_conv_geom(&p, &xd, dx, -128, wt, &yd, dy_auto, &q.geo));
    qm.geo = q.geo, qm.algo = HPDL_QUANT_MMA, qm.y = dy_mma;
    hconv_run h = {HPDL_CONV_AUTO, p, xd, yd, dxh, dwh, dyh}, hc = {HPDL_CONV_CUDNN, p, xd, yd, dxh, dwh, dyc};
    run_qconv(&q, 0); run_qconv(&qm, 0); run_hconv(&h, 0); run_hconv(&hc, 0);
    HPDL_CUDA_CHECK(cudaMemcpy(y_auto.data(), dy_auto, ny, cudaMemcpyDeviceToHost));
    HPDL_CUDA_CHECK(cudaMemcpy(y_mma.data(), dy_mma, ny, cudaMemcpyDeviceToHost));
    HPDL_CUDA_CHECK(cudaMemcpy(yh.data(), dyh, ny * 2, cudaMemcpyDeviceToHost));
    HPDL_CUDA_CHECK(cudaMemcpy(yc.data(), dyc, ny * 2, cudaMemcpyDeviceToHost));
    double err = 0, ref = 0;
    for (size_t i = 0; i < ny; i++) {
        double a = __half2float(yh[i]), b = __half2float(yc[i]);
        err = fabs(a - b) > err ? fabs(a - b) : err;
        ref = fabs(b) > ref ? fabs(b) : ref;
    }
    const int same = memcmp(y_auto.data(), y_mma.data(), ny) == 0, close = err <= 1e-2 * ref;
    void *ctxs[3] = {&q, &h, &hc};
    hpdl_cuda_work_fn fns[3] = {run_qconv, run_hconv, run_hconv};
    double ms[3];
    HPDL_CHECK(hpdl_cuda_time_interleaved_ms(3, fns, ctxs, 0, 3, 30, NULL, ms));
    const double ops = 2.0 * (double)ny * K / 1e9; /* GOP: TOPS = ops / ms */
    printf("%-24s int8 %7.1f TOPS | hpdl f16 %6.1f | cuDNN f16 %6.1f TFLOP/s | int8/f16 %.2fx, /cuDNN %.2fx  %s, f16 err %.1e\n",
           l->name, ops / ms[0], ops / ms[1], ops / ms[2], ms[1] / ms[0], ms[2] / ms[0],
           same ? "int8 = mma rung" : "INT8 DIFFERS FROM MMA", err / (ref > 0 ? ref : 1));
    char metric[96];
    snprintf(metric, sizeof metric, "conv_%s_int8_vs_cudnn_f16_tops", l->name);
    hpdl_csv_row(headline, metric, ops / ms[0], "TOPS", "cudnn_f16", ops / ms[2], 1);
    if (detail)
        fprintf(detail, "%s,int8,%.6g,%.6g\n%s,hpdl_f16,%.6g,%.6g\n%s,cudnn_f16,%.6g,%.6g\n", l->name, ms[0], ops / ms[0],
                l->name, ms[1], ops / ms[1], l->name, ms[2], ops / ms[2]);
    hpdl_cuda_free(dx); hpdl_cuda_free(dw); hpdl_cuda_free(wt); hpdl_cuda_free(wsum); hpdl_cuda_free(dy_auto);
    hpdl_cuda_free(dy_mma); hpdl_cuda_free(dxh); hpdl_cuda_free(dwh); hpdl_cuda_free(dyh); hpdl_cuda_free(dyc);
    hpdl_cuda_quant_output_destroy(&d);
    return same && close;
}

/* ---- main ---------------------------------------------------------------------------------- */

static FILE *open_detail(const char *dir, const char *name, const char *header) {
    char path[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s.csv", dir, name);
    f = fopen(path, "w");
    if (f) fprintf(f, "%s\n", header);
    return f;
}

int main(int argc, char **argv) {
    static const int sizes[4] = {1024, 2048, 4096, 8192};
    static const int fashion[3] = {784, 256, 10}, wide[4] = {784, 4096, 4096, 10};
    int max_size = 8192, i, ok, lt_ok, with_cnn = 1;
    hpdl_cuda_device_info info;
    hpdl_cuda_l2_flusher fl;
    char slug[128], dir[512];
    const char *env = getenv("HPDL_RESULTS"), *output = NULL;
    FILE *headline, *gemm_csv, *mlp_csv;
    hpdl_cli_option opts[3];
    opts[0] = hpdl_cli_positional(hpdl_cli_int("max-size", 0, &max_size, 1, 1 << 16, "largest GEMM size"));
    opts[1] = hpdl_cli_string("output", 0, &output, "DIR", "folder for the CSVs ($HPDL_RESULTS, else results/<gpu>)");
    opts[2] = hpdl_cli_int("cnn", 0, &with_cnn, 0, 1, "1: the CNN inference rows too, 0: without them");
    hpdl_cli_parse(argc, argv, "quantize", "int8 GEMMs, the quantized MLP and CNNs against f16 and cuBLASLt.", opts, 3);
    hpdl_csv_set_dir(output);
    if (output) env = output;
    if (!hpdl_cuda_available()) {
        printf("quantize: skipped, " HPDL_CUDA_NO_GPU "; nothing measured\n");
        return 1;
    }
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, 0)); /* beside every CSV: GPU, driver, date, commit, command */
    HPDL_CHECK(hpdl_cuda_device_query(0, &info));
    hpdl_cuda_device_slug(info.name, slug, sizeof slug);
    if (env && *env) snprintf(dir, sizeof dir, "%s", env);
    else snprintf(dir, sizeof dir, "results/%s", slug);
    mkdir("results", 0755);
    mkdir(dir, 0755);
    printf("quantize bench on %s (sm_%d%d, %d SMs); results in %s\n", info.name, info.cc_major, info.cc_minor,
           info.sm_count, dir);
    ok = check_small();
    lt_ok = check_cublaslt_small();
    ok = ok && lt_ok != 0;
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&fl));
    headline = hpdl_csv_open(dir, "quantize");
    gemm_csv = open_detail(dir, "quantize_gemm", "size,variant,tops");
    mlp_csv = open_detail(dir, "quantize_mlp", "model,variant,ms,samples_per_s");
    printf("\nGEMM M = N = K, TOPS (2*n^3 ops / median time)\n%6s %14s %14s %14s %14s %14s %14s\n", "n", "int8 wgmma",
           "int8 mma", "int8 dp4a", "int8 cuBLASLt", "f16 hpdl AUTO", "f16 cuBLAS");
    for (i = 0; i < 4 && sizes[i] <= max_size; i++) {
        gemm_result res;
        char metric[64];
        ok = bench_size(sizes[i], lt_ok > 0, &fl, gemm_csv, &res) && ok;
        double best = res.wgmma > res.mma ? res.wgmma : res.mma;
        const char *best_name = res.wgmma > res.mma ? "wgmma" : "mma";
        snprintf(metric, sizeof metric, "int8_%s_tops_%d", best_name, sizes[i]);
        if (lt_ok > 0 && res.lt > 0) hpdl_csv_row(headline, metric, best, "TOPS", "int8_cublaslt", res.lt, 1);
        snprintf(metric, sizeof metric, "int8_%s_vs_f16_tops_%d", best_name, sizes[i]);
        hpdl_csv_row(headline, metric, best, "TOPS", "f16_hpdl_auto", res.f16, 1);
        snprintf(metric, sizeof metric, "int8_dp4a_tops_%d", sizes[i]);
        hpdl_csv_row(headline, metric, res.dp4a, "TOPS", "int8_mma", res.mma, 1);
    }
    printf("\nMLP inference (forward to logits), test-set batch\n");
    ok = bench_mlp("784-256-10", 3, fashion, 10000, headline, mlp_csv) && ok;
    ok = bench_mlp("784-4096-4096-10", 4, wide, 10000, headline, mlp_csv) && ok;
    if (with_cnn) {
        hpdl_cnn small, resnet;
        double torch_ms[2];
        printf("\nCNN inference (forward to logits), 3x32x32 images, batch %d, images/s\n", CNN_BATCH);
        torch_cnn_ms(torch_ms);
        HPDL_CHECK(hpdl_cnn_small(&small, hpdl_shape_make(3, 32, 32), 10, HPDL_NHWC));
        HPDL_CHECK(hpdl_cnn_resnet18(&resnet, hpdl_shape_make(3, 32, 32), 10, HPDL_NHWC));
        ok = bench_cnn("small", &small, torch_ms[0], headline, mlp_csv) && ok;
        ok = bench_cnn("resnet18", &resnet, torch_ms[1], headline, mlp_csv) && ok;
#ifdef HPDL_HAVE_CUDNN
        {
            FILE *conv_csv = open_detail(dir, "quantize_conv", "layer,variant,ms,tops");
            hpdl_rng r;
            hpdl_rng_seed(&r, 7);
            printf("\nint8 convolutions of ResNet-50 (batch 128) against f16, TOPS / TFLOP/s (2 N K P Q C R S)\n");
            for (size_t i = 0; i < sizeof k_r50 / sizeof k_r50[0]; i++) ok = bench_conv_layer(&k_r50[i], &r, headline, conv_csv) && ok;
            if (conv_csv) fclose(conv_csv);
        }
#endif
    }
    if (headline) fclose(headline);
    if (gemm_csv) fclose(gemm_csv);
    if (mlp_csv) fclose(mlp_csv);
    hpdl_cuda_l2_flusher_destroy(&fl);
    printf("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
    return ok ? 0 : 1;
}
