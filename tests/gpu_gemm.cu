/* GPU tests for the GEMM ladder: every rung x type x transpose against the
   f64 CPU GEMM (hpdl_gemm_f64) on odd shapes, with alpha/beta != 1/0, ld >
   cols (aligned and unaligned), outputs poisoned first, beta = 0 reading no C;
   bad arguments leave C untouched. */
#include "hpdl_cuda.cuh"
#include "tests/hpdl_test.h"

static double to_f64(float x) { return x; }
static double to_f64(double x) { return x; }
static double to_f64(hpdl_f16 x) { return hpdl_f16_to_f32(x); }
static double to_f64(hpdl_bf16 x) { return hpdl_bf16_to_f32(x); }
static void from_f64(double v, float *x) { *x = (float)v; }
static void from_f64(double v, double *x) { *x = v; }
static void from_f64(double v, hpdl_f16 *x) { *x = hpdl_f16_from_f32((float)v); }
static void from_f64(double v, hpdl_bf16 *x) { *x = hpdl_bf16_from_f32((float)v); }

/* A rows x ld matrix of random values in [-1, 1] (padding too), as T and
   as the f64 copy of exactly those values. */
template <typename T> static void fill(hpdl_rng *r, T *x, double *x64, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) {
        from_f64(2.0 * hpdl_rng_uniform(r) - 1.0, &x[i]);
        x64[i] = to_f64(x[i]);
    }
}

static const hpdl_gemm_algo k_algos[] = {HPDL_GEMM_AUTO,     HPDL_GEMM_NAIVE,    HPDL_GEMM_COALESCED,
                                         HPDL_GEMM_SMEM,     HPDL_GEMM_REG1D,    HPDL_GEMM_REG2D,
                                         HPDL_GEMM_VEC4,     HPDL_GEMM_WARPTILE, HPDL_GEMM_MMA,
                                         HPDL_GEMM_WGMMA,    HPDL_GEMM_WGMMA_WS, HPDL_GEMM_WGMMA_PERSISTENT,
                                         HPDL_GEMM_WGMMA_CLUSTER, HPDL_GEMM_SPLITK, HPDL_GEMM_CUBLAS};
/* {33, 136, 40}: N a multiple of 8 but not of the tile, so the f16/bf16
   Hopper rungs' TMA epilogue (beta = 0, aligned ldc) clips a box.
   {256, 384, 448}: whole tiles of every rung, so with aligned ld the
   interior kernels run (the mma rung's copy-engine path on sm_90a: 7 K
   tiles go round its 3 stages more than twice). */
static const int k_shapes[][3] = {{1, 1, 1},     {17, 33, 5},  {129, 257, 63},  {200, 130, 300},
                                  {256, 512, 96}, {33, 136, 40}, {256, 384, 448}};

/* Everything one (shape, layout, beta) case needs, host and device. */
template <typename T> struct gemm_case {
    hpdl_transpose ta, tb;
    int M, N, K, lda, ldb, ldc;
    size_t na, nb, nc;
    double alpha, beta;
    T *A, *B, *C0, *C, *dA, *dB, *dC;
    double *ref, *scale;
};

/* ld for a matrix of `cols` columns: unaligned (cols+3) or a multiple of 8 past cols. */
static int pick_ld(int cols, int aligned) { return aligned ? (cols + 15) / 8 * 8 : cols + 3; }

/* Case c of a sweep: transposes from t (bit 0: A, bit 1: B), shape {M, N, K},
   leading dimensions by pick_ld, alpha 0.75, beta 0 or (bcase) -0.5. */
template <typename T> static void case_init(gemm_case<T> *c, int t, const int shape[3], int aligned, int bcase) {
    memset(c, 0, sizeof *c);
    c->ta = t & 1 ? HPDL_TRANS : HPDL_NO_TRANS;
    c->tb = t & 2 ? HPDL_TRANS : HPDL_NO_TRANS;
    c->M = shape[0]; c->N = shape[1]; c->K = shape[2];
    c->lda = pick_ld(c->ta == HPDL_TRANS ? c->M : c->K, aligned);
    c->ldb = pick_ld(c->tb == HPDL_TRANS ? c->K : c->N, aligned);
    c->ldc = pick_ld(c->N, aligned);
    c->alpha = 0.75;
    c->beta = bcase ? -0.5 : 0.0;
}

