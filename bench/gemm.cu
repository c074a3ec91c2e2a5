/* bench/gemm: every rung of the GEMM ladder against cuBLAS, per type.

   For f32, f64, f16, bf16 and the sizes 1024^3, 2048^3, 4096^3, 8192^3 and
   4095x1000x3001 (M x N x K): each rung is first checked against cuBLAS on
   the same random non-zero inputs, then timed (median of event-timed runs,
   L2 flushed before each), with cuBLAS (TF32 off for f32) as the anchor:
   each rung's ratio is to cuBLAS timed in turns with it (one run each per
   round), so clock changes under the power limit hit both alike; the
   cuBLAS row is cuBLAS timed alone. naive and coalesced are skipped at 8192 (minutes).
   Then "tf32": the Hopper rungs on f32 data as TF32 (C = A B^T, the layout
   TF32 wgmma reads) against cuBLAS with TF32 math, same sizes.
   Writes gemm.csv (headline: the rung per type with the best ratio at 4096),
   gemm_all.csv (every row) and gemm_rungs.csv (TFLOP/s per rung at 4096,
   for the chart) into --output DIR, else $HPDL_RESULTS, else the current folder.

   --fp8: only the FP8 GEMM (e4m3 x e4m3 -> bf16, per-tensor scales) against
   cuBLASLt's FP8 GEMM at 2048^3, 4096^3 and 8192^3 (4096^3 with --quick),
   and at 8192^3 against hpdl's own f16 GEMM, all timed in turns; rows
   gemm_fp8_* in gemm.csv and gemm_all.csv.

   --mlp: the five products of one training step of the MLP 784 -> H -> 10
   (forward per layer, the weight gradients, the delta carried down), with
   hpdl_cuda_mlp's transposes, for H in {512, 2048} and batch B in {32, 128,
   512, 3000}: f32 (auto, splitk, warptile, mma) and f16/bf16 (auto,
   splitk, warptile, mma, wgmma, wgmma_persistent), each checked against
   cuBLAS and timed in turns with it; then per type the geometric mean of
   the ratios per rung and of each product's best rung (gemm_mlp.csv; every
   row in gemm_mlp_all.csv).

   usage: gemm [--quick | --tune | --sustained | --fp8 | --mlp] [--shape MxNxK] [--precision f32|f64|f16|bf16|tf32]
       --quick  4096^3 only, fewer runs
       --shape  this M x N x K only, fewer runs (e.g. 4224x4096x4096)
       --sustained  cuBLAS and the fast rungs back to back at the GPU's power
                limit, with NVML's SM clock and power (gemm_sustained.csv)
       --tune   internal tile variants of the fast rungs at 4096^3 NN, against cuBLAS
       --precision  one type only (--type: the same)
       --output DIR  folder for the CSVs     --help, --version */
#include "hpdl_cuda.cuh"

#include <cublasLt.h>

typedef struct bench_opts { int quick, tune, sustained, fp8, mlp, shape[3]; const char *only; } bench_opts;

static const hpdl_gemm_algo k_rungs[] = {HPDL_GEMM_NAIVE,    HPDL_GEMM_COALESCED,     HPDL_GEMM_SMEM,
                                         HPDL_GEMM_REG1D,    HPDL_GEMM_REG2D,         HPDL_GEMM_VEC4,
                                         HPDL_GEMM_WARPTILE, HPDL_GEMM_MMA,           HPDL_GEMM_WGMMA,
                                         HPDL_GEMM_WGMMA_WS, HPDL_GEMM_WGMMA_PERSISTENT, HPDL_GEMM_WGMMA_CLUSTER,
                                         HPDL_GEMM_SPLITK,   HPDL_GEMM_CUBLAS};
enum { N_RUNGS = sizeof k_rungs / sizeof k_rungs[0] };
static const int k_sizes[][3] = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                                 {4095, 1000, 3001}};

/* Datasheet dense peaks (TFLOP/s) for the GPU's name: f32 SIMT, f64 tensor, TF32 tensor, f16/bf16 tensor,
   FP8 tensor (twice f16's); 0 = unknown. */
static double peak_tflops(const char *gpu, const char *type) {
    int lowp = strcmp(type, "f16") == 0 || strcmp(type, "bf16") == 0, tf32 = strcmp(type, "tf32") == 0;
    if (strcmp(type, "e4m3") == 0) return 2 * peak_tflops(gpu, "f16");
    if (strstr(gpu, "H100") && strstr(gpu, "PCIe")) return lowp ? 756 : tf32 ? 378 : 51;
    if (strstr(gpu, "H100") && strstr(gpu, "NVL")) return lowp ? 835 : tf32 ? 418 : 60;
    if (strstr(gpu, "H100") || strstr(gpu, "H200")) return lowp ? 989 : tf32 ? 495 : 67;
    return 0;
}

/* Random values in [-1, 1] from a hash of the index (no zeros in practice). */
static __device__ float bench_value(size_t i, unsigned seed) {
    unsigned x = (unsigned)(i * 2654435761u) ^ (unsigned)(i >> 32) ^ seed * 0x9e3779b9u;
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    return (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
}
static __device__ void bench_set(float *x, float v) { *x = v; }
static __device__ void bench_set(double *x, float v) { *x = v; }
static __device__ void bench_set(__half *x, float v) { *x = __float2half(v); }
static __device__ void bench_set(__nv_bfloat16 *x, float v) { *x = __float2bfloat16(v); }

template <typename T> __global__ void bench_fill(T *x, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        bench_set(&x[i], bench_value(i, seed));
}

static __device__ double bench_f64(float x) { return x; }
static __device__ double bench_f64(double x) { return x; }
static __device__ double bench_f64(__half x) { return __half2float(x); }
static __device__ double bench_f64(__nv_bfloat16 x) { return __bfloat162float(x); }

/* out[0] = max |c - ref|, out[1] = max |ref| (non-negative floats order as unsigned ints). */
template <typename T> __global__ void bench_compare(const T *c, const T *ref, size_t n, unsigned long long *out) {
    double err = 0, mag = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double a = bench_f64(c[i]), b = bench_f64(ref[i]), d = fabs(a - b);
        if (!(d <= err)) err = d != d ? INFINITY : d; /* NaN counts as infinitely wrong */
        mag = fmax(mag, fabs(b));
    }
    atomicMax(&out[0], (unsigned long long)__double_as_longlong(err));
    atomicMax(&out[1], (unsigned long long)__double_as_longlong(mag));
}

/* The type-generic part of the bench. */
template <typename T> struct bench_gemm {
    hpdl_gemm_algo algo;
    int M, N, K;
    const T *A, *B;
    T *C;
};

/* The "tf32" type: f32 data, C = A B^T (B given N x K: TF32 wgmma reads both
   operands K-major), the Hopper rungs against cuBLAS with TF32 math. */
static int g_tf32;

static hpdl_status call(hpdl_gemm_algo al, int M, int N, int K, const float *A, const float *B, float *C, cudaStream_t s) {
    hpdl_status st, off;
    if (!g_tf32) return hpdl_cuda_gemm_algo_f32(al, HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N, s);
    if (al != HPDL_GEMM_CUBLAS) return hpdl_cuda_gemm_algo_f32(al, HPDL_NO_TRANS, HPDL_TRANS, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N, s);
    st = hpdl__cuda_tf32_math(1);
    if (st == HPDL_OK) st = hpdl_cuda_gemm_algo_f32(al, HPDL_NO_TRANS, HPDL_TRANS, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N, s);
    off = hpdl__cuda_tf32_math(0);
    return st != HPDL_OK ? st : off;
}
/* The rungs that run f32 as TF32 (and cuBLAS, the anchor): the others compute in f32. */
static int tf32_rung(hpdl_gemm_algo a) {
    return (a >= HPDL_GEMM_WGMMA && a <= HPDL_GEMM_WGMMA_CLUSTER) || a == HPDL_GEMM_CUBLAS;
}
/* Every other type: C = A B, all row-major, through the type-generic front end. */
template <typename T>
static hpdl_status call(hpdl_gemm_algo al, int M, int N, int K, const T *A, const T *B, T *C, cudaStream_t s) {
    return hpdl_cuda_gemm_algo(al, HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K, 1, A, K, B, N, 0, C, N, s);
}

template <typename T> static void bench_run(void *ctx, cudaStream_t s) {
    bench_gemm<T> *g = (bench_gemm<T> *)ctx;
    call(g->algo, g->M, g->N, g->K, g->A, g->B, g->C, s);
}

