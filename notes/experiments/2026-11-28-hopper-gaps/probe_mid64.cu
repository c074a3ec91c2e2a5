/* Built with bn64.diff applied to the header (a 64-wide wgmma for the warp-specialized kernel). */
/* The warp-specialized Hopper kernel with 128 x BN tiles narrower than 256
   (BN 64, 128 or 192, the first two also in pairs sharing A along N, or B
   along M), one tile a block, on the MLP's mid-size f16 products,
   two squares and three shapes whose 192-wide tiles fill whole waves on
   132 SMs, against the persistent rung, AUTO and cuBLAS in turns (L2
   flushed); each variant's result first checked against cuBLAS's on random
   operands. (The first run also had clusters of 2 and 4 sharing an
   operand: slower everywhere; device3.log.) */
#include "hpdl_cuda.cuh"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef hpdl__gemm_args<__half, float> args;
struct ctx { const char *name; hpdl__wg_launch l; hpdl_gemm_algo algo; int ta, M, N, K; __half *A, *B, *C; };
static void run(void *p, cudaStream_t s) {
    ctx *c = (ctx *)p;
    const int lda = c->ta ? c->M : c->K;
    hpdl_status st;
    if (c->l.kernel)
        st = hpdl__gemm_run_wgmma(c->l, hpdl__gemm_make_args(c->ta ? HPDL_TRANS : HPDL_NO_TRANS, HPDL_NO_TRANS, c->M,
                                                             c->N, c->K, 1.0f, (const __half *)c->A, lda,
                                                             (const __half *)c->B, c->N, 0.0f, c->C, c->N, 8), s);
    else
        st = hpdl_cuda_gemm_algo(c->algo, c->ta ? HPDL_TRANS : HPDL_NO_TRANS, HPDL_NO_TRANS, c->M, c->N, c->K, 1, c->A,
                                 lda, c->B, c->N, 0, c->C, c->N, s);
    if (st != HPDL_OK) { fprintf(stderr, "%s: %s\n", c->name, hpdl_status_string(st)); exit(1); }
}
static void fill(__half *d, size_t n, unsigned seed) {
    __half *h = (__half *)malloc(n * sizeof(__half));
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = __float2half((float)(seed >> 8) / (float)(1u << 23) - 1.0f);
    }
    HPDL_CUDA_CHECK(cudaMemcpy(d, h, n * sizeof(__half), cudaMemcpyHostToDevice));
    free(h);
}
/* x's largest difference from the reference r over r's largest value. */
static double check(ctx *x, ctx *r) {
    const size_t n = (size_t)x->M * x->N;
    __half *hx = (__half *)malloc(n * 2), *hr = (__half *)malloc(n * 2);
    double diff = 0, top = 0;
    run(r, 0);
    HPDL_CUDA_CHECK(cudaMemcpy(hr, r->C, n * 2, cudaMemcpyDeviceToHost));
    HPDL_CUDA_CHECK(cudaMemset(x->C, 0xFF, n * 2));
    run(x, 0);
    HPDL_CUDA_CHECK(cudaMemcpy(hx, x->C, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        double a = __half2float(hx[i]), b = __half2float(hr[i]);
        double e = a == a ? fabs(a - b) : 1e30;
        if (e > diff) diff = e;
        if (fabs(b) > top) top = fabs(b);
    }
    free(hx); free(hr);
    return diff / top;
}
template <bool AMN, int CM, int CN, int BN> static hpdl__wg_launch mid() {
    hpdl__wg_launch l = {(const void *)hpdl__gemm_wgmma_ws<__half, args, AMN, true, false, CM, CN, true, BN>, 384, 128,
                         CM, CN, 0, 1, NULL, BN};
    return l;
}
template <bool AMN> static int variants(ctx *c) {
    int n = 0;
    c[n].name = "bn64"; c[n++].l = mid<AMN, 1, 1, 64>();
    c[n].name = "bn64_cn2"; c[n++].l = mid<AMN, 1, 2, 64>();
    c[n].name = "bn64_cm2"; c[n++].l = mid<AMN, 2, 1, 64>();
    c[n].name = "bn128"; c[n++].l = mid<AMN, 1, 1, 128>();
    c[n].name = "bn128_cn2"; c[n++].l = mid<AMN, 1, 2, 128>();
    c[n].name = "bn192"; c[n++].l = mid<AMN, 1, 1, 192>();
    c[n].name = "persistent"; c[n].l.kernel = NULL; c[n++].algo = HPDL_GEMM_WGMMA_PERSISTENT;
    c[n].name = "auto"; c[n].l.kernel = NULL; c[n++].algo = HPDL_GEMM_AUTO;
    c[n].name = "cublas"; c[n].l.kernel = NULL; c[n++].algo = HPDL_GEMM_CUBLAS;
    return n;
}
int main() {
    const struct { const char *name; int M, N, K, ta; } p[] = {
        {"fwd_l0_h2048_b512", 512, 2048, 784, 0}, {"fwd_l0_h512_b512", 512, 512, 784, 0},
        {"fwd_l0_h2048_b3000", 3000, 2048, 784, 0}, {"dw_l0_h2048_b3000", 784, 2048, 3000, 1},
        {"fwd_l0_h512_b3000", 3000, 512, 784, 0}, {"dw_l0_h512_b3000", 784, 512, 3000, 1},
        {"square_2048", 2048, 2048, 2048, 0}, {"square_1024", 1024, 1024, 1024, 0},
        {"one_wave_192", 1536, 2112, 1024, 0}, {"four_waves_192", 3072, 4224, 1024, 0},
        {"two_waves_192_k4096", 3000, 2048, 4096, 0}};
    hpdl_cuda_l2_flusher fl;
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&fl));
    printf("product,M,N,K,variant,us,cublas_us,ratio,check\n");
    for (unsigned i = 0; i < sizeof p / sizeof p[0]; i++) {
        ctx c[16];
        hpdl_cuda_work_fn fns[16];
        void *ctxs[16];
        double ms[16], err[16];
        __half *A, *B, *C;
        int n;
        memset(c, 0, sizeof c);
        n = p[i].ta ? variants<true>(c) : variants<false>(c);
        HPDL_CUDA_CHECK(cudaMalloc(&A, 2 * (size_t)p[i].M * p[i].K));
        HPDL_CUDA_CHECK(cudaMalloc(&B, 2 * (size_t)p[i].N * p[i].K));
        HPDL_CUDA_CHECK(cudaMalloc(&C, 2 * (size_t)p[i].M * p[i].N));
        fill(A, (size_t)p[i].M * p[i].K, 1 + i);
        fill(B, (size_t)p[i].N * p[i].K, 101 + i);
        for (int a = 0; a < n; a++) {
            c[a].ta = p[i].ta; c[a].M = p[i].M; c[a].N = p[i].N; c[a].K = p[i].K;
            c[a].A = A; c[a].B = B; c[a].C = C;
            fns[a] = run;
            ctxs[a] = &c[a];
        }
        for (int a = 0; a < n; a++) err[a] = check(&c[a], &c[n - 1]);
        HPDL_CHECK(hpdl_cuda_time_interleaved_ms(n, fns, ctxs, 0, 3, 50, &fl, ms));
        for (int a = 0; a < n; a++)
            printf("%s,%d,%d,%d,%s,%.3f,%.3f,%.3f,%.3g\n", p[i].name, p[i].M, p[i].N, p[i].K, c[a].name, 1e3 * ms[a],
                   1e3 * ms[n - 1], ms[n - 1] / ms[a], err[a]);
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        cudaFree(A); cudaFree(B); cudaFree(C);
    }
    return 0;
}