template <typename T> static int case_setup(gemm_case<T> *c, hpdl_rng *r) {
    int ar = c->ta == HPDL_TRANS ? c->K : c->M, br = c->tb == HPDL_TRANS ? c->N : c->K;
    double *a64, *b64, *c64, *aabs, *babs, *cabs;
    size_t i;
    c->na = (size_t)ar * c->lda;
    c->nb = (size_t)br * c->ldb;
    c->nc = (size_t)c->M * c->ldc;
    c->A = (T *)hpdl_alloc(c->na, sizeof(T));
    c->B = (T *)hpdl_alloc(c->nb, sizeof(T));
    c->C0 = (T *)hpdl_alloc(c->nc, sizeof(T));
    c->C = (T *)hpdl_alloc(c->nc, sizeof(T));
    c->ref = (double *)hpdl_alloc(c->nc, sizeof(double));
    c->scale = (double *)hpdl_alloc(c->nc, sizeof(double));
    a64 = (double *)hpdl_alloc(c->na, sizeof(double));
    b64 = (double *)hpdl_alloc(c->nb, sizeof(double));
    c64 = (double *)hpdl_alloc(c->nc, sizeof(double));
    aabs = (double *)hpdl_alloc(c->na, sizeof(double));
    babs = (double *)hpdl_alloc(c->nb, sizeof(double));
    cabs = (double *)hpdl_alloc(c->nc, sizeof(double));
    if (!c->A || !c->B || !c->C0 || !c->C || !c->ref || !c->scale || !a64 || !b64 || !c64 || !aabs || !babs || !cabs)
        return 0;
    fill(r, c->A, a64, c->na);
    fill(r, c->B, b64, c->nb);
    fill(r, c->C0, c64, c->nc);
    for (i = 0; i < c->na; i++) aabs[i] = fabs(a64[i]);
    for (i = 0; i < c->nb; i++) babs[i] = fabs(b64[i]);
    for (i = 0; i < c->nc; i++) cabs[i] = fabs(c64[i]);
    memcpy(c->ref, c64, c->nc * sizeof(double));
    memcpy(c->scale, cabs, c->nc * sizeof(double));
    /* reference, and the size of what was summed (|alpha| |A||B| + |beta| |C|) that the error is measured against */
    HPDL_CHECK(hpdl_gemm_f64(c->ta, c->tb, c->M, c->N, c->K, c->alpha, a64, c->lda, b64, c->ldb, c->beta, c->ref, c->ldc));
    HPDL_CHECK(hpdl_gemm_f64(c->ta, c->tb, c->M, c->N, c->K, fabs(c->alpha), aabs, c->lda, babs, c->ldb, fabs(c->beta),
                             c->scale, c->ldc));
    HPDL_FREE(a64); HPDL_FREE(b64); HPDL_FREE(c64); HPDL_FREE(aabs); HPDL_FREE(babs); HPDL_FREE(cabs);
    HPDL_CUDA_CHECK(cudaMalloc(&c->dA, c->na * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&c->dB, c->nb * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc(&c->dC, c->nc * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMemcpy(c->dA, c->A, c->na * sizeof(T), cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(c->dB, c->B, c->nb * sizeof(T), cudaMemcpyHostToDevice));
    return 1;
}

template <typename T> static void case_free(gemm_case<T> *c) {
    HPDL_FREE(c->A); HPDL_FREE(c->B); HPDL_FREE(c->C0); HPDL_FREE(c->C); HPDL_FREE(c->ref); HPDL_FREE(c->scale);
    cudaFree(c->dA); cudaFree(c->dB); cudaFree(c->dC);
}

/* The rung on c captured into a CUDA graph on a new stream (whose first
   GEMM it is: no splitk workspace is made during a capture), then run. */
template <typename T> static hpdl_status run_in_graph(gemm_case<T> *c, hpdl_gemm_algo algo) {
    cudaStream_t stream;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    hpdl_status s;
    HPDL_CUDA_CHECK(cudaStreamCreate(&stream));
    HPDL_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    s = hpdl_cuda_gemm_algo(algo, c->ta, c->tb, c->M, c->N, c->K, c->alpha, c->dA, c->lda, c->dB, c->ldb, c->beta,
                            c->dC, c->ldc, stream);
    HPDL_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    if (s == HPDL_OK) {
        HPDL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        HPDL_CUDA_CHECK(cudaGraphLaunch(exec, stream));
        HPDL_CUDA_CHECK(cudaStreamSynchronize(stream));
        HPDL_CUDA_CHECK(cudaGraphExecDestroy(exec));
    }
    HPDL_CUDA_CHECK(cudaGraphDestroy(graph));
    HPDL_CUDA_CHECK(cudaStreamDestroy(stream));
    return s;
}

/* Poisons C (all of it), puts C0 inside when beta != 0, runs the rung (in a
   graph: run_in_graph) and compares; the padding columns must still hold
   the poison. Returns 1 if good. */
template <typename T>
static int case_check(gemm_case<T> *c, hpdl_gemm_algo algo, double tol, const char *type, int in_graph = 0) {
    hpdl_status s;
    int i, j, bad = 0;
    unsigned char poison[sizeof(T)];
    memset(poison, 0xff, sizeof poison);
    HPDL_CHECK(hpdl_cuda_poison(c->dC, c->nc * sizeof(T)));
    if (c->beta != 0.0)
        HPDL_CUDA_CHECK(cudaMemcpy2D(c->dC, c->ldc * sizeof(T), c->C0, c->ldc * sizeof(T), c->N * sizeof(T), c->M,
                                     cudaMemcpyHostToDevice));
    s = in_graph ? run_in_graph(c, algo)
                 : hpdl_cuda_gemm_algo(algo, c->ta, c->tb, c->M, c->N, c->K, c->alpha, c->dA, c->lda, c->dB, c->ldb,
                                       c->beta, c->dC, c->ldc);
    if (s != HPDL_OK) {
        fprintf(stderr, "    %s %s ta=%d tb=%d %dx%dx%d: %s\n", type, hpdl_gemm_algo_name(algo), c->ta, c->tb, c->M,
                c->N, c->K, hpdl_status_string(s));
        return 0;
    }
    HPDL_CUDA_CHECK(cudaMemcpy(c->C, c->dC, c->nc * sizeof(T), cudaMemcpyDeviceToHost));
    for (i = 0; i < c->M; i++) {
        for (j = 0; j < c->ldc; j++) {
            size_t at = (size_t)i * c->ldc + j;
            if (j >= c->N) {
                if (memcmp(&c->C[at], poison, sizeof poison) != 0 && !bad++)
                    fprintf(stderr, "    %s %s ta=%d tb=%d %dx%dx%d ld=%d,%d,%d beta=%g: padding C[%d][%d] was written\n",
                            type, hpdl_gemm_algo_name(algo), c->ta, c->tb, c->M, c->N, c->K, c->lda, c->ldb, c->ldc,
                            c->beta, i, j);
                continue;
            }
            if (!(fabs(to_f64(c->C[at]) - c->ref[at]) <= tol * c->scale[at] + 1e-300)) {
                if (!bad)
                    fprintf(stderr, "    %s %s ta=%d tb=%d %dx%dx%d ld=%d,%d,%d beta=%g: C[%d][%d] = %.17g, want %.17g\n",
                            type, hpdl_gemm_algo_name(algo), c->ta, c->tb, c->M, c->N, c->K, c->lda, c->ldb, c->ldc,
                            c->beta, i, j, to_f64(c->C[at]), c->ref[at]);
                bad++;
            }
        }
    }
    return bad == 0;
}

static int is_hopper_rung(hpdl_gemm_algo a) { return a >= HPDL_GEMM_WGMMA && a <= HPDL_GEMM_WGMMA_CLUSTER; }

/* The device is a Hopper GPU (the Makefile then builds sm_90a code). */
static int hopper_gpu(void) {
    cudaDeviceProp p;
    return hpdl_cuda_available() && cudaGetDeviceProperties(&p, 0) == cudaSuccess && p.major == 9 && p.minor == 0;
}

/* A GPU with the tensor cores' mma.sync m16n8k16 for 16-bit elements (sm_80 on). */
static int tensor_gpu(void) {
    cudaDeviceProp p;
    return hpdl_cuda_available() && cudaGetDeviceProperties(&p, 0) == cudaSuccess && p.major >= 8;
}

/* Whether a Hopper rung runs this case (else it must say HPDL_ERR_UNSUPPORTED):
   f16/bf16 any layout, f32 (as TF32) only A not transposed and B transposed;
   lda and ldb of 16 bytes' multiples for the copy engine (cudaMalloc'd
   matrices start aligned). */
template <typename T> static int hopper_runs(const gemm_case<T> *c) {
    if (!hopper_gpu() || sizeof(T) == 8 || c->lda * sizeof(T) % 16 != 0 || c->ldb * sizeof(T) % 16 != 0) return 0;
    return sizeof(T) == 2 || (c->ta == HPDL_NO_TRANS && c->tb == HPDL_TRANS);
}

/* Every rung x transpose x shape x (aligned, unaligned ld) x (beta = 0, beta != 0) for one type. */
template <typename T> static void check_type(const char *type, double tol, double hopper_tol, uint64_t seed) {
    hpdl_rng r;
    int shape, layout, t, bcase, a, failed = 0, cases = 0;
    int tensor_ok = 0;
    cudaDeviceProp p;
    if (!hpdl_cuda_available()) { hpdl_test__skipped = 1; fprintf(stderr, "    skipped: no GPU\n"); return; }
    HPDL_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
    tensor_ok = p.major >= 8;
    hpdl_rng_seed(&r, seed);
    for (shape = 0; shape < HPDL_COUNT(k_shapes); shape++)
        for (layout = 0; layout < 2; layout++)
            for (t = 0; t < 4; t++)
                for (bcase = 0; bcase < 2; bcase++) {
                    gemm_case<T> c;
                    case_init(&c, t, k_shapes[shape], layout, bcase);
                    HPDL_EXPECT(case_setup(&c, &r));
                    for (a = 0; a < HPDL_COUNT(k_algos); a++) {
                        if (k_algos[a] == HPDL_GEMM_MMA && !tensor_ok) continue; /* own test */
                        cases++;
                        if (is_hopper_rung(k_algos[a]) && !hopper_runs(&c)) {
                            if (hpdl_cuda_gemm_algo(k_algos[a], c.ta, c.tb, c.M, c.N, c.K, c.alpha, c.dA, c.lda, c.dB,
                                                    c.ldb, c.beta, c.dC, c.ldc) != HPDL_ERR_UNSUPPORTED)
                                failed++;
                        } else if (!case_check(&c, k_algos[a], is_hopper_rung(k_algos[a]) ? hopper_tol : tol, type)) {
                            failed++;
                        }
                    }
                    case_free(&c);
                }
    if (failed) fprintf(stderr, "    %s: %d of %d cases failed\n", type, failed, cases);
    HPDL_EXPECT(failed == 0);
    HPDL_EXPECT(cases > 0);
}

/* f32 on the Hopper rungs is TF32: inputs keep 10 mantissa bits (~1e-3 relative). */
static void test_gemm_f32(void) { check_type<float>("f32", 1e-5, 4e-3, 1); }
static void test_gemm_f64(void) { check_type<double>("f64", 1e-12, 0, 2); }
static void test_gemm_f16(void) { check_type<hpdl_f16>("f16", 1e-2, 1e-2, 3); }
static void test_gemm_bf16(void) { check_type<hpdl_bf16>("bf16", 1e-2, 1e-2, 4); }

/* Sets case c up and checks every Hopper rung on it against the f64 reference. */
template <typename T> static void check_hopper_rungs(gemm_case<T> *c, hpdl_rng *r, const char *type) {
    int a;
    HPDL_EXPECT(case_setup(c, r));
    for (a = 0; a < HPDL_COUNT(k_algos); a++)
        if (is_hopper_rung(k_algos[a])) HPDL_EXPECT(case_check(c, k_algos[a], 1e-2, type));
    case_free(c);
}

/* Small cases per Hopper rung, both epilogues (beta != 0: through
   hpdl__wg_store; beta = 0 with C's rows and N 16-byte aligned: by TMA,
   with padding between N and ldc that must stay untouched): the program
   compute-sanitizer's racecheck runs
   (`compute-sanitizer --tool racecheck build/gpu/gpu_gemm hopper_small`). */
static void test_gemm_hopper_small(void) {
    hpdl_rng r;
    int tma;
    if (!hopper_gpu()) HPDL_SKIP("the Hopper rungs need an sm_90 GPU");
    hpdl_rng_seed(&r, 6);
    for (tma = 0; tma < 2; tma++) {
        gemm_case<hpdl_f16> c;
        memset(&c, 0, sizeof c);
        c.ta = HPDL_NO_TRANS; c.tb = HPDL_NO_TRANS;
        c.M = 300; c.N = tma ? 296 : 300; c.K = 200; c.lda = 200; c.ldb = 304; c.ldc = 304;
        c.alpha = 1.0; c.beta = tma ? 0.0 : 0.5;
        check_hopper_rungs(&c, &r, "f16");
    }
}

/* The mma rung on whole tiles only (its pipelined interior kernel: on
   sm_90a the copy engine's), every transpose, both betas:
   the program racecheck runs for that rung
   (`compute-sanitizer --tool racecheck build/gpu/gpu_gemm mma_whole_tiles`). */
static void test_gemm_mma_whole_tiles(void) {
    static const int shapes[][3] = {{256, 384, 448}, {512, 256, 448}};
    hpdl_rng r;
    int sh, t, bcase;
    cudaDeviceProp p;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
    if (p.major < 8) HPDL_SKIP("the mma rung needs sm_80+");
    hpdl_rng_seed(&r, 9);
    for (sh = 0; sh < 2; sh++)
        for (t = 0; t < 4; t++)
            for (bcase = 0; bcase < 2; bcase++) {
                gemm_case<hpdl_bf16> c;
                case_init(&c, t, shapes[sh], 1, bcase);
                HPDL_EXPECT(case_setup(&c, &r));
                HPDL_EXPECT(case_check(&c, HPDL_GEMM_MMA, 1e-2, "bf16"));
                case_free(&c);
            }
}

/* A case of transpose t (bit 0: A, bit 1: B), aligned leading dimensions,
   C tight. */
template <typename T>
static void hopper_case(gemm_case<T> *c, int t, int M, int N, int K, double alpha, double beta) {
    memset(c, 0, sizeof *c);
    c->ta = t & 1 ? HPDL_TRANS : HPDL_NO_TRANS;
    c->tb = t & 2 ? HPDL_TRANS : HPDL_NO_TRANS;
    c->M = M; c->N = N; c->K = K;
    c->lda = pick_ld(c->ta == HPDL_TRANS ? M : K, 1);
    c->ldb = pick_ld(c->tb == HPDL_TRANS ? K : N, 1);
    c->ldc = N;
    c->alpha = alpha; c->beta = beta;
}

/* More tiles than SMs (the persistent rungs loop, and hold three quarters
   of a tile's output until the next tile's first three k-steps; the cluster rung
   pairs a tile past the last row block), K not a multiple of the stage's 64:
   two k-steps, and one (the held chunks then go out after it). */
static void test_gemm_hopper_many_tiles(void) {
    hpdl_rng r;
    int t;
    if (!hopper_gpu()) HPDL_SKIP("the Hopper rungs need an sm_90 GPU");
    hpdl_rng_seed(&r, 7);
    for (t = 0; t < 4; t++) {
        gemm_case<hpdl_bf16> c;
        hopper_case(&c, t, 2200, 2600, t < 2 ? 72 : 40, -1.5, 0.0);
        check_hopper_rungs(&c, &r, "bf16");
    }
}

/* Few tiles and long K: the one-tile-a-block rung splits K (more rows
   than the thin kernel takes), every transpose, both epilogues; the
   slices' sums added in order with alpha and beta. 784 x 256 x 2000: 13
   tiles of 64 x 256, 32 k-steps in 8 slices, the last step partial; each
   tile's slices one cluster where 13 clusters of 8 fit the GPU (else a
   second kernel adds them). 600 x 256 x 2000: 10 tiles in 11 slices, more
   than a cluster holds: the second kernel. */
static void test_gemm_hopper_split_k(void) {
    static const int shapes[][3] = {{784, 256, 2000}, {600, 256, 2000}};
    const hpdl__wg_launch l = hpdl__wg_picker<__half>::pick(HPDL_GEMM_WGMMA, 0, 0);
    hpdl_rng r;
    int sh, t, b, clusters;
    HPDL_EXPECT(hpdl__wg_split_slices(784, 256, 2000, 64, 132) == 8 && hpdl__wg_split_slices(600, 256, 2000, 64, 132) == 11);
    if (!hopper_gpu()) HPDL_SKIP("the Hopper rungs need an sm_90 GPU");
    clusters = hpdl__wg_cluster_slices(l, 784, 256, 8);
    fprintf(stderr, "    784 x 256 x 2000: %s\n", clusters ? "slices added in clusters" : "slices added by a second kernel");
    HPDL_EXPECT(clusters == 0 || clusters >= 7);
    HPDL_EXPECT(hpdl__wg_cluster_slices(l, 600, 256, 11) == 0);
    hpdl_rng_seed(&r, 12);
    for (sh = 0; sh < 2; sh++)
        for (t = 0; t < 4; t++)
            for (b = 0; b < 2; b++) {
                gemm_case<hpdl_f16> c;
                hopper_case(&c, t, shapes[sh][0], shapes[sh][1], shapes[sh][2], -1.5, b ? 0.5 : 0.0);
                check_hopper_rungs(&c, &r, "f16");
            }
}

/* The split of K inside a graph capture on a new stream, which has no
   splitk workspace yet: 600 x 256 x 2000 (11 slices, too many for a
   cluster) runs in one slice there; its blocks once wrote their slices'
   sums through a null pointer. */
static void test_gemm_hopper_split_in_graph(void) {
    static const int shape[3] = {600, 256, 2000};
    gemm_case<hpdl_f16> c;
    hpdl_rng r;
    if (!hopper_gpu()) HPDL_SKIP("the Hopper rungs need an sm_90 GPU");
    hpdl_rng_seed(&r, 14);
    hopper_case(&c, 0, shape[0], shape[1], shape[2], 1.0, 0.0);
    HPDL_EXPECT(case_setup(&c, &r));
    HPDL_EXPECT(case_check(&c, HPDL_GEMM_WGMMA, 1e-2, "f16", 1));
    case_free(&c);
}

/* Few rows (M <= 512): the one-tile-a-block rung runs the thin kernel.
   40 x 520 x 2100: 8-row blocks (A transposed: 64), 33 k-steps through a
   ring of 16 stages (13), the last step partial; 300 x 1024 x 1100:
   64-row blocks, 18 k-steps in 13 stages; 700 x 1024 x 300 with A
   transposed: 128-row blocks. Every transpose, both epilogues, bf16. */
static void test_gemm_hopper_thin(void) {
    static const int shapes[][3] = {{40, 520, 2100}, {300, 1024, 1100}, {700, 1024, 300}};
    hpdl_rng r;
    int sh, t, b;
    if (!hopper_gpu()) HPDL_SKIP("the Hopper rungs need an sm_90 GPU");
    hpdl_rng_seed(&r, 13);
    for (sh = 0; sh < 3; sh++)
        for (t = 0; t < 4; t++)
            for (b = 0; b < 2; b++) {
                gemm_case<hpdl_bf16> c;
                hopper_case(&c, t, shapes[sh][0], shapes[sh][1], shapes[sh][2], 0.75, b ? -0.5 : 0.0);
                check_hopper_rungs(&c, &r, "bf16");
            }
}

/* The MLP's forward epilogue (hpdl__gemm_bias_act): relu(A W + bias) from
   the product's own kernel, f16, against f64 sums on the CPU. 40 x 520 x
   784: the thin kernel; 3000 x 512 x 784: the one-tile rung in one slice
   (its TMA store); 784 x 512 x 3000: K in slices added in clusters where
   they fit; 600 x 256 x 2000: 11 slices, added by the second kernel.
   Sigmoid, which has no such epilogue, and rows of 500 f16 elements (not
   16-byte aligned) are refused, not run without the epilogue. */
static void test_gemm_bias_act(void) {
    static const int shapes[][3] = {{40, 520, 784}, {3000, 512, 784}, {784, 512, 3000}, {600, 256, 2000}};
    hpdl_rng r;
    int sh;
    if (!hopper_gpu()) HPDL_SKIP("the Hopper rungs need an sm_90 GPU");
    hpdl_rng_seed(&r, 21);
    for (sh = 0; sh < 4; sh++) {
        const int M = shapes[sh][0], N = shapes[sh][1], K = shapes[sh][2];
        __half *hA = (__half *)hpdl_alloc((size_t)M * K, sizeof(__half)), *hW = (__half *)hpdl_alloc((size_t)K * N, sizeof(__half));
        __half *hC = (__half *)hpdl_alloc((size_t)M * N, sizeof(__half)), *dA = NULL, *dW = NULL, *dC = NULL;
        float *hb = (float *)hpdl_alloc((size_t)N, sizeof(float)), *db = NULL;
        double *sum = (double *)hpdl_alloc((size_t)M * N, sizeof(double)); /* A W + bias, row by row */
        double worst = 0.0;
        int64_t i;
        int m, n, k;
        HPDL_EXPECT(hA && hW && hC && hb && sum);
        if (!hA || !hW || !hC || !hb || !sum) {
            HPDL_FREE(hA); HPDL_FREE(hW); HPDL_FREE(hC); HPDL_FREE(hb); HPDL_FREE(sum);
            return;
        }
        for (i = 0; i < (int64_t)M * K; i++) hA[i] = __float2half((float)hpdl_rng_uniform(&r) - 0.5f);
        for (i = 0; i < (int64_t)K * N; i++) hW[i] = __float2half(0.25f * ((float)hpdl_rng_uniform(&r) - 0.5f));
        for (n = 0; n < N; n++) hb[n] = (float)hpdl_rng_uniform(&r) - 0.5f;
        for (m = 0; m < M; m++) {
            double *row = sum + (size_t)m * N;
            for (n = 0; n < N; n++) row[n] = hb[n];
            for (k = 0; k < K; k++) {
                const double x = __half2float(hA[(size_t)m * K + k]);
                const __half *w = hW + (size_t)k * N;
                for (n = 0; n < N; n++) row[n] += x * __half2float(w[n]);
            }
        }
        HPDL_CUDA_CHECK(cudaMalloc((void **)&dA, (size_t)M * K * sizeof(__half)));
        HPDL_CUDA_CHECK(cudaMalloc((void **)&dW, (size_t)K * N * sizeof(__half)));
        HPDL_CUDA_CHECK(cudaMalloc((void **)&dC, (size_t)M * N * sizeof(__half)));
        HPDL_CUDA_CHECK(cudaMalloc((void **)&db, (size_t)N * sizeof(float)));
        HPDL_CUDA_CHECK(cudaMemcpy(dA, hA, (size_t)M * K * sizeof(__half), cudaMemcpyHostToDevice));
        HPDL_CUDA_CHECK(cudaMemcpy(dW, hW, (size_t)K * N * sizeof(__half), cudaMemcpyHostToDevice));
        HPDL_CUDA_CHECK(cudaMemcpy(db, hb, (size_t)N * sizeof(float), cudaMemcpyHostToDevice));
        if (N >= 500) HPDL_EXPECT(hpdl__gemm_bias_act<__half>::run(M, 500, K, dA, dW, db, HPDL_ACT_RELU, dC, 0) == HPDL_ERR_UNSUPPORTED);
        HPDL_EXPECT(hpdl__gemm_bias_act<__half>::run(M, N, K, dA, dW, db, HPDL_ACT_SIGMOID, dC, 0) == HPDL_ERR_UNSUPPORTED);
        HPDL_CHECK(hpdl_cuda_poison(dC, (size_t)M * N * sizeof(__half)));
        HPDL_EXPECT(hpdl__gemm_bias_act<__half>::run(M, N, K, dA, dW, db, HPDL_ACT_RELU, dC, 0) == HPDL_OK);
        HPDL_CUDA_CHECK(cudaMemcpy(hC, dC, (size_t)M * N * sizeof(__half), cudaMemcpyDeviceToHost));
        for (i = 0; i < (int64_t)M * N; i++) {
            const double want = sum[i] < 0.0 ? 0.0 : sum[i];
            const double err = fabs((double)__half2float(hC[i]) - want) / (1.0 + fabs(want));
            if (!(err <= worst)) worst = err;
        }
        if (!(worst <= 4e-3)) fprintf(stderr, "    %d x %d x %d: worst relative error %g\n", M, N, K, worst);
        HPDL_EXPECT(worst <= 4e-3);
        cudaFree(dA); cudaFree(dW); cudaFree(dC); cudaFree(db);
        HPDL_FREE(hA); HPDL_FREE(hW); HPDL_FREE(hC); HPDL_FREE(hb); HPDL_FREE(sum);
    }
}

/* Every Hopper rung on one M x N x K case (A not transposed, tight leading
   dimensions) with both epilogues: beta = 0 (by TMA) and beta != 0 (reads C). */
template <typename T>
static void check_hopper_epilogues(const char *type, uint64_t seed, hpdl_transpose tb, int M, int N, int K, double alpha) {
    hpdl_rng r;
    int b;
    hpdl_rng_seed(&r, seed);
    for (b = 0; b < 2; b++) {
        gemm_case<T> c;
        memset(&c, 0, sizeof c);
        c.ta = HPDL_NO_TRANS;
        c.tb = tb;
        c.M = M; c.N = N; c.K = K;
        c.lda = K; c.ldb = tb == HPDL_TRANS ? K : N; c.ldc = N;
        c.alpha = alpha; c.beta = b ? -0.5 : 0.0;
        check_hopper_rungs(&c, &r, type);
    }
}

/* More than two waves of tiles on any Hopper GPU (288 tiles of 128 x 256,
   K of 4 k-steps): the persistent rungs' later rounds. */
static void test_gemm_hopper_waves(void) {
    if (!hopper_gpu()) HPDL_SKIP("the Hopper rungs need an sm_90 GPU");
    check_hopper_epilogues<hpdl_f16>("f16", 11, HPDL_TRANS, 2304, 4000, 200, 0.75);
}

/* The warp-specialized rung's 128 x 192 tiles (hpdl__wg_ws_narrow): a
   shape whose tiles of 192 make one whole wave on this GPU, M and N not
   multiples of the tile, K of 4 k-steps (the last partial); A K-major
   (where AUTO and the rung take them), B either way, both epilogues, f16
   and bf16. */
static void test_gemm_hopper_narrow_tiles(void) {
    int sms = 0, cols;
    if (!hopper_gpu()) HPDL_SKIP("the Hopper rungs need an sm_90 GPU");
    HPDL_EXPECT(hpdl__sm_count(&sms) == HPDL_OK);
    for (cols = 2; cols <= 64; cols++) {
        const int M = 128 * (sms / cols) - 37, N = 192 * cols - 56; /* rows of B and C 16-byte aligned */
        if (sms % cols != 0 || !hpdl__wg_ws_narrow(M, N, sms)) continue;
        HPDL_EXPECT(hpdl__gemm_auto_hopper(M, N, 200, 1, sms) == HPDL_GEMM_WGMMA_WS);
        check_hopper_epilogues<hpdl_f16>("f16", 31, HPDL_NO_TRANS, M, N, 200, 0.75);
        check_hopper_epilogues<hpdl_bf16>("bf16", 32, HPDL_TRANS, M, N, 200, -1.25);
        return;
    }
    HPDL_SKIP("no shape of whole 192-column waves for this SM count");
}

/* The persistent rung's stream-K schedule (hpdl__wg_item_at; host code, no
   GPU needed), for many tile counts, block counts and k-steps per tile:
   every k-step of every tile is done exactly once; a block leaves at most
   one partial sum (its slot holds one); the block holding a tile's last
   k-step finishes it, and the partial sums it adds (hpdl__wg_sk_take: the
   runs of the blocks below it that reach into the tile) are exactly the
   tile's other pieces; a block's pieces start at k = 0 before the others. */
static void test_gemm_stream_k_schedule(void) {
    int units, blocks, KT, bad = 0, tails = 0;
    for (blocks = 1; blocks <= 140 && !bad; blocks += 13)
        for (units = 1; units <= 3 * blocks + 7 && !bad; units += 1 + units / 7)
            for (KT = 1; KT <= 40 && !bad; KT += 3) {
                hpdl__wg_sk sk = {NULL, NULL, 0, units % blocks};
                int *done = (int *)hpdl_alloc((size_t)units * KT, sizeof(int)), *partials = (int *)hpdl_alloc(
                                                                                        (size_t)blocks, sizeof(int));
                int *finisher = (int *)hpdl_alloc((size_t)units, sizeof(int)), b, i, u, k;
                hpdl__wg_item w;
                memset(done, 0, (size_t)units * KT * sizeof *done);
                memset(partials, 0, (size_t)blocks * sizeof *partials);
                tails += sk.tail > 0;
                for (u = 0; u < units; u++) finisher[u] = -1;
                for (b = 0; b < blocks; b++) {
                    int in_tail = 0;
                    for (i = 0; hpdl__wg_item_at(i, b, blocks, units, KT, sk, &w); i++) {
                        if (w.u < 0 || w.u >= units || w.k0 < 0 || w.k1 > KT || w.k0 >= w.k1) { bad = 1; break; }
                        if (w.u >= units - sk.tail && in_tail++ > 0 && w.k0 == 0) bad = 1; /* start pieces first */
                        for (k = w.k0; k < w.k1; k++) done[(size_t)w.u * KT + k]++;
                        if (w.k1 < KT) partials[b]++;
                        else finisher[w.u] = b;
                    }
                }
                for (u = 0; u < units * KT; u++) bad |= done[u] != 1;
                for (b = 0; b < blocks; b++) bad |= partials[b] > 1;
                for (u = units - sk.tail; u < units && !bad; u++) { /* the tail tiles' partial sums */
                    long long start = (long long)(u - (units - sk.tail)) * KT;
                    int f = finisher[u], p, pieces = 0, taken = 0;
                    for (b = 0; b < blocks; b++)
                        for (i = 0; hpdl__wg_item_at(i, b, blocks, units, KT, sk, &w); i++)
                            if (w.u == u && w.k1 < KT) pieces += b < f ? 1 : 1000; /* above f: never taken */
                    for (p = f - 1; p >= 0 && hpdl__wg_sk_start(sk, KT, p + 1, blocks) > start; p--)
                        taken += hpdl__wg_sk_start(sk, KT, p, blocks) < hpdl__wg_sk_start(sk, KT, p + 1, blocks);
                    bad |= f < 0 || pieces != taken;
                }
                if (bad) fprintf(stderr, "    units %d, blocks %d, KT %d: schedule wrong\n", units, blocks, KT);
                HPDL_FREE(done); HPDL_FREE(partials); HPDL_FREE(finisher);
            }
    HPDL_EXPECT(!bad);
    HPDL_EXPECT(tails > 0);
}

/* The stream-K tail on the GPU, on a 132-SM Hopper GPU (H100/H200 SXM):
   172 tiles, so 40 in the last wave, of 27 k-steps (K = 1720: the last one
   partial), 8 or 9 k-steps per block: tiles in two or three pieces, blocks
   with one piece or two; every Hopper rung, the persistent one and the
   cluster one (pairs of tiles, 86 of them on about 66 resident clusters)
   split. On other SM counts it is another persistent case. */
static void test_gemm_hopper_stream_k(void) {
    if (!hopper_gpu()) HPDL_SKIP("the Hopper rungs need an sm_90 GPU");
    check_hopper_epilogues<hpdl_bf16>("bf16", 12, HPDL_NO_TRANS, 512, 11008, 1720, 1.25);
}

/* Fewer tiles than SMs and a long K (as an MLP's weight gradient at batch
   3000): 14 tiles of 47 k-steps, each in two pieces on 28 blocks (the
   cluster rung: 8 pairs of tiles, the last pair half outside M, in two
   pieces on 16 clusters). */
static void test_gemm_hopper_stream_k_few_tiles(void) {
    if (!hopper_gpu()) HPDL_SKIP("the Hopper rungs need an sm_90 GPU");
    check_hopper_epilogues<hpdl_f16>("f16", 13, HPDL_NO_TRANS, 784, 512, 3000, 1.0);
}

/* The five products of one MLP step 784 -> H -> 10 at batch B, with the
   MLP's transposes (hpdl__cmlp_forward, _backward_dw, _backward_delta), at
   odd sizes: {ta, tb, M, N, K} for B and H. */
static void mlp_products(int B, int H, int out[5][5]) {
    const int t = HPDL_TRANS, n = HPDL_NO_TRANS;
    const int p[5][5] = {{n, n, B, H, 785}, /* forward, layer 0: X W0 */
                         {n, n, B, 10, H},  /* forward, layer 1: A1 W1 (N = 10) */
                         {t, n, H, 10, B},  /* dW1 = A1^T D1 (K = B) */
                         {n, t, B, H, 10},  /* D0 = D1 W1^T (K = 10) */
                         {t, n, 785, H, B}}; /* dW0 = X^T D0 (K = B) */
    memcpy(out, p, sizeof p);
}

/* splitk, warptile, mma (sm_80+) and AUTO on the MLP's products (B 37 and 1000, H 130:
   narrow tiles, the short and square ones, K split into up to 16 slices;
   f32/f64 warptile splits K too, with a shorter last slice) against
   the f64 CPU GEMM, both betas, aligned and unaligned leading dimensions;
   a second splitk run gives the same bits (the slices add in a fixed
   order; the tile counters were set back to 0), and so does AUTO on the
   narrow products (N <= 16), which are splitk's but for f64. */
template <typename T> static void check_mlp_type(const char *type, double tol, uint64_t seed) {
    static const int batches[] = {37, 1000};
    hpdl_rng r;
    cudaDeviceProp p;
    int b, i, layout, bcase, failed = 0, tensor_ok;
    if (!hpdl_cuda_available()) { hpdl_test__skipped = 1; fprintf(stderr, "    skipped: no GPU\n"); return; }
    HPDL_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
    tensor_ok = p.major >= 8;
    hpdl_rng_seed(&r, seed);
    for (b = 0; b < 2; b++) {
        int prod[5][5];
        mlp_products(batches[b], 130, prod);
        for (i = 0; i < 5; i++)
            for (layout = 0; layout < 2; layout++)
                for (bcase = 0; bcase < 2; bcase++) {
                    gemm_case<T> c;
                    T *first;
                    case_init(&c, prod[i][0] | prod[i][1] << 1, prod[i] + 2, layout, bcase);
                    HPDL_EXPECT(case_setup(&c, &r));
                    first = (T *)hpdl_alloc(c.nc, sizeof(T));
                    HPDL_EXPECT(first != NULL);
                    failed += !case_check(&c, HPDL_GEMM_AUTO, tol, type);
                    memcpy(first, c.C, c.nc * sizeof(T));
                    failed += !case_check(&c, HPDL_GEMM_SPLITK, tol, type);
                    /* narrow products are splitk's (f64's are DMMA's): AUTO must have run it */
                    if (sizeof(T) != 8 && c.N <= 16 && memcmp(first, c.C, c.nc * sizeof(T)) != 0 && !failed++)
                        fprintf(stderr, "    %s AUTO %dx%dx%d: not splitk's result\n", type, c.M, c.N, c.K);
                    memcpy(first, c.C, c.nc * sizeof(T));
                    failed += !case_check(&c, HPDL_GEMM_SPLITK, tol, type);
                    if (memcmp(first, c.C, c.nc * sizeof(T)) != 0 && !failed++)
                        fprintf(stderr, "    %s splitk %dx%dx%d: two runs differ\n", type, c.M, c.N, c.K);
                    HPDL_FREE(first);
                    failed += !case_check(&c, HPDL_GEMM_WARPTILE, tol, type);
                    if (tensor_ok) failed += !case_check(&c, HPDL_GEMM_MMA, tol, type);
                    case_free(&c);
                }
    }
    HPDL_EXPECT(failed == 0);
}
static void test_gemm_mlp_f32(void) { check_mlp_type<float>("f32", 1e-5, 21); }
static void test_gemm_mlp_f64(void) { check_mlp_type<double>("f64", 1e-12, 22); }
static void test_gemm_mlp_f16(void) { check_mlp_type<hpdl_f16>("f16", 1e-2, 23); }
static void test_gemm_mlp_bf16(void) { check_mlp_type<hpdl_bf16>("bf16", 1e-2, 24); }

/* splitk on c twice against the f64 CPU GEMM; the second run must give the
   same bits (the slices add in a fixed order). Returns the failures. */
template <typename T> static int check_splitk_twice(gemm_case<T> *c, double tol, const char *type) {
    T *first = (T *)hpdl_alloc(c->nc, sizeof(T));
    int failed = !case_check(c, HPDL_GEMM_SPLITK, tol, type);
    HPDL_EXPECT(first != NULL);
    if (!first) return failed + 1;
    memcpy(first, c->C, c->nc * sizeof(T));
    failed += !case_check(c, HPDL_GEMM_SPLITK, tol, type);
    if (memcmp(first, c->C, c->nc * sizeof(T)) != 0) {
        fprintf(stderr, "    %s splitk %dx%dx%d: two runs differ\n", type, c->M, c->N, c->K);
        failed++;
    }
    HPDL_FREE(first);
    return failed;
}

/* splitk's narrow products with A MN-major (hpdl__gemm_narrow_mn): every
   width it carries (N <= 8, 12, 16), one slice and many (16-bit K <= 128:
   hpdl__gemm_narrow_mn_short, 5 to 128 k's), B in both
   layouts, aligned and unaligned A, and B's rows with no gap between them
   (ld N: the one-pass kernel reads such a B in 16-byte pieces), both betas,
   against the f64 CPU GEMM; a second run gives the same bits. */
template <typename T> static void check_narrow_mn_type(const char *type, double tol, uint64_t seed) {
    static const int rows[] = {67, 300}, cols[] = {3, 8, 13, 16}, depths[] = {5, 32, 128, 3000};
    hpdl_rng r;
    int i, j, k, tb, layout, failed = 0;
    if (!hpdl_cuda_available()) { hpdl_test__skipped = 1; fprintf(stderr, "    skipped: no GPU\n"); return; }
    hpdl_rng_seed(&r, seed);
    for (i = 0; i < HPDL_COUNT(rows); i++)
        for (j = 0; j < HPDL_COUNT(cols); j++)
            for (k = 0; k < HPDL_COUNT(depths); k++)
                for (tb = 0; tb < 2; tb++)
                    for (layout = 0; layout < 3; layout++) {
                        const int shape[3] = {rows[i], cols[j], depths[k]};
                        gemm_case<T> c;
                        case_init(&c, 1 | tb << 1, shape, layout > 0, (i + j + k + layout) % 2);
                        if (layout == 2) c.ldb = tb ? c.K : c.N; /* B's rows with no gap */
                        HPDL_EXPECT(case_setup(&c, &r));
                        failed += check_splitk_twice(&c, tol, type);
                        case_free(&c);
                    }
    HPDL_EXPECT(failed == 0);
}
static void test_gemm_narrow_mn(void) {
    check_narrow_mn_type<float>("f32", 1e-5, 31);
    check_narrow_mn_type<hpdl_f16>("f16", 1e-2, 32);
    check_narrow_mn_type<hpdl_bf16>("bf16", 1e-2, 33);
}

/* splitk's f32 narrow products of few rows with A K-contiguous, in a
   cluster (hpdl__gemm_narrow_cluster): runs of 32 rows cut short, 1 to 16
   columns, K from 512 to 2048 in 2 to 8 slices (some ending inside a
   thread's run), B in both layouts, aligned and unaligned A, both betas,
   against the f64 CPU GEMM; a second run gives the same bits. On a Hopper
   GPU the kernel itself must take them (else splitk would, unseen); it
   takes no other type. */
static void test_gemm_narrow_cluster(void) {
    static const int shapes[][3] = {{32, 10, 2048}, {1, 16, 512}, {37, 1, 1000}, {128, 13, 784}, {100, 10, 2047}};
    hpdl_rng r;
    int i, tb, layout, failed = 0;
    for (i = 0; i < HPDL_COUNT(shapes); i++) HPDL_EXPECT(hpdl__ncl_slices(shapes[i][0], shapes[i][1], shapes[i][2], 1) >= 2);
    HPDL_EXPECT(hpdl__ncl_slices(129, 10, 2048, 1) == 0 && hpdl__ncl_slices(32, 10, 2048, 0) == 0);
    HPDL_EXPECT(hpdl__ncl_slices(32, 17, 2048, 1) == 0 && hpdl__ncl_slices(32, 10, 511, 1) == 0);
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 51);
    for (i = 0; i < HPDL_COUNT(shapes); i++)
        for (tb = 0; tb < 2; tb++)
            for (layout = 0; layout < 2; layout++) {
                gemm_case<float> c;
                case_init(&c, tb << 1, shapes[i], layout, (i + tb + layout) % 2);
                HPDL_EXPECT(case_setup(&c, &r));
                failed += check_splitk_twice(&c, 1e-5, "f32");
                if (hopper_gpu() && i == 0 && tb == 0 && layout == 0) {
                    hpdl__gemm_args<float, float> g = hpdl__gemm_make_args(
                        c.ta, c.tb, c.M, c.N, c.K, (float)c.alpha, c.dA, c.lda, c.dB, c.ldb, (float)c.beta, c.dC, c.ldc, 4);
                    HPDL_EXPECT(hpdl__gemm_launch_narrow_cluster(g, (cudaStream_t)0) == HPDL_OK);
                }
                case_free(&c);
            }
    HPDL_EXPECT(failed == 0);
}

/* A device copy of n host values; NULL if the GPU has no room. */
template <typename T> static T *to_device(const T *x, size_t n) {
    T *d = NULL;
    if (cudaMalloc((void **)&d, n * sizeof(T)) != cudaSuccess) return NULL;
    HPDL_CUDA_CHECK(cudaMemcpy(d, x, n * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

/* One case of the short-K kernel with the MLP's backward epilogue: C = (A
   B^T) * act'(out) (A M x K, B N x K, out M x N) and db, C's column sums,
   against f64 sums of the same values, within tol of the terms' absolute
   sums; runs of rows for at most most_runs runs (1: one run, no parts). A
   second launch must give the same bits (the counts were set back to 0).
   Returns the failures. */
template <typename T>
static int check_shortk_delta(const char *type, const int shape[3], hpdl_activation act, int most_runs, double tol,
                              hpdl_rng *r) {
    typedef typename hpdl__dev<T>::type D;
    const int M = shape[0], N = shape[1], K = shape[2];
    T *a = (T *)hpdl_alloc((size_t)M * K, sizeof(T)), *b = (T *)hpdl_alloc((size_t)N * K, sizeof(T));
    T *out = (T *)hpdl_alloc((size_t)M * N, sizeof(T)), *c = (T *)hpdl_alloc((size_t)M * N, sizeof(T));
    T *db = (T *)hpdl_alloc(N, sizeof(T)), *first = (T *)hpdl_alloc((size_t)M * N + N, sizeof(T));
    double *a64 = (double *)hpdl_alloc((size_t)M * K, sizeof(double)), *b64 = (double *)hpdl_alloc((size_t)N * K, sizeof(double));
    double *sum = (double *)hpdl_alloc(N, sizeof(double)), *size = (double *)hpdl_alloc(N, sizeof(double));
    T *d_a, *d_b, *d_out, *d_c = NULL, *d_db = NULL;
    float *parts = NULL;
    unsigned *counts = NULL;
    int m, n, k, run, failed = 0;
    HPDL_EXPECT(a && b && out && c && db && first && a64 && b64 && sum && size);
    fill(r, a, a64, (size_t)M * K);
    fill(r, b, b64, (size_t)N * K);
    for (m = 0; m < M * N; m++) /* ReLU: half the mask off; sigmoid: outputs in (0, 1) */
        from_f64(act == HPDL_ACT_RELU ? hpdl_rng_uniform(r) - 0.5 : 0.05 + 0.9 * hpdl_rng_uniform(r), &out[m]);
    d_a = to_device(a, (size_t)M * K);
    d_b = to_device(b, (size_t)N * K);
    d_out = to_device(out, (size_t)M * N);
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d_c, (size_t)M * N * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&d_db, N * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&parts, (size_t)most_runs * N * sizeof(float)));
    HPDL_CUDA_CHECK(cudaMalloc((void **)&counts, (N + 127) / 128 * sizeof(unsigned)));
    HPDL_CUDA_CHECK(cudaMemset(counts, 0, (N + 127) / 128 * sizeof(unsigned)));
    HPDL_EXPECT(d_a && d_b && d_out);
    for (run = 0; run < 2; run++) {
        hpdl__gemm_args<D, float> g = hpdl__gemm_make_args(HPDL_NO_TRANS, HPDL_TRANS, M, N, K, 1.0f, (const D *)d_a, K,
                                                           (const D *)d_b, K, 0.0f, (D *)d_c, N, 4);
        hpdl__shortk_delta<D, float> d = {(const D *)d_out, hpdl__gemm_aligned(d_out, N, 4, sizeof(T)), act, (D *)d_db, most_runs > 1 ? parts : NULL, counts};
        HPDL_EXPECT(hpdl__gemm_launch_shortk_delta(g, d, most_runs, (cudaStream_t)0) == HPDL_OK);
        HPDL_CUDA_CHECK(cudaMemcpy(c, d_c, (size_t)M * N * sizeof(T), cudaMemcpyDeviceToHost));
        HPDL_CUDA_CHECK(cudaMemcpy(db, d_db, N * sizeof(T), cudaMemcpyDeviceToHost));
        if (run == 0) {
            memcpy(first, c, (size_t)M * N * sizeof(T));
            memcpy(first + (size_t)M * N, db, N * sizeof(T));
        } else if (memcmp(first, c, (size_t)M * N * sizeof(T)) != 0 || memcmp(first + (size_t)M * N, db, N * sizeof(T)) != 0) {
            fprintf(stderr, "    %s shortk delta %dx%dx%d: two runs differ\n", type, M, N, K);
            failed++;
        }
    }
    memset(sum, 0, N * sizeof(double));
    memset(size, 0, N * sizeof(double));
    for (m = 0; m < M; m++)
        for (n = 0; n < N; n++) {
            const double o = to_f64(out[(size_t)m * N + n]), grad = act == HPDL_ACT_RELU ? (o > 0 ? 1.0 : 0.0) : o * (1 - o);
            double v = 0, bound = 0;
            for (k = 0; k < K; k++) {
                v += a64[(size_t)m * K + k] * b64[(size_t)n * K + k];
                bound += fabs(a64[(size_t)m * K + k] * b64[(size_t)n * K + k]);
            }
            sum[n] += v * grad;
            size[n] += bound;
            if (fabs(to_f64(c[(size_t)m * N + n]) - v * grad) > tol * (bound + 1e-30)) failed++;
        }
    for (n = 0; n < N; n++)
        if (fabs(to_f64(db[n]) - sum[n]) > tol * (size[n] + fabs(sum[n]))) failed++;
    if (failed) fprintf(stderr, "    %s shortk delta %dx%dx%d act %d runs <= %d: %d wrong\n", type, M, N, K, (int)act, most_runs, failed);
    cudaFree(d_a); cudaFree(d_b); cudaFree(d_out); cudaFree(d_c); cudaFree(d_db); cudaFree(parts); cudaFree(counts);
    HPDL_FREE(a); HPDL_FREE(b); HPDL_FREE(out); HPDL_FREE(c); HPDL_FREE(db); HPDL_FREE(first);
    HPDL_FREE(a64); HPDL_FREE(b64); HPDL_FREE(sum); HPDL_FREE(size);
    return failed;
}

/* The short-K kernel's backward epilogue (hpdl__gemm_launch_shortk_delta):
   one run of rows and many, strips cut short, ReLU and sigmoid, f32 and
   f16; K past HPDL__SHORTK_MAX, beta != 0 and runs past HPDL__SHORTK_ROWS
   rows refused. */
static void test_gemm_shortk_delta(void) {
    static const int shapes[][3] = {{37, 300, 10}, {3000, 512, 10}, {1100, 130, 16}, {600, 2048, 3}};
    static const int most_runs[] = {1, 128, 12, 64};
    hpdl_rng r;
    int i, failed = 0;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 71);
    for (i = 0; i < HPDL_COUNT(shapes); i++) {
        const hpdl_activation act = i == 2 ? HPDL_ACT_SIGMOID : HPDL_ACT_RELU;
        failed += check_shortk_delta<float>("f32", shapes[i], act, most_runs[i], 1e-5, &r);
        failed += check_shortk_delta<hpdl_f16>("f16", shapes[i], act, most_runs[i], 1e-2, &r);
    }
    HPDL_EXPECT(failed == 0);
    {
        hpdl__gemm_args<float, float> g = hpdl__gemm_make_args(HPDL_NO_TRANS, HPDL_TRANS, 1100, 130, 17, 1.0f, (const float *)NULL,
                                                               17, (const float *)NULL, 17, 0.0f, (float *)NULL, 130, 4);
        hpdl__shortk_delta<float, float> d = {NULL, 0, HPDL_ACT_RELU, NULL, NULL, NULL};
        HPDL_EXPECT(hpdl__gemm_launch_shortk_delta(g, d, 64, (cudaStream_t)0) == HPDL_ERR_UNSUPPORTED); /* K 17 */
        g.K = 16;
        g.beta = 0.5f;
        HPDL_EXPECT(hpdl__gemm_launch_shortk_delta(g, d, 64, (cudaStream_t)0) == HPDL_ERR_UNSUPPORTED); /* beta */
        g.beta = 0.0f;
        HPDL_EXPECT(hpdl__gemm_launch_shortk_delta(g, d, 8, (cudaStream_t)0) == HPDL_ERR_UNSUPPORTED); /* 144 rows a run */
    }
}

/* splitk's 16-bit narrow products of many rows with A K-contiguous, on the
   tensor cores in one pass (hpdl__gemm_narrow_rows_tc): blocks of rows cut
   short, 1 to 16 columns, K ending inside a lane's 8 k's and inside a
   warp's run of 32, B in both layouts, aligned A (the kernel's) and
   unaligned (splitk's slices), both betas, against the f64 CPU GEMM; a
   second run gives the same bits. On a GPU with sm_80 code the kernel
   itself must take the aligned ones, and no product of fewer than
   HPDL__NRT_MIN_M rows or more than HPDL__NRT_MAX_K k's. */
template <typename T> static void check_narrow_rows_type(const char *type, uint64_t seed) {
    static const int shapes[][3] = {{3000, 10, 512}, {1025, 16, 520}, {600, 1, 1000}, {2048, 13, 1021}, {530, 10, 44}};
    hpdl_rng r;
    int i, tb, layout, failed = 0;
    if (!hpdl_cuda_available()) { hpdl_test__skipped = 1; fprintf(stderr, "    skipped: no GPU\n"); return; }
    hpdl_rng_seed(&r, seed);
    for (i = 0; i < HPDL_COUNT(shapes); i++)
        for (tb = 0; tb < 2; tb++)
            for (layout = 0; layout < 2; layout++) {
                gemm_case<T> c;
                case_init(&c, tb << 1, shapes[i], layout, (i + tb + layout) % 2);
                HPDL_EXPECT(case_setup(&c, &r));
                failed += check_splitk_twice(&c, 1e-2, type);
                if (tensor_gpu() && layout == 1) { /* aligned: the kernel's */
                    typedef typename hpdl__dev<T>::type D;
                    hpdl__gemm_args<D, float> g = hpdl__gemm_make_args(c.ta, c.tb, c.M, c.N, c.K, (float)c.alpha, (const D *)c.dA,
                                                                       c.lda, (const D *)c.dB, c.ldb, (float)c.beta, (D *)c.dC, c.ldc, 8);
                    HPDL_EXPECT(hpdl__gemm_launch_narrow_rows(g, (cudaStream_t)0) == HPDL_OK);
                    g.M = HPDL__NRT_MIN_M - 1;
                    HPDL_EXPECT(hpdl__gemm_launch_narrow_rows(g, (cudaStream_t)0) == HPDL_ERR_UNSUPPORTED);
                    g.M = c.M;
                    g.K = HPDL__NRT_MAX_K + 1;
                    HPDL_EXPECT(hpdl__gemm_launch_narrow_rows(g, (cudaStream_t)0) == HPDL_ERR_UNSUPPORTED);
                }
                case_free(&c);
            }
    HPDL_EXPECT(failed == 0);
}
static void test_gemm_narrow_rows(void) {
    check_narrow_rows_type<hpdl_f16>("f16", 61);
    check_narrow_rows_type<hpdl_bf16>("bf16", 62);
}

/* The splitk rung on the given shapes: all four operand layouts, aligned
   and unaligned, both betas (check_splitk_twice). */
template <typename T>
static void check_splitk_shapes(const char *type, double tol, uint64_t seed, const int (*shapes)[3], int count) {
    hpdl_rng r;
    int i, trans, layout, failed = 0;
    if (!hpdl_cuda_available()) { hpdl_test__skipped = 1; fprintf(stderr, "    skipped: no GPU\n"); return; }
    hpdl_rng_seed(&r, seed);
    for (i = 0; i < count; i++)
        for (trans = 0; trans < 4; trans++)
            for (layout = 0; layout < 2; layout++) {
                gemm_case<T> c;
                case_init(&c, trans, shapes[i], layout, (i + trans + layout) % 2);
                HPDL_EXPECT(case_setup(&c, &r));
                failed += check_splitk_twice(&c, tol, type);
                case_free(&c);
            }
    HPDL_EXPECT(failed == 0);
}

/* The short-K kernel (K <= 16, hpdl__gemm_shortk): runs of 8 to 128 rows,
   K from 3 to 16, column strips cut short. */
static void test_gemm_shortk(void) {
    static const int shapes[][3] = {{37, 300, 16}, {3000, 600, 10}, {1100, 2051, 7}, {5000, 257, 3}};
    check_splitk_shapes<float>("f32", 1e-5, 41, shapes, HPDL_COUNT(shapes));
    check_splitk_shapes<double>("f64", 1e-12, 42, shapes, HPDL_COUNT(shapes));
    check_splitk_shapes<hpdl_f16>("f16", 1e-2, 43, shapes, HPDL_COUNT(shapes));
    check_splitk_shapes<hpdl_bf16>("bf16", 1e-2, 44, shapes, HPDL_COUNT(shapes));
}

/* K split into 2 or 3 slices, fewer than HPDL__SPLITK_ADD_APART: the last
   slice of each tile adds them (the narrow, short and square tiles). */
static void test_gemm_splitk_few_slices(void) {
    static const int shapes[][3] = {{32, 10, 150}, {200, 10, 200}, {37, 130, 200}, {30, 100, 150}};
    int i, sms = 0;
    if (hpdl_cuda_available() && hpdl__sm_count(&sms) == HPDL_OK)
        for (i = 0; i < HPDL_COUNT(shapes); i++) {
            const int M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
            const int depth = hpdl__splitk_depth(M, N, K, hpdl__splitk_shape_for(M, N), 4, sms);
            const int slices = (K + depth - 1) / depth;
            HPDL_EXPECT(slices >= 2 && slices < HPDL__SPLITK_ADD_APART);
        }
    check_splitk_shapes<float>("f32", 1e-5, 49, shapes, HPDL_COUNT(shapes));
    check_splitk_shapes<hpdl_f16>("f16", 1e-2, 50, shapes, HPDL_COUNT(shapes));
}

/* K split into HPDL__SPLITK_ADD_APART slices or more, added by a kernel of
   their own: the narrow, short and square tiles. */
static void test_gemm_splitk_apart(void) {
    static const int shapes[][3] = {{32, 10, 2048}, {200, 10, 3000}, {37, 130, 4000}, {30, 100, 4000}};
    check_splitk_shapes<float>("f32", 1e-5, 45, shapes, HPDL_COUNT(shapes));
    check_splitk_shapes<double>("f64", 1e-12, 46, shapes, HPDL_COUNT(shapes));
    check_splitk_shapes<hpdl_f16>("f16", 1e-2, 47, shapes, HPDL_COUNT(shapes));
    check_splitk_shapes<hpdl_bf16>("bf16", 1e-2, 48, shapes, HPDL_COUNT(shapes));
}

/* The narrow MN-major kernel's slices (host logic): all of K, or whole
   rounds of k's no deeper than its shared memory holds, none empty, every
   slice's sums within the splitk workspace; 0 only where they would not
   fit it. */
static void test_gemm_narrow_plan(void) {
    static const int sizes[] = {1, 10, 64, 65, 512, 2048, 3000, 100000, 1000000, 2000000000};
    int i, k, nb, bad = 0, split = 0;
    for (i = 0; i < HPDL_COUNT(sizes); i++)
        for (k = 0; k < HPDL_COUNT(sizes); k++)
            for (nb = 8; nb <= 16; nb += 4) {
                const int M = sizes[i], K = sizes[k], depth = hpdl__narrow_depth(M, K, nb, 132);
                const int64_t tiles = (M + HPDL__NARROW_ROWS - 1) / HPDL__NARROW_ROWS;
                const int64_t slices = depth > 0 ? ((int64_t)K + depth - 1) / depth : 0;
                bad |= hpdl__narrow_smem_bytes(hpdl__narrow_most(nb), nb, 4) > (96 << 10);
                if (depth == K) {
                    bad |= K > hpdl__narrow_most(nb);
                } else if (depth == 0) {
                    bad |= tiles <= HPDL__SPLITK_COUNTERS &&
                           ((int64_t)K + hpdl__narrow_most(nb) - 1) / hpdl__narrow_most(nb) * tiles * HPDL__NARROW_ROWS * nb * 4 <=
                               (int64_t)HPDL__SPLITK_WS_BYTES;
                } else {
                    split++;
                    bad |= depth % HPDL__NARROW_STEP != 0 || depth > hpdl__narrow_most(nb) || depth > K ||
                           (slices - 1) * depth >= K || tiles > HPDL__SPLITK_COUNTERS ||
                           slices * tiles * HPDL__NARROW_ROWS * nb * 4 > (int64_t)HPDL__SPLITK_WS_BYTES;
                }
                if (bad) { fprintf(stderr, "    %dx%d (nb %d): depth %d wrong\n", M, K, nb, depth); return; }
            }
    HPDL_EXPECT(!bad && split > 0);
    HPDL_EXPECT(hpdl__narrow_depth(512, 3000, 12, 132) == 128);   /* 8 tiles, 24 slices */
    HPDL_EXPECT(hpdl__narrow_depth(2048, 3000, 12, 132) == 384);  /* 32 tiles, 8 slices */
    HPDL_EXPECT(hpdl__narrow_depth(512, 32, 12, 132) == 32);      /* one slice */
    HPDL_EXPECT(hpdl__narrow_depth(2048, 128, 16, 132) == 128);   /* two rounds: one slice */
    HPDL_EXPECT(hpdl__narrow_depth(512, 512, 16, 132) == 64);     /* 8 tiles, 8 slices */
}

/* AUTO's choice (host logic, no GPU needed) for the MLP's products at H 512
   and 2048, B 32 to 3000 (the rule measured by bench/gemm --mlp: see
   hpdl__gemm_auto_splitk), and the plan of the splitk rung's slices for
   many shapes: a multiple of 32 deep (or all of K), at most 64 slices,
   none empty, their sums within the workspace. */
static void test_gemm_auto_splitk(void) {
    static const int sizes[] = {1, 10, 16, 17, 32, 33, 100, 512, 784, 3000, 20000};
    int H, B, i, j, k, bad = 0, split = 0;
    for (H = 512; H <= 2048; H *= 4)
        for (B = 32; B <= 3000; B = B == 512 ? 3000 : B * 4) {
            int p[5][5];
            mlp_products(B, H, p);
            for (i = 1; i < 4; i++) { /* N = 10 and K = 10: always; f64 keeps DMMA */
                const int M = p[i][2], N = p[i][3], K = p[i][4];
                HPDL_EXPECT(hpdl__gemm_auto_splitk(M, N, K, 4) && hpdl__gemm_auto_splitk(M, N, K, 2) &&
                            !hpdl__gemm_auto_splitk(M, N, K, 8));
            }
        }
    HPDL_EXPECT(hpdl__gemm_auto_splitk(32, 512, 784, 4));       /* f32, small output, long K */
    HPDL_EXPECT(!hpdl__gemm_auto_splitk(32, 512, 784, 2));      /* f16: the Hopper rung */
    HPDL_EXPECT(hpdl__gemm_auto_splitk(784, 512, 3000, 4));
    HPDL_EXPECT(!hpdl__gemm_auto_splitk(784, 2048, 3000, 4));   /* 1.6 M outputs: warptile */
    HPDL_EXPECT(!hpdl__gemm_auto_splitk(784, 2048, 3000, 2));
    HPDL_EXPECT(hpdl__gemm_auto_splitk(512, 10, 3000, 2));      /* narrow */
    HPDL_EXPECT(hpdl__gemm_auto_splitk(3000, 2048, 10, 2) && hpdl__gemm_auto_splitk(3000, 2048, 16, 4)); /* short K */
    HPDL_EXPECT(!hpdl__gemm_auto_splitk(3000, 2048, 17, 2) && !hpdl__gemm_auto_splitk(3000, 2048, 17, 4));
    HPDL_EXPECT(!hpdl__gemm_auto_splitk(4096, 4096, 4096, 4));
    HPDL_EXPECT(!hpdl__gemm_auto_splitk(4096, 4096, 4096, 2));
    HPDL_EXPECT(!hpdl__gemm_auto_splitk(32, 10, 784, 8)); /* f64 keeps DMMA */
    /* f32: 3xTF32 where its 128 x 64 tiles times its K slices fill 3/4 of the SMs, K >= 64, N > 16 */
    HPDL_EXPECT(hpdl__gemm_auto_tf32x3(512, 2048, 784, 132));   /* 128 tiles */
    HPDL_EXPECT(hpdl__gemm_auto_tf32x3(784, 2048, 128, 132));   /* 224 tiles */
    HPDL_EXPECT(hpdl__gemm_auto_tf32x3(3000, 512, 784, 132));   /* 192 tiles */
    HPDL_EXPECT(hpdl__gemm_auto_tf32x3(784, 512, 3000, 132));   /* 56 tiles, 4 slices */
    HPDL_EXPECT(hpdl__gemm_auto_tf32x3(784, 512, 128, 132));    /* 56 tiles: 2/5 of the SMs */
    HPDL_EXPECT(!hpdl__gemm_auto_tf32x3(784, 2048, 32, 132));   /* K = 32 */
    HPDL_EXPECT(!hpdl__gemm_auto_tf32x3(512, 10, 3000, 132));   /* narrow: splitk */
    HPDL_EXPECT(!hpdl__gemm_auto_tf32x3(128, 512, 784, 132));   /* 8 tiles, 6 slices */
    HPDL_EXPECT(!hpdl__gemm_auto_tf32x3(32, 2048, 784, 132));   /* M = 32: a quarter of each tile */
    HPDL_EXPECT(hpdl__gemm_auto_tf32x3(4096, 4096, 4096, 132));
    HPDL_EXPECT(hpdl__tf32x3_slices(784, 512, 3000, 132) == 4 && hpdl__tf32x3_slices(512, 512, 784, 132) == 6 &&
                hpdl__tf32x3_slices(512, 2048, 784, 132) == 1 && /* 128 tiles: 2 slices would not pay */
                hpdl__tf32x3_slices(784, 2048, 512, 132) == 1 && hpdl__tf32x3_slices(784, 512, 128, 132) == 1);
    /* its 64 x 64 tiles: less than a wave of 128 x 64 ones, and waves about as full */
    HPDL_EXPECT(hpdl__tf32x3_small_tiles(784, 512, 128, 132));    /* 104 blocks against 56 */
    HPDL_EXPECT(hpdl__tf32x3_small_tiles(784, 512, 3000, 132));   /* waves 0.99 full against 0.85 */
    HPDL_EXPECT(hpdl__tf32x3_small_tiles(3000, 512, 784, 132));   /* 0.71 against 0.73 */
    HPDL_EXPECT(!hpdl__tf32x3_small_tiles(784, 512, 512, 132));   /* 0.79 against 0.85 */
    HPDL_EXPECT(!hpdl__tf32x3_small_tiles(784, 2048, 3000, 132));
    HPDL_EXPECT(!hpdl__tf32x3_small_tiles(3000, 2048, 784, 132)); /* three waves either way */
    HPDL_EXPECT(!hpdl__tf32x3_small_tiles(4096, 4096, 4096, 132));
    HPDL_EXPECT(hpdl__tf32x3_small_slices(784, 512, 3000, 132) == 5);
    /* the Hopper rung for 16-bit products AUTO does not split */
    HPDL_EXPECT(hpdl__gemm_auto_hopper(128, 2048, 784, 1, 132) == HPDL_GEMM_WGMMA);            /* 8 tiles */
    HPDL_EXPECT(hpdl__gemm_auto_hopper(512, 2048, 784, 1, 132) == HPDL_GEMM_WGMMA);            /* 32 tiles */
    HPDL_EXPECT(hpdl__gemm_auto_hopper(784, 2048, 128, 1, 132) == HPDL_GEMM_WGMMA);            /* 56 tiles */
    HPDL_EXPECT(hpdl__gemm_auto_hopper(1152, 2048, 784, 1, 132) == HPDL_GEMM_WGMMA_PERSISTENT); /* 72 tiles */
    HPDL_EXPECT(hpdl__gemm_auto_hopper(784, 512, 3000, 1, 132) == HPDL_GEMM_WGMMA);            /* long K, split */
    HPDL_EXPECT(hpdl__gemm_auto_hopper(784, 2048, 3000, 1, 132) == HPDL_GEMM_WGMMA);            /* 104 own blocks */
    HPDL_EXPECT(hpdl__gemm_auto_hopper(640, 2048, 3000, 1, 132) == HPDL_GEMM_WGMMA_PERSISTENT);  /* 80 own blocks: stream-K */
    HPDL_EXPECT(hpdl__gemm_auto_hopper(4096, 4096, 4096, 1, 132) == HPDL_GEMM_WGMMA_PERSISTENT);
    /* 128 x 192 tiles where they fill whole waves and 128 x 256 ones do not, A K-major only */
    HPDL_EXPECT(hpdl__gemm_auto_hopper(3000, 2048, 784, 1, 132) == HPDL_GEMM_WGMMA_WS);   /* 264 = 2 x 132 tiles */
    HPDL_EXPECT(hpdl__gemm_auto_hopper(3000, 2048, 784, 0, 132) == HPDL_GEMM_WGMMA_PERSISTENT);
    HPDL_EXPECT(hpdl__wg_ws_narrow(1536, 2112, 132) && !hpdl__wg_ws_narrow(2048, 2048, 132) && /* 176 tiles */
                !hpdl__wg_ws_narrow(6144, 4224, 132) && /* 8 waves */
                !hpdl__wg_ws_narrow(1536, 1536, 132) && /* 96 tiles of 192; 72 of 256 */
                !hpdl__wg_ws_narrow(25088, 256, 132));  /* 3 waves of 192 + 64 against 2 of 256 */
    HPDL_EXPECT(hpdl__splitk_shape_for(3000, 10) == HPDL__SPLITK_NARROW && hpdl__splitk_shape_for(32, 512) == HPDL__SPLITK_SHORT &&
                hpdl__splitk_shape_for(784, 512) == HPDL__SPLITK_SQUARE);
    for (i = 0; i < HPDL_COUNT(sizes); i++)
        for (j = 0; j < HPDL_COUNT(sizes); j++)
            for (k = 0; k < HPDL_COUNT(sizes); k++) {
                int M = sizes[i], N = sizes[j], K = sizes[k], shape = hpdl__splitk_shape_for(M, N), acc;
                for (acc = 4; acc <= 8; acc += 4) {
                    int depth = hpdl__splitk_depth(M, N, K, shape, acc, 132);
                    int64_t slices = depth > 0 ? (K + depth - 1) / depth : 1;
                    int64_t tiles = (int64_t)((M + hpdl__splitk_bm(shape) - 1) / hpdl__splitk_bm(shape)) *
                                    ((N + hpdl__splitk_bn(shape) - 1) / hpdl__splitk_bn(shape));
                    if (depth == K) continue;
                    split++;
                    bad |= depth <= 0 || depth % 32 != 0 || depth > K || slices > 64 || (slices - 1) * depth >= K ||
                           tiles > HPDL__SPLITK_COUNTERS ||
                           slices * tiles * hpdl__splitk_bm(shape) * hpdl__splitk_bn(shape) * acc > (int64_t)HPDL__SPLITK_WS_BYTES;
                    if (bad) { fprintf(stderr, "    %dx%dx%d (acc %d): depth %d wrong\n", M, N, K, acc, depth); return; }
                }
            }
    HPDL_EXPECT(!bad);
    HPDL_EXPECT(split > 0);
}

/* The one-tile-a-block Hopper rung's slices of K (hpdl__wg_split_slices):
   about a block per SM where its 64 x 256 tiles leave SMs idle and the
   k-steps saved outlast adding the slices, slices of 2 or more k-steps of
   64, none empty, every slice's tiles within the splitk workspace. */
static void test_gemm_wgmma_split_slices(void) {
    static const int sizes[] = {1, 100, 128, 512, 784, 2048, 3000, 20000};
    int i, j, k;
    HPDL_EXPECT(hpdl__wg_split_slices(32, 512, 784, 64, 132) == 5);   /* 2 tiles, 13 k-steps: 3, 3, 3, 3, 1 */
    HPDL_EXPECT(hpdl__wg_split_slices(128, 512, 784, 64, 132) == 5);  /* 4 tiles */
    HPDL_EXPECT(hpdl__wg_split_slices(512, 2048, 784, 64, 132) == 1); /* 64 tiles: 6 k-steps saved, 8 MB to add */
    HPDL_EXPECT(hpdl__wg_split_slices(784, 512, 512, 64, 132) == 1);  /* 26 tiles, 8 k-steps */
    HPDL_EXPECT(hpdl__wg_split_slices(784, 512, 3000, 64, 132) == 5); /* 47 k-steps: 37 saved */
    HPDL_EXPECT(hpdl__wg_split_slices(784, 2048, 128, 64, 132) == 1); /* 104 tiles fill the GPU */
    HPDL_EXPECT(hpdl__wg_split_slices(3000, 512, 784, 64, 132) == 1); /* 94 tiles */
    HPDL_EXPECT(hpdl__wg_split_slices(64, 256, 64, 64, 132) == 1);    /* one k-step */
    for (i = 0; i < HPDL_COUNT(sizes); i++)
        for (j = 0; j < HPDL_COUNT(sizes); j++)
            for (k = 0; k < HPDL_COUNT(sizes); k++) {
                int M = sizes[i], N = sizes[j], K = sizes[k], n = hpdl__wg_split_slices(M, N, K, 64, 132);
                int steps = (K + 63) / 64, chunk = (steps + n - 1) / n;
                HPDL_EXPECT(n >= 1);
                if (n > 1)
                    HPDL_EXPECT((n - 1) * chunk < steps && chunk >= HPDL__WG_SPLIT_MIN_STEPS &&
                                (steps - chunk - 3) * HPDL__WG_SPLIT_STEP_BYTES >
                                    (int64_t)n * ((M + 63) / 64) * ((N + 255) / 256) * 64 * 256 * 4 &&
                                (int64_t)n * ((M + 63) / 64) * ((N + 255) / 256) * 64 * 256 * 4 <=
                                    (int64_t)HPDL__SPLITK_WS_BYTES);
            }
}

/* The warp-specialized rung's slices of K (hpdl__wg_ws_slices): where its
   128 x 256 tiles fill under half of the SMs, about a block an SM, at most
   8 slices of at least 8 k-steps, none empty. */
static void test_gemm_ws_slices(void) {
    int M, N, steps;
    HPDL_EXPECT(hpdl__wg_ws_slices(2048, 512, 98, 132) == 4);   /* 32 tiles: 128 blocks of 25 or 23 k-steps */
    HPDL_EXPECT(hpdl__wg_ws_slices(256, 1024, 392, 132) == 8);  /* 8 tiles: at most 8 slices */
    HPDL_EXPECT(hpdl__wg_ws_slices(784, 512, 47, 132) == 5);    /* 14 tiles, 9 wanted: 8-step slices, 5 of them */
    HPDL_EXPECT(hpdl__wg_ws_slices(784, 2048, 47, 132) == 2);   /* 56 tiles */
    HPDL_EXPECT(hpdl__wg_ws_slices(784, 2048, 8, 132) == 1);    /* 8 k-steps: one slice */
    HPDL_EXPECT(hpdl__wg_ws_slices(1024, 4096, 512, 132) == 1); /* 128 tiles: more than half */
    for (M = 1; M <= 4096; M *= 4)
        for (N = 1; N <= 4096; N *= 4)
            for (steps = 1; steps <= 1000; steps = steps * 3 + 1) {
                const int n = hpdl__wg_ws_slices(M, N, steps, 132), chunk = (steps + n - 1) / n;
                HPDL_EXPECT(n >= 1 && n <= HPDL__WG_MAX_SLICE_CLUSTER);
                if (n > 1) HPDL_EXPECT((n - 1) * chunk < steps && chunk >= 8 && (int64_t)n * ((M + 127) / 128) * ((N + 255) / 256) <= 132);
            }
}

/* Which products the thin Hopper kernel takes, and its rows a block (host
   logic; the kernel itself: test_gemm_hopper_thin). */
static void test_gemm_wgmma_thin_rule(void) {
    HPDL_EXPECT(hpdl__wg_thin_rows(32, 512, 0, 132) == 8 && hpdl__wg_thin_takes(32, 512, 784, 0, 132)); /* 32 blocks */
    HPDL_EXPECT(hpdl__wg_thin_rows(128, 2048, 0, 132) == 32); /* 128 blocks */
    HPDL_EXPECT(hpdl__wg_thin_rows(512, 2048, 0, 132) == 128 && hpdl__wg_thin_takes(512, 2048, 784, 0, 132));
    HPDL_EXPECT(!hpdl__wg_thin_takes(3000, 512, 784, 0, 132)); /* more than 512 rows, A's K contiguous */
    /* A MN-major (an MLP's weight gradient, 784 rows): one wave of 64-row blocks, all of K in 13 stages */
    HPDL_EXPECT(hpdl__wg_thin_rows(784, 512, 1, 132) == 64 && hpdl__wg_thin_takes(784, 512, 512, 1, 132));
    HPDL_EXPECT(!hpdl__wg_thin_takes(784, 512, 3000, 1, 132));  /* 47 k-steps: the split */
    HPDL_EXPECT(!hpdl__wg_thin_takes(784, 2048, 128, 1, 132));  /* 224 blocks of 128 rows */
    HPDL_EXPECT(hpdl__wg_thin_rows(700, 1024, 1, 132) == 128 && hpdl__wg_thin_takes(700, 1024, 300, 1, 132));
}

/* The warptile rung's split of K (host logic): none where its tiles fill
   the GPU or K is short, about two blocks an SM for f32 (one for f64),
   at least 3 slices of at least 16 steps, all slices' sums within the
   workspace. */
static void test_gemm_warptile_slices(void) {
    static const int sizes[] = {1, 100, 128, 512, 784, 2048, 3000, 20000, 100000};
    int i, j, k, e;
    HPDL_EXPECT(hpdl__warptile_slices(512, 2048, 784, 4, 132) == 4);   /* 64 tiles */
    HPDL_EXPECT(hpdl__warptile_slices(784, 512, 512, 4, 132) == 4);    /* 28 tiles, K: 4 slices */
    HPDL_EXPECT(hpdl__warptile_slices(3000, 512, 784, 4, 132) == 1);   /* 96 tiles: 2 slices would not pay */
    HPDL_EXPECT(hpdl__warptile_slices(784, 2048, 3000, 4, 132) == 1);  /* 112 tiles */
    HPDL_EXPECT(hpdl__warptile_slices(784, 2048, 3000, 8, 132) == 1);  /* f64: one block an SM */
    HPDL_EXPECT(hpdl__warptile_slices(3000, 2048, 784, 4, 132) == 1);  /* 384 tiles fill the GPU */
    HPDL_EXPECT(hpdl__warptile_slices(784, 2048, 128, 4, 132) == 1);   /* K: one slice of 16 steps */
    HPDL_EXPECT(hpdl__warptile_slices(128, 128, 100000, 4, 132) == 256); /* the workspace: 256 x 64 KiB */
    for (i = 0; i < HPDL_COUNT(sizes); i++)
        for (j = 0; j < HPDL_COUNT(sizes); j++)
            for (k = 0; k < HPDL_COUNT(sizes); k++)
                for (e = 4; e <= 8; e += 4) {
                    int M = sizes[i], N = sizes[j], K = sizes[k], n = hpdl__warptile_slices(M, N, K, e, 132);
                    HPDL_EXPECT(n >= 1);
                    if (n > 1)
                        HPDL_EXPECT(n >= 3 && K / n >= 16 * HPDL__WARPTILE_BK &&
                                    (int64_t)n * M * N * e <= (int64_t)HPDL__SPLITK_WS_BYTES);
                }
}

/* splitk inside a captured graph, as the MLP's training step runs it: on a
   stream that already has its workspace the graph splits K and gives the
   eager run's bits, replayed twice; on a fresh stream (no workspace can be
   made during capture) it runs unsplit and is still right. */
static void test_gemm_splitk_graph(void) {
    const int M = 130, N = 10, K = 1000; /* dW1 = A1^T D1 at B = 1000: 16 slices */
    gemm_case<float> c;
    hpdl_rng r;
    float *eager;
    cudaStream_t streams[2]; /* both made first: a fresh stream must not reuse the handle of the first */
    int fresh;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 25);
    memset(&c, 0, sizeof c);
    c.ta = HPDL_TRANS; c.tb = HPDL_NO_TRANS;
    c.M = M; c.N = N; c.K = K; c.lda = M; c.ldb = N; c.ldc = N;
    c.alpha = 1.0; c.beta = 0.0;
    HPDL_EXPECT(case_setup(&c, &r));
    eager = (float *)hpdl_alloc(c.nc, sizeof(float));
    HPDL_EXPECT(eager != NULL);
    for (fresh = 0; fresh < 2; fresh++) HPDL_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[fresh], cudaStreamNonBlocking));
    for (fresh = 0; fresh < 2; fresh++) {
        cudaStream_t st = streams[fresh];
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        int i, j, bad = 0;
        if (!fresh) {
            HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(HPDL_GEMM_SPLITK, c.ta, c.tb, M, N, K, 1, c.dA, c.lda, c.dB, c.ldb, 0, c.dC,
                                                c.ldc, st) == HPDL_OK);
            HPDL_CUDA_CHECK(cudaStreamSynchronize(st));
            HPDL_CUDA_CHECK(cudaMemcpy(eager, c.dC, c.nc * sizeof(float), cudaMemcpyDeviceToHost));
        }
        HPDL_CHECK(hpdl_cuda_poison(c.dC, c.nc * sizeof(float)));
        HPDL_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(HPDL_GEMM_SPLITK, c.ta, c.tb, M, N, K, 1, c.dA, c.lda, c.dB, c.ldb, 0, c.dC,
                                            c.ldc, st) == HPDL_OK);
        HPDL_CUDA_CHECK(cudaStreamEndCapture(st, &graph));
        HPDL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        for (i = 0; i < 2; i++) HPDL_CUDA_CHECK(cudaGraphLaunch(exec, st));
        HPDL_CUDA_CHECK(cudaStreamSynchronize(st));
        HPDL_CUDA_CHECK(cudaMemcpy(c.C, c.dC, c.nc * sizeof(float), cudaMemcpyDeviceToHost));
        if (!fresh) HPDL_EXPECT(memcmp(eager, c.C, c.nc * sizeof(float)) == 0);
        for (i = 0; i < M; i++)
            for (j = 0; j < N; j++)
                bad += !(fabs((double)c.C[i * N + j] - c.ref[i * N + j]) <= 1e-5 * c.scale[i * N + j]);
        HPDL_EXPECT(bad == 0);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
    }
    for (fresh = 0; fresh < 2; fresh++) cudaStreamDestroy(streams[fresh]);
    HPDL_FREE(eager);
    case_free(&c);
}