/* Relative error of C against the cuBLAS result: max |c - ref| / max |ref|. */
template <typename T> static double rel_error(const T *C, const T *ref, size_t n, unsigned long long *d_out) {
    unsigned long long h[2];
    double err, mag;
    HPDL_CUDA_CHECK(cudaMemset(d_out, 0, 2 * sizeof *d_out));
    bench_compare<<<1024, 256>>>(C, ref, n, d_out);
    HPDL_CUDA_CHECK(cudaGetLastError());
    HPDL_CUDA_CHECK(cudaMemcpy(h, d_out, sizeof h, cudaMemcpyDeviceToHost));
    memcpy(&err, &h[0], sizeof err);
    memcpy(&mag, &h[1], sizeof mag);
    return mag > 0 ? err / mag : err;
}

typedef struct bench_row {
    const char *type, *rung;
    int M, N, K;
    double ms, tflops, ratio, peak_share, err;
    const char *status; /* "ok", "skipped", "unsupported", "WRONG" */
} bench_row;

typedef struct bench_out {
    FILE *head, *all;
    const char *gpu;
    int sms;
    double rungs_4096[5][N_RUNGS]; /* TFLOP/s per type and rung at 4096 (for the chart) */
} bench_out;

static void print_row(bench_out *o, const bench_row *r) {
    char pk[32];
    if (r->peak_share > 0) snprintf(pk, sizeof pk, "%6.1f%%", 100 * r->peak_share);
    else snprintf(pk, sizeof pk, "%7s", "n/a");
    if (strcmp(r->status, "unsupported") == 0 || strcmp(r->status, "skipped") == 0) /* not run: n/a, not zeros */
        printf("%-5s %5d %5d %5d  %-16s %10s %9s %7s %s %9s  %s\n", r->type, r->M, r->N, r->K, r->rung, "n/a", "n/a",
               "n/a", pk, "n/a", r->status);
    else
        printf("%-5s %5d %5d %5d  %-16s %10.3f %9.2f %7.3f %s %9.1e  %s\n", r->type, r->M, r->N, r->K, r->rung, r->ms,
               r->tflops, r->ratio, pk, r->err, r->status);
    fflush(stdout);
    if (o->all)
        fprintf(o->all, "gemm_%s_%dx%dx%d_%s,%.6g,TFLOP/s,cublas,%.6g,%.4f,%s,%d,%d,%d,%s,%.6g,%.4f,%.3g,%s\n", r->type, r->M,
                r->N, r->K, r->rung, r->tflops, r->ratio > 0 ? r->tflops / r->ratio : 0.0, r->ratio, r->type, r->M, r->N,
                r->K, r->rung, r->ms, r->peak_share, r->err, r->status);
}

/* Tolerance of a rung against cuBLAS, as max error over max |C|. */
static double bench_tol(const char *type) {
    return strcmp(type, "f64") == 0 ? 1e-10 : strcmp(type, "f32") == 0 ? 1e-4 : strcmp(type, "tf32") == 0 ? 5e-3 : 2e-2;
}

/* One M x N x K product's buffers: random non-zero A and B, C for the
   rungs, and cuBLAS's result ref to check them against. */
template <typename T> struct bench_data {
    int M, N, K;
    T *A, *B, *C, *ref;
    unsigned long long *d_err;
};
template <typename T> static void bench_data_create(bench_data<T> *d, int M, int N, int K) {
    d->M = M; d->N = N; d->K = K;
    HPDL_CUDA_CHECK(cudaMalloc(&d->A, (size_t)M * K * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&d->B, (size_t)K * N * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&d->C, (size_t)M * N * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&d->ref, (size_t)M * N * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&d->d_err, 2 * sizeof *d->d_err));
    bench_fill<<<1024, 256>>>(d->A, (size_t)M * K, 1u);
    bench_fill<<<1024, 256>>>(d->B, (size_t)K * N, 2u);
    HPDL_CHECK(call(HPDL_GEMM_CUBLAS, M, N, K, d->A, d->B, d->ref, 0));
}
template <typename T> static void bench_data_destroy(bench_data<T> *d) {
    cudaFree(d->A); cudaFree(d->B); cudaFree(d->C); cudaFree(d->ref); cudaFree(d->d_err);
}

/* Runs rung algo once into a poisoned C and compares with cuBLAS's result:
   "ok", "unsupported" (the rung does not run this type or layout) or
   "WRONG"; *err = max |c - ref| / max |ref|. */
template <typename T>
static const char *bench_check(const bench_data<T> *d, hpdl_gemm_algo algo, const char *type, double *err) {
    size_t nc = (size_t)d->M * d->N;
    hpdl_status s;
    *err = 0;
    HPDL_CHECK(hpdl_cuda_poison(d->C, nc * sizeof(T)));
    s = call(algo, d->M, d->N, d->K, d->A, d->B, d->C, 0);
    if (s == HPDL_ERR_UNSUPPORTED) return "unsupported";
    HPDL_CHECK(s);
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    *err = rel_error(d->C, d->ref, nc, d->d_err);
    return *err <= bench_tol(type) ? "ok" : "WRONG";
}

/* All rungs of one type at one size. Returns 0 if a rung computed wrong results. */
/* The ceiling of the mma rung: mma.sync m16n8k16 (f32 accumulation) with
   operands already in registers and 8 independent accumulators per warp,
   64 warps per SM, nothing loaded or stored in the loop. No GEMM built on
   mma.sync can run faster than this on the GPU. */
