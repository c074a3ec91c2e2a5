/* The warp-specialized Hopper kernel (128 x 256 tiles, two consumer
   warpgroups) with K in S slices, the slices of a tile one cluster adding
   their sums through shared memory (hpdl__gemm_ws_sliced), on the MLP's f16
   products of few tiles, against AUTO (the one-tile rung's 64 x 256 tiles,
   K split where they leave SMs idle) and cuBLAS in turns, L2 flushed.
   Each variant's result is first checked against cuBLAS's on random
   operands. usage: probe [reps] */
#include "hpdl_cuda.cuh"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef hpdl__gemm_args<__half, float> args;
struct ctx { char name[32]; int slices; hpdl_gemm_algo algo; int ta, M, N, K; __half *A, *B, *C; };
static hpdl_status call(const ctx *c, cudaStream_t s) {
    const int lda = c->ta ? c->M : c->K;
    const hpdl_transpose ta = c->ta ? HPDL_TRANS : HPDL_NO_TRANS;
    if (c->slices > 0) {
        const hpdl__wg_launch l = c->ta ? hpdl__wg_rung<__half, true, true>(HPDL_GEMM_WGMMA_WS)
                                        : hpdl__wg_rung<__half, false, true>(HPDL_GEMM_WGMMA_WS);
        return hpdl__gemm_ws_sliced(l, hpdl__gemm_make_args(ta, HPDL_NO_TRANS, c->M, c->N, c->K, 1.0f,
                                                             (const __half *)c->A, lda, (const __half *)c->B, c->N,
                                                             0.0f, c->C, c->N, 8), c->slices, s);
    }
    return hpdl_cuda_gemm_algo(c->algo, ta, HPDL_NO_TRANS, c->M, c->N, c->K, 1, c->A, lda, c->B, c->N, 0, c->C, c->N, s);
}
static void run(void *p, cudaStream_t s) {
    hpdl_status st = call((ctx *)p, s);
    if (st != HPDL_OK) { fprintf(stderr, "%s: %s\n", ((ctx *)p)->name, hpdl_status_string(st)); exit(1); }
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
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
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
int main(int argc, char **argv) {
    const struct { const char *name; int M, N, K, ta; } p[] = {
        {"dw_l0_h512_b3000", 784, 512, 3000, 1},  {"dw_l0_h2048_b3000", 784, 2048, 3000, 1},
        {"dw_l0_h512_b512", 784, 512, 512, 1},    {"dw_l0_h2048_b512", 784, 2048, 512, 1},
        {"dw_l0_h512_b128", 784, 512, 128, 1},    {"fwd_l0_h2048_b512", 512, 2048, 784, 0},
        {"fwd_l0_h512_b3000", 3000, 512, 784, 0}, {"fwd_l0_h512_b512", 512, 512, 784, 0},
        {"fwd_l0_h2048_b128", 128, 2048, 784, 0}, {"fwd_l0_h512_b128", 128, 512, 784, 0},
        {"odd_1000x700x5000", 1000, 700, 5000, 1}};
    const int reps = argc > 1 ? atoi(argv[1]) : 50;
    hpdl_cuda_l2_flusher fl;
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&fl));
    printf("product,M,N,K,variant,us,cublas_us,ratio,check\n");
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        ctx c[12];
        hpdl_cuda_work_fn fns[12];
        void *ptrs[12];
        double ms[12];
        __half *A, *B, *C[12];
        int n = 0, j, S;
        const size_t na = (size_t)p[i].M * p[i].K, nb = (size_t)p[i].K * p[i].N, nc = (size_t)p[i].M * p[i].N;
        HPDL_CUDA_CHECK(cudaMalloc(&A, na * 2));
        HPDL_CUDA_CHECK(cudaMalloc(&B, nb * 2));
        fill(A, na, 1u + (unsigned)i);
        fill(B, nb, 7u + (unsigned)i);
        c[n].algo = HPDL_GEMM_CUBLAS; c[n].slices = 0; snprintf(c[n++].name, 32, "cublas");
        c[n].algo = HPDL_GEMM_AUTO; c[n].slices = 0; snprintf(c[n++].name, 32, "auto");
        for (S = 2; S <= 8; S++) { c[n].slices = S; snprintf(c[n++].name, 32, "ws_s%d", S); }
        for (j = 0; j < n; j++) {
            c[j].ta = p[i].ta; c[j].M = p[i].M; c[j].N = p[i].N; c[j].K = p[i].K; c[j].A = A; c[j].B = B;
            HPDL_CUDA_CHECK(cudaMalloc(&C[j], nc * 2));
            c[j].C = C[j];
        }
        /* keep the variants that run (their clusters fit) and give cuBLAS's result */
        {
            int kept = 1;
            for (j = 1; j < n; j++) {
                double e;
                if (call(&c[j], 0) == HPDL_ERR_UNSUPPORTED) continue;
                e = check(&c[j], &c[0]);
                fprintf(stderr, "%s %s: rel err %.3g\n", p[i].name, c[j].name, e);
                if (!(e < 2e-2)) { printf("%s,%d,%d,%d,%s,,,,WRONG %.3g\n", p[i].name, p[i].M, p[i].N, p[i].K, c[j].name, e); continue; }
                c[kept++] = c[j];
            }
            n = kept;
        }
        for (j = 0; j < n; j++) { fns[j] = run; ptrs[j] = &c[j]; }
        HPDL_CHECK(hpdl_cuda_time_interleaved_ms(n, fns, ptrs, 0, 3, reps, &fl, ms));
        for (j = 1; j < n; j++)
            printf("%s,%d,%d,%d,%s,%.2f,%.2f,%.3f,ok\n", p[i].name, p[i].M, p[i].N, p[i].K, c[j].name, 1e3 * ms[j],
                   1e3 * ms[0], ms[0] / ms[j]);
        fflush(stdout);
        for (j = 0; j < 9; j++) cudaFree(C[j]);
        cudaFree(A); cudaFree(B);
    }
    hpdl_cuda_l2_flusher_destroy(&fl);
    return 0;
}