/* Bad arguments: HPDL_ERR_INVALID and C untouched; a rung a type lacks: HPDL_ERR_UNSUPPORTED. */
static void test_gemm_bad_args(void) {
    const int M = 8, N = 8, K = 8;
    float *dA, *dB, *dC, host[M * N], after[M * N];
    hpdl_f16 *hA, *hC;
    hpdl_rng r;
    int i;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    hpdl_rng_seed(&r, 5);
    for (i = 0; i < M * N; i++) host[i] = (float)hpdl_rng_uniform(&r) + 0.5f;
    HPDL_CUDA_CHECK(cudaMalloc(&dA, sizeof host));
    HPDL_CUDA_CHECK(cudaMalloc(&dB, sizeof host));
    HPDL_CUDA_CHECK(cudaMalloc(&dC, sizeof host));
    HPDL_CUDA_CHECK(cudaMemcpy(dA, host, sizeof host, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dB, host, sizeof host, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dC, host, sizeof host, cudaMemcpyHostToDevice));
    for (i = 0; i < HPDL_COUNT(k_algos); i++) {
        hpdl_gemm_algo al = k_algos[i];
        const hpdl_transpose N_ = HPDL_NO_TRANS, T_ = HPDL_TRANS;
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(al, N_, N_, -1, N, K, 1, dA, K, dB, N, 0, dC, N, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(al, N_, N_, M, -1, K, 1, dA, K, dB, N, 0, dC, N, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(al, N_, N_, M, N, -1, 1, dA, K, dB, N, 0, dC, N, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(al, N_, N_, M, N, K, 1, dA, K - 1, dB, N, 0, dC, N, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(al, T_, N_, M + 1, N, K, 1, dA, M, dB, N, 0, dC, N + 1, 0) ==
                    HPDL_ERR_INVALID); /* A^T stored K x (M+1) needs lda >= M+1 */
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(al, N_, N_, M, N, K, 1, dA, K, dB, N - 1, 0, dC, N, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(al, N_, T_, M, N, K + 1, 1, dA, K + 1, dB, K, 0, dC, N, 0) ==
                    HPDL_ERR_INVALID); /* B^T stored N x (K+1) needs ldb >= K+1 */
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(al, N_, N_, M, N, K, 1, dA, K, dB, N, 0, dC, N - 1, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(al, N_, N_, M, N, K, 1, NULL, K, dB, N, 0, dC, N, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(al, N_, N_, M, N, K, 1, dA, K, NULL, N, 0, dC, N, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(al, N_, N_, M, N, K, 1, dA, K, dB, N, 0, NULL, N, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(al, (hpdl_transpose)7, N_, M, N, K, 1, dA, K, dB, N, 0, dC, N, 0) ==
                    HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f64(al, N_, N_, M, N, K, 1, (double *)dA, K - 1, (double *)dB, N, 0,
                                            (double *)dC, N / 2, 0) == HPDL_ERR_INVALID);
        hA = (hpdl_f16 *)dA;
        hC = (hpdl_f16 *)dC;
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f16(al, N_, N_, M, N, K, 1, hA, K, hA, N, 0, hC, N - 1, 0) == HPDL_ERR_INVALID);
        HPDL_EXPECT(hpdl_cuda_gemm_algo_bf16(al, N_, N_, M, -2, K, 1, (hpdl_bf16 *)dA, K, (hpdl_bf16 *)dB, N, 0,
                                             (hpdl_bf16 *)dC, N, 0) == HPDL_ERR_INVALID);
    }
    HPDL_EXPECT(hpdl_cuda_gemm_algo_f32((hpdl_gemm_algo)42, HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K, 1, dA, K, dB, N, 0, dC,
                                        N, 0) == HPDL_ERR_INVALID);
    /* a rung the type lacks is unsupported whatever the shape, an empty one too */
    for (i = 0; i < HPDL_COUNT(k_algos); i++) {
        if (!is_hopper_rung(k_algos[i])) continue;
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f64(k_algos[i], HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K, 1, (double *)dA, K,
                                            (double *)dB, N, 0, (double *)dC, N, 0) == HPDL_ERR_UNSUPPORTED);
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f64(k_algos[i], HPDL_NO_TRANS, HPDL_NO_TRANS, 0, N, K, 1, (double *)dA, K,
                                            (double *)dB, N, 0, (double *)dC, N, 0) == HPDL_ERR_UNSUPPORTED);
    }
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    HPDL_CUDA_CHECK(cudaMemcpy(after, dC, sizeof after, cudaMemcpyDeviceToHost));
    HPDL_EXPECT(memcmp(host, after, sizeof host) == 0);
    /* empty products are fine and write nothing; K = 0 scales C by beta */
    HPDL_EXPECT(hpdl_cuda_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, 0, N, K, 1, NULL, K, dB, N, 0, dC, N, 0) == HPDL_OK);
    for (i = 0; i < HPDL_COUNT(k_algos); i++) {
        if (k_algos[i] == HPDL_GEMM_MMA || is_hopper_rung(k_algos[i])) continue; /* sm_80+: test_gemm_mma_available */
        HPDL_CUDA_CHECK(cudaMemcpy(dC, host, sizeof host, cudaMemcpyHostToDevice));
        HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(k_algos[i], HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, 0, 1, dA, 1, dB, N, 2.0f, dC,
                                            N, 0) == HPDL_OK);
        HPDL_CUDA_CHECK(cudaMemcpy(after, dC, sizeof after, cudaMemcpyDeviceToHost));
        HPDL_EXPECT(after[5] == 2.0f * host[5] && after[M * N - 1] == 2.0f * host[M * N - 1]);
    }
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

/* The tensor-core rungs exist on sm_80+ (f64 DMMA, f16/bf16 mma.sync, f32
   3xTF32) and run as asked; K = 0 scales C by beta. */
static void test_gemm_mma_available(void) {
    cudaDeviceProp p;
    float c[16], *f;
    double *d;
    int i;
    if (!hpdl_cuda_available()) HPDL_SKIP("no GPU");
    HPDL_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
    if (p.major < 8) HPDL_SKIP("tensor-core rungs need sm_80+");
    HPDL_CUDA_CHECK(cudaMalloc(&d, 64 * sizeof(double)));
    HPDL_EXPECT(hpdl_cuda_gemm_algo_f64(HPDL_GEMM_MMA, HPDL_NO_TRANS, HPDL_NO_TRANS, 4, 4, 4, 1, d, 4, d + 16, 4, 0,
                                        d + 32, 4, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_cuda_gemm_algo_f16(HPDL_GEMM_MMA, HPDL_NO_TRANS, HPDL_NO_TRANS, 4, 4, 4, 1, (hpdl_f16 *)d, 4,
                                        (hpdl_f16 *)(d + 16), 4, 0, (hpdl_f16 *)(d + 32), 4, 0) == HPDL_OK);
    f = (float *)d;
    for (i = 0; i < 16; i++) c[i] = (float)i - 3.5f;
    HPDL_CUDA_CHECK(cudaMemcpy(f + 32, c, sizeof c, cudaMemcpyHostToDevice));
    HPDL_EXPECT(hpdl_cuda_gemm_algo_f32(HPDL_GEMM_MMA, HPDL_NO_TRANS, HPDL_NO_TRANS, 4, 4, 0, 1, f, 4, f + 16, 4, 2.0f,
                                        f + 32, 4, 0) == HPDL_OK);
    HPDL_CUDA_CHECK(cudaMemcpy(c, f + 32, sizeof c, cudaMemcpyDeviceToHost));
    for (i = 0; i < 16; i++) HPDL_EXPECT(c[i] == 2.0f * ((float)i - 3.5f));
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    cudaFree(d);
}

static void test_gemm_algo_names(void) {
    HPDL_EXPECT(strcmp(hpdl_gemm_algo_name(HPDL_GEMM_WARPTILE), "warptile") == 0);
    HPDL_EXPECT(strcmp(hpdl_gemm_algo_name(HPDL_GEMM_CUBLAS), "cublas") == 0);
    HPDL_EXPECT(strcmp(hpdl_gemm_algo_name((hpdl_gemm_algo)99), "unknown") == 0);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {HPDL_TEST(test_gemm_algo_names), HPDL_TEST(test_gemm_bad_args),
                                      HPDL_TEST(test_gemm_mma_available), HPDL_TEST(test_gemm_f32),
                                      HPDL_TEST(test_gemm_f64),          HPDL_TEST(test_gemm_f16),
                                      HPDL_TEST(test_gemm_bf16),         HPDL_TEST(test_gemm_hopper_small), HPDL_TEST(test_gemm_mma_whole_tiles),
                                      HPDL_TEST(test_gemm_hopper_many_tiles), HPDL_TEST(test_gemm_hopper_waves),
                                      HPDL_TEST(test_gemm_hopper_narrow_tiles),
                                      HPDL_TEST(test_gemm_stream_k_schedule), HPDL_TEST(test_gemm_hopper_stream_k),
                                      HPDL_TEST(test_gemm_hopper_stream_k_few_tiles),
                                      HPDL_TEST(test_gemm_hopper_split_k), HPDL_TEST(test_gemm_hopper_split_in_graph),
                                      HPDL_TEST(test_gemm_hopper_thin), HPDL_TEST(test_gemm_bias_act),
                                      HPDL_TEST(test_gemm_auto_splitk),  HPDL_TEST(test_gemm_warptile_slices),
                                      HPDL_TEST(test_gemm_wgmma_split_slices), HPDL_TEST(test_gemm_ws_slices), HPDL_TEST(test_gemm_wgmma_thin_rule), HPDL_TEST(test_gemm_mlp_f32),
                                      HPDL_TEST(test_gemm_mlp_f64),      HPDL_TEST(test_gemm_mlp_f16),
                                      HPDL_TEST(test_gemm_mlp_bf16),     HPDL_TEST(test_gemm_narrow_mn),
                                      HPDL_TEST(test_gemm_shortk),       HPDL_TEST(test_gemm_splitk_apart),
                                      HPDL_TEST(test_gemm_narrow_cluster),
                                      HPDL_TEST(test_gemm_splitk_few_slices),
                                      HPDL_TEST(test_gemm_narrow_plan),  HPDL_TEST(test_gemm_splitk_graph),
                                      HPDL_TEST(test_gemm_narrow_rows),  HPDL_TEST(test_gemm_shortk_delta)};
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