template <typename T> __global__ void bench_mma_peak(float *out, int iters) {
    unsigned a[4] = {0x3c003c00u ^ threadIdx.x, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u}, b[2] = {0x3c003c00u, 0x3c003c00u};
    float d[8][4], sum = 0;
    int it, j;
    for (j = 0; j < 8; j++) d[j][0] = d[j][1] = d[j][2] = d[j][3] = 0;
    for (it = 0; it < iters; it++)
#pragma unroll
        for (j = 0; j < 8; j++) hpdl__mma16816(T(), d[j], a, b);
    for (j = 0; j < 8; j++) sum += d[j][0] + d[j][1] + d[j][2] + d[j][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum; /* keeps the loop */
}
struct bench_peak_ctx { float *out; int blocks, iters; };
template <typename T> static void bench_peak_run(void *ctx, cudaStream_t s) {
    bench_peak_ctx *c = (bench_peak_ctx *)ctx;
    bench_mma_peak<T><<<c->blocks, 256, 0, s>>>(c->out, c->iters);
}
/* TFLOP/s of bench_mma_peak with `per_sm` blocks of 8 warps on each of `sms` SMs. */
template <typename T> static double bench_mma_peak_tflops(int sms, int per_sm, double *ms) {
    bench_peak_ctx c;
    c.blocks = sms * per_sm;
    c.iters = 4096;
    HPDL_CUDA_CHECK(cudaMalloc(&c.out, (size_t)c.blocks * 256 * sizeof(float)));
    HPDL_CHECK(hpdl_cuda_time_median_ms(bench_peak_run<T>, &c, 0, 2, 20, NULL, ms));
    cudaFree(c.out);
    return 2.0 * 16 * 8 * 16 * 8 * (double)c.iters * (c.blocks * 8) / (*ms * 1e-3) / 1e12;
}
/* Prints the mma.sync ceiling as a row beside the 4096^3 rungs (f16, bf16 only). */
template <typename T> static void bench_mma_ceiling(bench_out *o, const char *type, double cublas_tflops, int sms) {
    bench_row row;
    memset(&row, 0, sizeof row);
    row.type = type; row.rung = "mma.sync_peak"; row.M = row.N = row.K = 4096;
    row.tflops = bench_mma_peak_tflops<T>(sms, 8, &row.ms); /* 64 warps per SM */
    row.ratio = row.tflops / cublas_tflops;
    row.peak_share = peak_tflops(o->gpu, type) > 0 ? row.tflops / peak_tflops(o->gpu, type) : 0;
    row.status = "ceiling";
    print_row(o, &row);
}
static void bench_mma_ceiling_for(bench_out *o, const char *type, float, double, int) { (void)o; (void)type; }
static void bench_mma_ceiling_for(bench_out *o, const char *type, double, double, int) { (void)o; (void)type; }
static void bench_mma_ceiling_for(bench_out *o, const char *type, __half, double cublas, int sms) {
    bench_mma_ceiling<__half>(o, type, cublas, sms);
}
static void bench_mma_ceiling_for(bench_out *o, const char *type, __nv_bfloat16, double cublas, int sms) {
    bench_mma_ceiling<__nv_bfloat16>(o, type, cublas, sms);
}

template <typename T>
static int bench_size(bench_out *o, const bench_opts *opt, const char *type, int ti, int M, int N, int K,
                      hpdl_cuda_l2_flusher *fl) {
    bench_data<T> d;
    double flops = 2.0 * M * N * K, cublas_tflops = 0, peak = peak_tflops(o->gpu, type);
    double best = 0, best_ratio = 0, best_anchor = 0;
    const char *best_rung = NULL;
    int r, good = 1;
    bench_data_create(&d, M, N, K);
    for (r = N_RUNGS - 1; r >= 0; r--) { /* cuBLAS first: the anchor */
        bench_gemm<T> g;
        bench_row row;
        double ms = 0;
        memset(&row, 0, sizeof row);
        row.type = type; row.rung = hpdl_gemm_algo_name(k_rungs[r]); row.M = M; row.N = N; row.K = K;
        g.algo = k_rungs[r]; g.M = M; g.N = N; g.K = K; g.A = d.A; g.B = d.B; g.C = d.C;
        if ((M >= 8192 && (g.algo == HPDL_GEMM_NAIVE || g.algo == HPDL_GEMM_COALESCED)) ||
            (g_tf32 && !tf32_rung(g.algo))) {
            row.status = "skipped"; /* minutes per run at 8192; tf32: only the Hopper rungs run TF32 */
            print_row(o, &row);
            continue;
        }
        row.status = bench_check(&d, g.algo, type, &row.err);
        if (strcmp(row.status, "ok") != 0) {
            good &= strcmp(row.status, "WRONG") != 0;
            print_row(o, &row);
            continue;
        }
        {   /* one run to size the repetitions: about 1 s (0.3 s quick) per rung, 3 to 50 runs */
            hpdl_cuda_timer t;
            double once, budget = opt->quick ? 300.0 : 1000.0, both_ms[2];
            int reps, warmup;
            bench_gemm<T> anchor = g;
            hpdl_cuda_work_fn runs[2] = {bench_run<T>, bench_run<T>};
            void *ctxs[2] = {&g, &anchor};
            HPDL_CHECK(hpdl_cuda_timer_create(&t, 0));
            hpdl_cuda_timer_start(&t);
            bench_run<T>(&g, 0);
            once = hpdl_cuda_timer_stop_ms(&t);
            hpdl_cuda_timer_destroy(&t);
            reps = once > 0 ? (int)(budget / once) : 50;
            reps = reps < 3 ? 3 : reps > (opt->quick ? 20 : 50) ? (opt->quick ? 20 : 50) : reps;
            warmup = once > 200 ? 0 : 2;
            anchor.algo = HPDL_GEMM_CUBLAS;
            if (g.algo == HPDL_GEMM_CUBLAS) {
                HPDL_CHECK(hpdl_cuda_time_median_ms(bench_run<T>, &g, 0, warmup, reps, fl, &ms));
                cublas_tflops = flops / (ms * 1e-3) / 1e12;
                row.ratio = 1;
            } else { /* the ratio from cuBLAS timed in turns with this rung: both see the same clocks */
                HPDL_CHECK(hpdl_cuda_time_interleaved_ms(2, runs, ctxs, 0, warmup, reps, fl, both_ms));
                ms = both_ms[0];
                row.ratio = both_ms[1] / both_ms[0];
            }
        }
        row.ms = ms;
        row.tflops = flops / (ms * 1e-3) / 1e12;
        row.peak_share = peak > 0 ? row.tflops / peak : 0;
        row.status = "ok";
        print_row(o, &row);
        /* best by its ratio to the cuBLAS timed in turns with it: with the clocks drifting near the
           power limit, the TFLOP/s of two rows differ by their pairs' clocks as much as by the rungs */
        if (g.algo != HPDL_GEMM_CUBLAS && row.ratio > best_ratio) {
            best = row.tflops;
            best_ratio = row.ratio;
            best_anchor = row.tflops / row.ratio; /* cuBLAS as timed in turns with it */
            best_rung = row.rung;
        }
        if (M == 4096 && N == 4096 && K == 4096) o->rungs_4096[ti][r] = row.tflops;
    }
    if (M == 4096 && N == 4096 && K == 4096 && cublas_tflops > 0) bench_mma_ceiling_for(o, type, T(), cublas_tflops, o->sms);
    if (M == 4096 && N == 4096 && K == 4096 && best_rung && o->head) {
        char metric[96];
        snprintf(metric, sizeof metric, "gemm_%s_4096_best_%s", type, best_rung);
        hpdl_csv_row(o->head, metric, best, "TFLOP/s", "cublas", best_anchor, 1);
    }
    bench_data_destroy(&d);
    return good;
}

template <typename T>
static int bench_type(bench_out *o, const bench_opts *opt, const char *type, int ti, hpdl_cuda_l2_flusher *fl) {
    int i, good = 1;
    if (opt->only && strcmp(opt->only, type) != 0) return 1;
    if (opt->shape[0] > 0) return bench_size<T>(o, opt, type, ti, opt->shape[0], opt->shape[1], opt->shape[2], fl);
    for (i = 0; i < (int)(sizeof k_sizes / sizeof k_sizes[0]); i++) {
        if (opt->quick && k_sizes[i][0] != 4096) continue;
        good &= bench_size<T>(o, opt, type, ti, k_sizes[i][0], k_sizes[i][1], k_sizes[i][2], fl);
    }
    return good;
}

/* --sustained: cuBLAS and the fast rungs, each run back to back for about a
   second (no L2 flush), twice in turns, while NVML samples the SM clock,
   the board power and power-limit throttling every 5 ms. At the power limit
   a kernel's speed is set by its energy per flop, not by its cycles: the
   clock drops until the power fits. flop/clk/SM = the work done per SM and
   clock cycle (H100 f16 tensor peak: 4096). */
static const hpdl_gemm_algo k_sustained_rungs[] = {HPDL_GEMM_CUBLAS, HPDL_GEMM_WARPTILE, HPDL_GEMM_MMA,
                                                   HPDL_GEMM_WGMMA_PERSISTENT, HPDL_GEMM_WGMMA_CLUSTER};
enum { N_SUSTAINED = sizeof k_sustained_rungs / sizeof k_sustained_rungs[0] };

/* Runs g back to back for about `seconds` under an NVML sampler: TFLOP/s and what NVML saw. */
template <typename T> static double sustained_run(bench_gemm<T> *g, double seconds, hpdl_nvml_stats *st) {
    hpdl_cuda_timer t;
    hpdl_nvml_sampler smp;
    double once, ms;
    int i, reps;
    HPDL_CHECK(hpdl_cuda_timer_create(&t, 0));
    for (i = 0; i < 3; i++) bench_run<T>(g, 0); /* warm-up */
    hpdl_cuda_timer_start(&t);
    bench_run<T>(g, 0);
    once = hpdl_cuda_timer_stop_ms(&t);
    reps = once > 0 ? (int)(seconds * 1e3 / once) + 1 : 100;
    memset(st, 0, sizeof *st);
    if (hpdl_nvml_sampler_start(&smp, 0, 5, NULL) != HPDL_OK) memset(&smp, 0, sizeof smp);
    hpdl_cuda_timer_start(&t);
    for (i = 0; i < reps; i++) bench_run<T>(g, 0);
    ms = hpdl_cuda_timer_stop_ms(&t);
    hpdl_nvml_sampler_finish(&smp, st);
    hpdl_cuda_timer_destroy(&t);
    return 2.0 * g->M * g->N * (double)g->K * reps / (ms * 1e-3) / 1e12;
}

template <typename T> static int sustained_type(const bench_opts *opt, const char *type, FILE *csv, int sms) {
    bench_data<T> d;
    int ok[N_SUSTAINED], r, round, good = 1;
    if (opt->only && strcmp(opt->only, type) != 0) return 1;
    if (opt->shape[0] > 0) bench_data_create(&d, opt->shape[0], opt->shape[1], opt->shape[2]);
    else bench_data_create(&d, 4096, 4096, 4096);
    for (r = 0; r < N_SUSTAINED; r++) { /* validate first */
        double err;
        const char *status;
        ok[r] = 0;
        if (g_tf32 && !tf32_rung(k_sustained_rungs[r])) continue; /* only the Hopper rungs run TF32 */
        status = bench_check(&d, k_sustained_rungs[r], type, &err);
        ok[r] = strcmp(status, "ok") == 0;
        if (strcmp(status, "WRONG") == 0) {
            printf("%-5s %-16s WRONG (error %.1e): not timed\n", type, hpdl_gemm_algo_name(k_sustained_rungs[r]), err);
            good = 0;
        }
    }
    for (round = 1; round <= 2; round++) {
        double cublas = 0;
        for (r = 0; r < N_SUSTAINED; r++) {
            bench_gemm<T> g;
            hpdl_nvml_stats st;
            double tflops, per_clk;
            if (!ok[r]) continue;
            g.algo = k_sustained_rungs[r]; g.M = d.M; g.N = d.N; g.K = d.K; g.A = d.A; g.B = d.B; g.C = d.C;
            tflops = sustained_run<T>(&g, 1.0, &st);
            if (r == 0) cublas = tflops;
            per_clk = st.sm_clock_mhz > 0 ? tflops * 1e12 / (st.sm_clock_mhz * 1e6 * sms) : 0;
            printf("%-5s %5d %5d %5d  %-16s %5d %9.1f %7.3f %8.0f %7.0f %7.0f%% %9.0f\n", type, d.M, d.N, d.K,
                   hpdl_gemm_algo_name(g.algo), round, tflops, tflops / cublas, st.sm_clock_mhz, st.power_w,
                   100 * st.power_capped, per_clk);
            fflush(stdout);
            if (csv)
                fprintf(csv, "gemm_sustained_%s_%dx%dx%d_%s_round%d,%.6g,TFLOP/s,cublas,%.6g,%.4f,%.0f,%.1f,%.3f,%.0f,%lld\n",
                        type, d.M, d.N, d.K, hpdl_gemm_algo_name(g.algo), round, tflops, cublas, tflops / cublas,
                        st.sm_clock_mhz, st.power_w, st.power_capped, per_clk, (long long)st.samples);
        }
    }
    bench_data_destroy(&d);
    return good;
}

static int sustained_all(const bench_opts *opt, const hpdl_cuda_device_info *info) {
    FILE *csv = hpdl_csv_open_with_header(".", "gemm_sustained",
                                          "metric,value,unit,anchor,anchor_value,ratio,sm_clock_mhz,power_w,"
                                          "power_capped,flop_per_clk_per_sm,samples");
    int good = 1;
    printf("gemm --sustained on %s (%d SMs): each rung back to back for ~1 s (no L2 flush), two rounds in turns;\n"
           "NVML every 5 ms: mean SM clock, power, share of samples held down by the power limit\n",
           info->name, info->sm_count);
    printf("%-5s %5s %5s %5s  %-16s %5s %9s %7s %8s %7s %8s %9s\n", "type", "M", "N", "K", "rung", "round", "TFLOP/s",
           "ratio", "SM MHz", "W", "capped", "flop/clk");
    good &= sustained_type<float>(opt, "f32", csv, info->sm_count);
    good &= sustained_type<double>(opt, "f64", csv, info->sm_count);
    good &= sustained_type<__half>(opt, "f16", csv, info->sm_count);
    good &= sustained_type<__nv_bfloat16>(opt, "bf16", csv, info->sm_count);
    g_tf32 = 1;
    good &= sustained_type<float>(opt, "tf32", csv, info->sm_count);
    g_tf32 = 0;
    if (csv) fclose(csv);
    return good;
}

/* --tune: internal variants (tile shapes) of the fast rungs at 4096^3, to pick the defaults. */
template <typename T, typename ACC, int BK, int TN, int MINB>
static hpdl_status tune_warptile(const hpdl__gemm_args<T, ACC> &g, cudaStream_t s) {
    dim3 grid;
    hpdl_status st = hpdl__gemm_grid(g.N, 16 * TN, g.M, 128, &grid);
    if (st != HPDL_OK) return st;
    hpdl__gemm_warptile<T, ACC, BK, TN, MINB, true><<<grid, 256, 0, s>>>(g, hpdl__gemm_batch());
    return cudaGetLastError() == cudaSuccess ? HPDL_OK : HPDL_ERR_CUDA;
}
template <typename SH, typename T, int TMA> static hpdl_status tune_mma(const hpdl__gemm_args<T, float> &g, cudaStream_t s) {
    return hpdl__gemm_launch_mma_shape<SH>(g, s, TMA);
}
/* The Hopper kernel for tune's NN call (A K-major, B MN-major), persistent,
   in CM x CN clusters (1 x 1: the wgmma_persistent rung, 2 x 1 the
   wgmma_cluster rung). */
template <typename T, int CM, int CN> static hpdl_status tune_wgmma(const hpdl__gemm_args<T, float> &g, cudaStream_t s) {
    const hpdl__wg_launch l = {(const void *)hpdl__gemm_wgmma_ws<T, hpdl__gemm_args<T, float>, false, true, true, CM, CN, true>,
                               384, 128, CM, CN, 1, 1, NULL, 0};
    return hpdl__gemm_run_wgmma(l, g, s);
}
template <typename SH, typename T> static hpdl_status tune_padded(const hpdl__gemm_args<T, T> &g, cudaStream_t s) {
    return hpdl__gemm_launch_padded_mma<SH>(g, hpdl__gemm_batch(), 1, s);
}
template <typename SH> static hpdl_status tune_dmma(const hpdl__gemm_args<double, double> &g, cudaStream_t s) {
    return tune_padded<SH, double>(g, s);
}
template <typename T, typename ACC> struct tune_variant {
    const char *name;
    hpdl_status (*fn)(const hpdl__gemm_args<T, ACC> &, cudaStream_t);
};
template <typename T, typename ACC> struct tune_ctx { const tune_variant<T, ACC> *v; hpdl__gemm_args<T, ACC> g; };
template <typename T, typename ACC> static void tune_run(void *ctx, cudaStream_t s) {
    tune_ctx<T, ACC> *c = (tune_ctx<T, ACC> *)ctx;
    c->v->fn(c->g, s);
}
template <typename T, typename ACC>
static void tune_type(const char *type, const tune_variant<T, ACC> *vs, int nv, hpdl_cuda_l2_flusher *fl) {
    /* Each variant is checked, then all are timed in one interleaved loop with cuBLAS (a round runs each
       once, L2 flushed before each, starting one place later than the round before): the GPU's clocks
       drifting as it warms up moved a variant's ratio by 1-3 % between the start and the end of one
       process (H100), and its place in a round by up to 1 %. */
    enum { MAX = 32 };
    const int n = 4096;
    size_t nn = (size_t)n * n;
    bench_data<T> d;
    bench_gemm<T> cb;
    tune_ctx<T, ACC> c[MAX];
    hpdl_cuda_work_fn runs[MAX + 1];
    void *ctxs[MAX + 1];
    double ms[MAX + 1], err[MAX];
    int i, m = 0, which[MAX];
    bench_data_create(&d, n, n, n);
    cb.algo = HPDL_GEMM_CUBLAS; cb.M = cb.N = cb.K = n; cb.A = d.A; cb.B = d.B; cb.C = d.C;
    runs[0] = bench_run<T>;
    ctxs[0] = &cb;
    for (i = 0; i < nv && m < MAX; i++) {
        c[m].v = &vs[i];
        c[m].g = hpdl__gemm_make_args(HPDL_NO_TRANS, HPDL_NO_TRANS, n, n, n, (ACC)1, (const T *)d.A, n, (const T *)d.B, n,
                                      (ACC)0, d.C, n, strncmp(vs[i].name, "warptile", 8) == 0 ? 4 : (int)(16 / sizeof(T)));
        HPDL_CHECK(hpdl_cuda_poison(d.C, nn * sizeof(T)));
        if (vs[i].fn(c[m].g, 0) != HPDL_OK) { printf("tune %-5s %-34s failed to launch\n", type, vs[i].name); continue; }
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        err[m] = rel_error(d.C, d.ref, nn, d.d_err);
        runs[m + 1] = tune_run<T, ACC>;
        ctxs[m + 1] = &c[m];
        which[m++] = i;
    }
    HPDL_CHECK(hpdl_cuda_time_interleaved_ms(m + 1, runs, ctxs, 0, 2, 30, fl, ms));
    printf("tune %-5s %-34s %8.3f ms %8.2f TFLOP/s\n", type, "cublas", ms[0], 2.0 * n * n * n / (ms[0] * 1e-3) / 1e12);
    for (i = 0; i < m; i++)
        printf("tune %-5s %-34s %8.3f ms %8.2f TFLOP/s  ratio %.3f  err %.1e%s\n", type, vs[which[i]].name, ms[i + 1],
               2.0 * n * n * n / (ms[i + 1] * 1e-3) / 1e12, ms[0] / ms[i + 1], err[i],
               err[i] <= bench_tol(type) ? "" : "  WRONG");
    fflush(stdout);
    bench_data_destroy(&d);
}

/* The f16/bf16 variants: the mma rung's tiles and copy paths, the Hopper
   kernel's cluster shapes. */
template <typename T> static void tune_half(const char *type, hpdl_cuda_l2_flusher *fl) {
    typedef hpdl__tc_shape<128, 128, 32, 4, 64, 64> k32; /* the default until 2026-11-24 */
    typedef hpdl__tc_shape<128, 128, 64, 2, 64, 64> k64s2;
    typedef hpdl__tc_shape<256, 128, 64, 3, 64, 64> big64;
    static const tune_variant<T, float> vs[] = {
        {"mma 128x128x64 s3 w64x64 TMA (default)", tune_mma<hpdl__mma_shape, T, -1>},
        {"mma 128x128x64 s3 w64x64 cp.async", tune_mma<hpdl__mma_shape, T, 0>},
        {"mma 128x128x32 s4 w64x64 cp.async", tune_mma<k32, T, 0>},
        {"mma 256x128x64 s3 w64x64 TMA", tune_mma<big64, T, -1>},
        {"mma 128x128x64 s2 w64x64 TMA", tune_mma<k64s2, T, -1>},
        {"wgmma persistent (rung)", tune_wgmma<T, 1, 1>},
        {"wgmma cluster 2x1 (rung)", tune_wgmma<T, 2, 1>},
        {"wgmma cluster 1x2", tune_wgmma<T, 1, 2>},
        {"mma 128x128x64 s3 w64x64 TMA (default) again", tune_mma<hpdl__mma_shape, T, -1>},
        {"wgmma persistent (rung) again", tune_wgmma<T, 1, 1>}};
    tune_type<T, float>(type, vs, (int)(sizeof vs / sizeof vs[0]), fl);
}

static void tune_all(const bench_opts *opt, int sms, hpdl_cuda_l2_flusher *fl) {
    typedef hpdl__tc_shape<128, 64, 16, 3, 32, 64, 16> d1;
    typedef hpdl__tc_shape<64, 128, 16, 3, 32, 64, 16> d2;
    typedef hpdl__tc_shape<128, 64, 16, 3, 64, 32, 8> d3;
    typedef hpdl__tc_shape<128, 64, 16, 3, 64, 32, 4> d4;
    typedef hpdl__tc_shape<128, 128, 32, 3, 64, 32, 4> d5;
    typedef hpdl__tc_shape<128, 128, 32, 3, 64, 32, 8> t1;
    typedef hpdl__tc_shape<64, 64, 32, 4, 32, 32, 8> t2;
    typedef hpdl__tc_shape<128, 64, 16, 4, 64, 32, 8> t3;
    typedef hpdl__tc_shape<64, 128, 32, 3, 32, 64, 8> t4;
    static const tune_variant<float, float> f32[] = {
        {"warptile 128x128 bk8 minb2 (default)", tune_warptile<float, float, 8, 8, 2>},
        {"3xtf32 128x64x32 s3 w64x32 (default)", tune_padded<hpdl__tf32x3_shape, float>},
        {"3xtf32 128x128x32 s3 w64x32", tune_padded<t1, float>},
        {"3xtf32 64x64x32 s4 w32x32", tune_padded<t2, float>},
        {"3xtf32 128x64x16 s4 w64x32", tune_padded<t3, float>},
        {"3xtf32 64x128x32 s3 w32x64", tune_padded<t4, float>},
        {"3xtf32 128x64x32 s3 w64x32 (default) again", tune_padded<hpdl__tf32x3_shape, float>},
        {"warptile 128x256 bk8 tn16", tune_warptile<float, float, 8, 16, 1>},
        {"warptile 128x256 bk16 tn16", tune_warptile<float, float, 16, 16, 1>},
        {"warptile 128x128 bk16 minb1", tune_warptile<float, float, 16, 8, 1>},
        {"warptile 128x128 bk8 minb2 (default) again", tune_warptile<float, float, 8, 8, 2>},
        {"warptile 128x256 bk8 tn16 again", tune_warptile<float, float, 8, 16, 1>}};
    static const tune_variant<double, double> f64[] = {
        {"dmma 128x64x16 s3 w64x32 k16 (default)", tune_dmma<hpdl__dmma_shape>}, {"dmma 128x64x16 s3 w32x64 k16", tune_dmma<d1>},
        {"dmma 64x128x16 s3 w32x64 k16", tune_dmma<d2>},  {"dmma 128x64x16 s3 w64x32 k8", tune_dmma<d3>},
        {"dmma 128x64x16 s3 w64x32 k4", tune_dmma<d4>},   {"dmma 128x128x32 s3 w64x32 k4 (v3 default)", tune_dmma<d5>},
        {"dmma 128x64x16 s3 w64x32 k16 (default) again", tune_dmma<hpdl__dmma_shape>}};
    if (!opt->only || strcmp(opt->only, "f32") == 0) tune_type<float, float>("f32", f32, (int)(sizeof f32 / sizeof f32[0]), fl);
    if (!opt->only || strcmp(opt->only, "f64") == 0) tune_type<double, double>("f64", f64, (int)(sizeof f64 / sizeof f64[0]), fl);
    if (!opt->only || strcmp(opt->only, "f16") == 0) {
        int per_sm;
        for (per_sm = 1; per_sm <= 8; per_sm *= 2) { /* how many warps the tensor pipes need through mma.sync */
            double ms, t = bench_mma_peak_tflops<__half>(sms, per_sm, &ms);
            printf("tune f16   mma.sync peak, %2d warps per SM (%2d per scheduler) %8.2f TFLOP/s\n", 8 * per_sm, 2 * per_sm, t);
        }
        tune_half<__half>("f16", fl);
    }
    if (!opt->only || strcmp(opt->only, "bf16") == 0) tune_half<__nv_bfloat16>("bf16", fl);
}

static void write_rungs(const bench_out *o) {
    FILE *f = hpdl_csv_open_with_header(".", "gemm_rungs", "rung,f32,f64,f16,bf16,tf32");
    int r, t;
    if (!f) return;
    for (r = 0; r < N_RUNGS; r++) {
        fprintf(f, "%s", hpdl_gemm_algo_name(k_rungs[r]));
        for (t = 0; t < 5; t++) {
            if (o->rungs_4096[t][r] > 0) fprintf(f, ",%.4g", o->rungs_4096[t][r]);
            else fprintf(f, ",NaN");
        }
        fprintf(f, "\n");
    }
    fclose(f);
}

/* ---- --fp8: the FP8 GEMM against cuBLASLt's ------------------------------------- */

/* C (M x N, row-major bf16) = A (M x K) B^T (B N x K), e4m3, scaled by
   a_scale_inv * b_scale_inv. cuBLASLt is column-major and its FP8 kernels
   take only the "TN" layout: computed as C^T (N x M) = op_T(B) * A, B read
   column-major as K x N and transposed, A as K x M; each side's scale goes
   with its operand. fast: CUBLASLT_MATMUL_DESC_FAST_ACCUM, which adds in
   the tensor cores' accumulators as hpdl does; without it cuBLASLt moves
   partial sums into f32 registers every few k-steps (more exact, slower). */
typedef struct fp8_lt {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    void *ws;
    size_t ws_bytes;
    const hpdl_e4m3 *A, *B;
    hpdl_bf16 *C;
} fp8_lt;

static int fp8_lt_create(fp8_lt *g, int M, int N, int K, const hpdl_e4m3 *A, const hpdl_e4m3 *B, hpdl_bf16 *C,
                         const float *a_scale_inv, const float *b_scale_inv, int fast) {
    cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    const int8_t fast_accum = (int8_t)fast;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    memset(g, 0, sizeof *g);
    g->A = A; g->B = B; g->C = C;
    g->ws_bytes = 32u << 20;
    HPDL_CHECK(hpdl_cuda_alloc(&g->ws, g->ws_bytes));
    if (cublasLtCreate(&g->h) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &b_scale_inv, sizeof b_scale_inv) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &a_scale_inv, sizeof a_scale_inv) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum, sizeof fast_accum) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&g->la, CUDA_R_8F_E4M3, K, N, K) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_8F_E4M3, K, M, K) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&g->lc, CUDA_R_16BF, N, M, N) != CUBLAS_STATUS_SUCCESS ||
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

static void fp8_lt_destroy(fp8_lt *g) {
    if (g->lc) cublasLtMatrixLayoutDestroy(g->lc);
    if (g->lb) cublasLtMatrixLayoutDestroy(g->lb);
    if (g->la) cublasLtMatrixLayoutDestroy(g->la);
    if (g->desc) cublasLtMatmulDescDestroy(g->desc);
    if (g->h) cublasLtDestroy(g->h);
    hpdl_cuda_free(g->ws);
}

static void fp8_lt_run(void *ctx, cudaStream_t stream) {
    fp8_lt *g = (fp8_lt *)ctx;
    float one = 1, zero = 0;
    HPDL_CUBLAS_CHECK(cublasLtMatmul(g->h, g->desc, &one, g->B, g->la, g->A, g->lb, &zero, g->C, g->lc, g->C, g->lc,
                                     &g->algo, g->ws, g->ws_bytes, stream));
}

/* hpdl's FP8 GEMM on the same operands and scales (out_scale 1, no amax). */
typedef struct fp8_hpdl {
    int M, N, K;
    const hpdl_e4m3 *A, *B;
    hpdl_bf16 *C;
    hpdl_cuda_fp8_scales s;
} fp8_hpdl;

static void fp8_hpdl_run(void *ctx, cudaStream_t stream) {
    fp8_hpdl *g = (fp8_hpdl *)ctx;
    HPDL_CHECK(hpdl_cuda_fp8_gemm_bf16(g->M, g->N, g->K, g->A, HPDL_FP8_E4M3, g->K, g->B, HPDL_FP8_E4M3, g->K, &g->s,
                                       g->C, g->N, stream));
}

/* A rows x K matrix of e4m3 codes: random values in [-1, 1] cast with scale 400 (|x| 400 <= 448). */
static hpdl_e4m3 *fp8_random(int rows, int K, unsigned seed, const float *scale) {
    size_t n = (size_t)rows * K;
    float *x;
    hpdl_e4m3 *q;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&x, n * sizeof *x));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&q, n * sizeof *q));
    bench_fill<<<1024, 256>>>(x, n, seed);
    HPDL_CHECK(hpdl_cuda_fp8_cast_e4m3_f32(x, (int64_t)n, scale, q, NULL, 0));
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    hpdl_cuda_free(x);
    return q;
}

/* One timed row: TFLOP/s of ms, ratio = anchor_ms / ms (1 for the anchor). */
static void fp8_row(bench_out *o, const char *rung, int n, double ms, double anchor_ms, double err) {
    bench_row row;
    memset(&row, 0, sizeof row);
    row.type = "e4m3"; row.rung = rung; row.M = row.N = row.K = n;
    row.ms = ms;
    row.tflops = 2.0 * n * n * (double)n / (ms * 1e-3) / 1e12;
    row.ratio = anchor_ms / ms;
    row.peak_share = peak_tflops(o->gpu, "e4m3") > 0 ? row.tflops / peak_tflops(o->gpu, "e4m3") : 0;
    row.err = err;
    row.status = "ok";
    print_row(o, &row);
}

/* n^3: hpdl and cuBLASLt (fast accumulation: the anchor; and without)
   checked against each other, then timed in turns; at 8192 hpdl's f16 GEMM
   (AUTO, C = A B, all row-major) joins the turns. Returns 0 if hpdl's
   result differs from cuBLASLt's. */
static int fp8_size(bench_out *o, const bench_opts *opt, int n, hpdl_cuda_l2_flusher *fl) {
    const float scale = 400.0f, scale_inv = 1.0f / 400.0f;
    const size_t nc = (size_t)n * n;
    fp8_hpdl g;
    fp8_lt fast, exact;
    memset(&exact, 0, sizeof exact); /* destroyed below even if never created */
    bench_gemm<__half> h;
    bench_data<__half> half;
    hpdl_bf16 *ref;
    float *d_scale, *d_scale_inv;
    unsigned long long *d_err;
    double err = 0, ms[4], flops = 2.0 * n * n * (double)n;
    int runs = n == 8192 ? 4 : 3, good = 1;
    hpdl_cuda_work_fn fns[4] = {fp8_hpdl_run, fp8_lt_run, fp8_lt_run, bench_run<__half>};
    void *ctxs[4] = {&g, &fast, &exact, &h};
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d_scale, sizeof(float)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d_scale_inv, sizeof(float)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d_err, 2 * sizeof *d_err));
    HPDL_CHECK(hpdl_cuda_to_device(d_scale, &scale, sizeof scale, 0));
    HPDL_CHECK(hpdl_cuda_to_device(d_scale_inv, &scale_inv, sizeof scale_inv, 0));
    memset(&g, 0, sizeof g);
    g.M = g.N = g.K = n;
    g.A = fp8_random(n, n, 1u, d_scale);
    g.B = fp8_random(n, n, 2u, d_scale);
    g.s.a_scale_inv = g.s.b_scale_inv = d_scale_inv;
    g.s.out_scale = NULL;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&g.C, nc * sizeof *g.C));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&ref, nc * sizeof *ref));
    int ran = fp8_lt_create(&fast, n, n, n, g.A, g.B, ref, d_scale_inv, d_scale_inv, 1) &&
              fp8_lt_create(&exact, n, n, n, g.A, g.B, ref, d_scale_inv, d_scale_inv, 0);
    if (!ran) printf("e4m3  %5d: cuBLASLt has no FP8 algorithm here; nothing timed\n", n);
    if (ran) {
        fp8_lt_run(&fast, 0);
        HPDL_CHECK(hpdl_cuda_poison(g.C, nc * sizeof *g.C));
        ran = hpdl_cuda_fp8_gemm_bf16(n, n, n, g.A, HPDL_FP8_E4M3, n, g.B, HPDL_FP8_E4M3, n, &g.s, g.C, n, 0) !=
              HPDL_ERR_UNSUPPORTED;
        if (!ran) printf("e4m3  %5d: hpdl's FP8 GEMM needs sm_90a and a Hopper GPU; nothing timed\n", n);
    }
    if (ran) {
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        err = rel_error((const __nv_bfloat16 *)g.C, (const __nv_bfloat16 *)ref, nc, d_err);
        good = err <= bench_tol("bf16");
    }
    if (ran && n == 8192) {
        bench_data_create(&half, n, n, n);
        h.algo = HPDL_GEMM_AUTO; h.M = h.N = h.K = n; h.A = half.A; h.B = half.B; h.C = half.C;
    }
    if (ran && good) {
        HPDL_CHECK(hpdl_cuda_time_interleaved_ms(runs, fns, ctxs, 0, 2, opt->quick ? 20 : 50, fl, ms));
        fp8_row(o, "cublaslt_fast", n, ms[1], ms[1], 0);
        fp8_row(o, "cublaslt", n, ms[2], ms[1], 0);
        fp8_row(o, "hpdl_fp8", n, ms[0], ms[1], err);
        if (o->head) {
            char metric[64];
            snprintf(metric, sizeof metric, "gemm_fp8_e4m3_%d_hpdl", n);
            hpdl_csv_row(o->head, metric, flops / (ms[0] * 1e-3) / 1e12, "TFLOP/s", "cublaslt_fp8_fast_accum",
                         flops / (ms[1] * 1e-3) / 1e12, 1);
        }
        if (n == 8192) {
            printf("e4m3  %5d %5d %5d  %-16s %10.3f %9.2f  -> hpdl FP8 / hpdl f16 = %.3f\n", n, n, n, "hpdl_f16 (AUTO)",
                   ms[3], flops / (ms[3] * 1e-3) / 1e12, ms[3] / ms[0]);
            if (o->head)
                hpdl_csv_row(o->head, "gemm_fp8_e4m3_8192_hpdl_vs_f16", flops / (ms[0] * 1e-3) / 1e12, "TFLOP/s",
                             "hpdl_f16", flops / (ms[3] * 1e-3) / 1e12, 1);
        }
    } else if (ran) {
        printf("e4m3  %5d %5d %5d  %-16s WRONG (max|err|/max|C| %.1e against cuBLASLt): not timed\n", n, n, n, "hpdl_fp8", err);
    }
    if (ran && n == 8192) bench_data_destroy(&half);
    fp8_lt_destroy(&fast);
    fp8_lt_destroy(&exact);
    hpdl_cuda_free((void *)g.A); hpdl_cuda_free((void *)g.B); hpdl_cuda_free(g.C); hpdl_cuda_free(ref);
    hpdl_cuda_free(d_scale); hpdl_cuda_free(d_scale_inv); hpdl_cuda_free(d_err);
    return good;
}

static int fp8_all(bench_out *o, const bench_opts *opt, hpdl_cuda_l2_flusher *fl) {
    static const int sizes[] = {2048, 4096, 8192};
    int i, good = 1;
    printf("FP8: C (bf16) = A B^T, A and B e4m3 (values in [-1, 1] cast with scale 400, scale_inv 1/400), "
           "f32 accumulation; hpdl against cuBLASLt FP8 (TN) with fast accumulation, timed in turns "
           "with cuBLASLt's default (f32 promotion) and, at 8192, hpdl's f16 GEMM\n");
    for (i = 0; i < 3; i++)
        if (!opt->quick || sizes[i] == 4096) good &= fp8_size(o, opt, sizes[i], fl);
    return good;
}

/* ---- --mlp: the products of one MLP training step --------------------------------- */

/* One product of a training step of the MLP 784 -> H -> 10 at batch B as
   hpdl_cuda_mlp runs it (row-major, tight leading dimensions). */
typedef struct mlp_product {
    const char *name;
    hpdl_transpose ta, tb;
    int M, N, K;
} mlp_product;

static void mlp_products(int B, int H, mlp_product p[5]) {
    const hpdl_transpose n = HPDL_NO_TRANS, t = HPDL_TRANS;
    const mlp_product all[5] = {{"fwd_l0", n, n, B, H, 784}, /* X W0 */
                                {"fwd_l1", n, n, B, 10, H},  /* A1 W1 */
                                {"dw_l1", t, n, H, 10, B},   /* A1^T D1: the weight gradient, K = B */
                                {"dx_l1", n, t, B, H, 10},   /* D1 W1^T: the delta carried down, K = 10 */
                                {"dw_l0", t, n, 784, H, B}}; /* X^T D0 */
    memcpy(p, all, sizeof all);
}
static int mlp_lda(const mlp_product *p) { return p->ta == HPDL_TRANS ? p->M : p->K; }
static int mlp_ldb(const mlp_product *p) { return p->tb == HPDL_TRANS ? p->K : p->N; }

template <typename T> struct mlp_ctx {
    hpdl_gemm_algo algo;
    mlp_product p;
    const T *A, *B;
    T *C;
};
template <typename T> static hpdl_status mlp_call(const mlp_ctx<T> *c, cudaStream_t s) {
    return hpdl_cuda_gemm_algo(c->algo, c->p.ta, c->p.tb, c->p.M, c->p.N, c->p.K, 1, c->A, mlp_lda(&c->p), c->B,
                               mlp_ldb(&c->p), 0, c->C, c->p.N, s);
}
template <typename T> static void mlp_run(void *ctx, cudaStream_t s) { mlp_call((const mlp_ctx<T> *)ctx, s); }

/* Sums of log ratios per rung, for the geometric means; best: each product's best own rung. */
enum { MLP_MAX_RUNGS = 8 };
typedef struct mlp_tally {
    double log_sum[MLP_MAX_RUNGS], best_log_sum;
    int count[MLP_MAX_RUNGS], best_count;
} mlp_tally;

/* One product: every rung checked against cuBLAS (C poisoned first), then
   timed in turns with cuBLAS (L2 flushed before each run). Returns 0 if a
   rung computed a wrong result. */
template <typename T>
static int mlp_product_rows(FILE *all, const char *type, int B, int H, const mlp_product *p, const hpdl_gemm_algo *rungs,
                            int n_rungs, int reps, hpdl_cuda_l2_flusher *fl, mlp_tally *t) {
    const size_t na = (size_t)(p->ta == HPDL_TRANS ? p->K : p->M) * mlp_lda(p);
    const size_t nb = (size_t)(p->tb == HPDL_TRANS ? p->N : p->K) * mlp_ldb(p), nc = (size_t)p->M * p->N;
    T *A, *Bm, *C, *C_cublas, *ref;
    unsigned long long *d_err;
    mlp_ctx<T> anchor;
    double best = 0;
    int r, good = 1;
    HPDL_CUDA_CHECK(cudaMalloc(&A, na * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&Bm, nb * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&C, nc * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&C_cublas, nc * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&ref, nc * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&d_err, 2 * sizeof *d_err));
    bench_fill<<<1024, 256>>>(A, na, 1u);
    bench_fill<<<1024, 256>>>(Bm, nb, 2u);
    anchor.algo = HPDL_GEMM_CUBLAS; anchor.p = *p; anchor.A = A; anchor.B = Bm; anchor.C = ref;
    HPDL_CHECK(mlp_call(&anchor, 0));
    anchor.C = C_cublas; /* the timed cuBLAS runs keep ref intact */
    for (r = 0; r < n_rungs; r++) {
        mlp_ctx<T> c = anchor;
        hpdl_cuda_work_fn runs[2] = {mlp_run<T>, mlp_run<T>};
        void *ctxs[2] = {&c, &anchor};
        double ms[2] = {0, 0}, err = 0, ratio = 0;
        const char *status = "ok", *pick = "";
        hpdl_status st;
        int auto_splitk;
        c.algo = rungs[r];
        c.C = C;
        auto_splitk = c.algo == HPDL_GEMM_AUTO && hpdl__gemm_auto_splitk(p->M, p->N, p->K, (int)sizeof(T));
        if (c.algo == HPDL_GEMM_AUTO) pick = auto_splitk ? " (auto: splitk)" : " (auto: big tiles)";
        HPDL_CHECK(hpdl_cuda_poison(C, nc * sizeof(T)));
        st = mlp_call(&c, 0);
        if (st == HPDL_ERR_UNSUPPORTED) {
            status = "unsupported";
        } else {
            HPDL_CHECK(st);
            HPDL_CUDA_CHECK(cudaDeviceSynchronize());
            err = rel_error(C, ref, nc, d_err);
            if (!(err <= bench_tol(type))) status = "WRONG";
        }
        if (strcmp(status, "ok") == 0) {
            HPDL_CHECK(hpdl_cuda_time_interleaved_ms(2, runs, ctxs, 0, 3, reps, fl, ms));
            ratio = ms[1] / ms[0];
            t->log_sum[r] += log(ratio);
            t->count[r]++;
            /* Where AUTO takes the splitk rung, its sample is a second draw of that rung's kernel
               and does not count toward the best (it would favour that kernel); elsewhere AUTO may
               run a kernel no rung names (the thin and one-tile Hopper kernels) and counts. */
            if (ratio > best && !auto_splitk) best = ratio;
        }
        good &= strcmp(status, "WRONG") != 0;
        printf("%-5s %5d %5d  %-7s %5d %5d %5d  %-16s %9.2f %9.2f %7.3f %9.1e  %s%s\n", type, H, B, p->name, p->M, p->N,
               p->K, hpdl_gemm_algo_name(c.algo), 1e3 * ms[0], 1e3 * ms[1], ratio, err, status, pick);
        if (all)
            fprintf(all, "gemm_mlp_%s_h%d_b%d_%s_%s,%.6g,us,cublas,%.6g,%.4f,%s,%d,%d,%s,%d,%d,%d,%s,%.3g,%s\n", type, H, B,
                    p->name, hpdl_gemm_algo_name(c.algo), 1e3 * ms[0], 1e3 * ms[1], ratio, type, H, B, p->name, p->M, p->N,
                    p->K, hpdl_gemm_algo_name(c.algo), err, status);
    }
    fflush(stdout);
    if (best > 0) {
        t->best_log_sum += log(best);
        t->best_count++;
    }
    cudaFree(A); cudaFree(Bm); cudaFree(C); cudaFree(C_cublas); cudaFree(ref); cudaFree(d_err);
    return good;
}

/* Every product of the MLP's steps for H in {512, 2048} and B in {32, 128,
   512, 3000}, each hpdl rung against cuBLAS; then the geometric mean of the
   ratios per rung and of each product's best own rung (gemm_mlp.csv). */
template <typename T>
static int mlp_type(FILE *head, FILE *all, const bench_opts *opt, const char *type, const hpdl_gemm_algo *rungs, int n_rungs,
                    hpdl_cuda_l2_flusher *fl) {
    static const int widths[] = {512, 2048}, batches[] = {32, 128, 512, 3000};
    mlp_tally t;
    int h, b, i, r, good = 1, products = 0;
    if (opt->only && strcmp(opt->only, type) != 0) return 1;
    memset(&t, 0, sizeof t);
    for (h = 0; h < 2; h++)
        for (b = 0; b < 4; b++) {
            mlp_product p[5];
            mlp_products(batches[b], widths[h], p);
            for (i = 0; i < 5; i++, products++)
                good &= mlp_product_rows<T>(all, type, batches[b], widths[h], &p[i], rungs, n_rungs, opt->quick ? 20 : 50,
                                            fl, &t);
        }
    printf("%s: geometric mean of the ratios to cuBLAS over the %d products (rungs that ran all of them count):\n", type,
           products);
    for (r = 0; r <= n_rungs; r++) {
        const char *name = r < n_rungs ? hpdl_gemm_algo_name(rungs[r]) : "best_own";
        int n = r < n_rungs ? t.count[r] : t.best_count;
        double mean = n > 0 ? exp((r < n_rungs ? t.log_sum[r] : t.best_log_sum) / n) : 0;
        char metric[96];
        printf("  %-16s %7.3f  (%d of %d products)\n", name, mean, n, products);
        if (n == products && head) {
            snprintf(metric, sizeof metric, "gemm_mlp_%s_geomean_%s", type, name);
            hpdl_csv_row(head, metric, mean, "ratio", "cublas", 1.0, 1);
        }
    }
    fflush(stdout);
    return good;
}

static int mlp_all(const bench_opts *opt, const hpdl_cuda_device_info *info, hpdl_cuda_l2_flusher *fl) {
    static const hpdl_gemm_algo f32_rungs[] = {HPDL_GEMM_AUTO, HPDL_GEMM_SPLITK, HPDL_GEMM_WARPTILE, HPDL_GEMM_MMA};
    static const hpdl_gemm_algo half_rungs[] = {HPDL_GEMM_AUTO, HPDL_GEMM_SPLITK, HPDL_GEMM_WARPTILE,
                                                HPDL_GEMM_MMA,  HPDL_GEMM_WGMMA,  HPDL_GEMM_WGMMA_PERSISTENT};
    enum { N_F32 = sizeof f32_rungs / sizeof f32_rungs[0], N_HALF = sizeof half_rungs / sizeof half_rungs[0] };
    FILE *head = hpdl_csv_open(".", "gemm_mlp");
    FILE *all = hpdl_csv_open_with_header(".", "gemm_mlp_all",
                                          "metric,value,unit,anchor,anchor_value,ratio,type,h,batch,product,m,n,k,rung,"
                                          "max_rel_err,status");
    int good = 1;
    printf("gemm --mlp on %s (%d SMs): the products of one training step of 784 -> H -> 10 at batch B, as "
           "hpdl_cuda_mlp runs them;\neach rung checked against cuBLAS, then timed in turns with it (median, L2 "
           "flushed); ratio = cuBLAS time / rung time\n",
           info->name, info->sm_count);
    printf("%-5s %5s %5s  %-7s %5s %5s %5s  %-16s %9s %9s %7s %9s  %s\n", "type", "H", "B", "product", "M", "N", "K",
           "rung", "us", "cublas_us", "ratio", "err", "status");
    good &= mlp_type<float>(head, all, opt, "f32", f32_rungs, N_F32, fl);
    good &= mlp_type<__half>(head, all, opt, "f16", half_rungs, N_HALF, fl);
    good &= mlp_type<__nv_bfloat16>(head, all, opt, "bf16", half_rungs, N_HALF, fl);
    if (head) fclose(head);
    if (all) fclose(all);
    return good;
}

/* "MxNxK" into shape[3]; 0 (after a message that names --shape) unless
   three sizes in [1, 65536]. */
static int parse_shape(const char *text, int *shape) {
    char part[3][24];
    const char *p = text;
    int i;
    for (i = 0; i < 3; i++) {
        size_t len = strcspn(p, "x");
        if (len >= sizeof part[i] || (i < 2 && p[len] != 'x') || (i == 2 && p[len])) {
            fprintf(stderr, "gemm: --shape: '%s' is not MxNxK\n", text);
            return 0;
        }
        snprintf(part[i], sizeof part[i], "%.*s", (int)len, p);
        if (hpdl_arg_int("--shape", part[i], 1, 1 << 16, &shape[i]) != HPDL_OK) return 0;
        p += len + (i < 2);
    }
    return 1;
}

static void parse_args(int argc, char **argv, bench_opts *opt) {
    const char *shape = NULL, *output = NULL, *types = "f32|f64|f16|bf16|tf32";
    hpdl_cli_option opts[9];
    opts[0] = hpdl_cli_flag("quick", 0, &opt->quick, "4096^3 only, fewer runs");
    opts[1] = hpdl_cli_flag("tune", 0, &opt->tune, "internal tile variants of the fast rungs at 4096^3 NN");
    opts[2] = hpdl_cli_flag("sustained", 0, &opt->sustained, "cuBLAS and the fast rungs at the GPU's power limit");
    opts[3] = hpdl_cli_string("shape", 0, &shape, "MxNxK", "this shape only, fewer runs");
    opts[4] = hpdl_cli_choice("precision", 0, &opt->only, types, "one type only (none: all)");
    opts[5] = hpdl_cli_choice("type", 0, &opt->only, types, "the same as --precision");
    opts[6] = hpdl_cli_string("output", 0, &output, "DIR", "folder for the CSVs ($HPDL_RESULTS, else .)");
    opts[7] = hpdl_cli_flag("fp8", 0, &opt->fp8, "the FP8 GEMM (e4m3) against cuBLASLt's at 2048^3, 4096^3, 8192^3");
    opts[8] = hpdl_cli_flag("mlp", 0, &opt->mlp, "the products of an MLP step (784-H-10), every rung against cuBLAS");
    hpdl_cli_parse(argc, argv, "gemm", "Every rung of the GEMM ladder against cuBLAS.", opts, 9);
    if (shape && !parse_shape(shape, opt->shape)) exit(2);
    if (shape) opt->quick = 1; /* fewer runs */
    hpdl_csv_set_dir(output);
}

int main(int argc, char **argv) {
    bench_opts opt;
    bench_out o;
    hpdl_cuda_device_info info;
    hpdl_cuda_l2_flusher fl;
    int good = 1;
    memset(&opt, 0, sizeof opt);
    memset(&o, 0, sizeof o);
    parse_args(argc, argv, &opt);
    if (!hpdl_cuda_available()) { printf("gemm: skipped, " HPDL_CUDA_NO_GPU "; nothing measured\n"); return 1; }
    HPDL_CHECK(hpdl_cuda_csv_context(argc, argv, 0)); /* beside every CSV: GPU, driver, date, commit, command */
    HPDL_CHECK(hpdl_cuda_device_query(0, &info));
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&fl));
    o.gpu = info.name;
    o.sms = info.sm_count;
    if (opt.tune) { tune_all(&opt, info.sm_count, &fl); hpdl_cuda_l2_flusher_destroy(&fl); return 0; }
    if (opt.sustained) { hpdl_cuda_l2_flusher_destroy(&fl); return sustained_all(&opt, &info) ? 0 : 1; }
    if (opt.mlp) {
        good = mlp_all(&opt, &info, &fl);
        hpdl_cuda_l2_flusher_destroy(&fl);
        if (!good) fprintf(stderr, "gemm: some rungs computed wrong results (status WRONG above)\n");
        return good ? 0 : 1;
    }
    printf("gemm on %s (%d SMs, sm_%d%d): row-major C = A*B, alpha 1, beta 0, random inputs in [-1, 1]\n", info.name,
           info.sm_count, info.cc_major, info.cc_minor);
    printf("each rung checked against cuBLAS (max|err|/max|C|) before timing; median time, L2 flushed; "
           "ratio = speed / cuBLAS's (same type, TF32 off), the two timed in turns; peak = datasheet dense\n");
    printf("%-5s %5s %5s %5s  %-16s %10s %9s %7s %7s %9s  %s\n", "type", "M", "N", "K", "rung", "ms", "TFLOP/s", "ratio",
           "peak", "err", "status");
    o.head = hpdl_csv_open(".", "gemm");
    o.all = hpdl_csv_open_with_header(".", "gemm_all", "metric,value,unit,anchor,anchor_value,ratio,type,m,n,k,rung,ms,peak_share,max_rel_err,status");
    if (opt.fp8) {
        good &= fp8_all(&o, &opt, &fl);
    } else {
        good &= bench_type<float>(&o, &opt, "f32", 0, &fl);
        good &= bench_type<double>(&o, &opt, "f64", 1, &fl);
        good &= bench_type<__half>(&o, &opt, "f16", 2, &fl);
        good &= bench_type<__nv_bfloat16>(&o, &opt, "bf16", 3, &fl);
        g_tf32 = 1;
        good &= bench_type<float>(&o, &opt, "tf32", 4, &fl);
        write_rungs(&o);
    }
    if (o.head) fclose(o.head);
    if (o.all) fclose(o.all);
    hpdl_cuda_l2_flusher_destroy(&fl);
    if (!good) { fprintf(stderr, "gemm: some rungs computed wrong results (status WRONG above)\n"); return 1; }
    return 0;
}
