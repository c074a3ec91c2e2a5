/* The f16 products of the MLP step where hpdl's Hopper rungs trail cuBLAS most
   (bench/gemm --mlp, H200 and H100), each on every Hopper rung and cuBLAS in
   turns, L2 flushed, as bench/gemm times them; first every rung's result
   against cuBLAS's on random operands (largest difference over the largest
   value). `probe once` instead runs each product once per rung, for ncu to
   name the kernels and their grids. */
#include "hpdl_cuda.cuh"
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>

struct ctx { hpdl_gemm_algo algo; hpdl_transpose ta; int M, N, K, lda; __half *A, *B, *C; };
static void run(void *p, cudaStream_t s) {
    ctx *c = (ctx *)p;
    hpdl_status st = hpdl_cuda_gemm_algo(c->algo, c->ta, HPDL_NO_TRANS, c->M, c->N, c->K, 1, c->A, c->lda, c->B, c->N,
                                         0, c->C, c->N, s);
    if (st != HPDL_OK) { fprintf(stderr, "%s: %s\n", hpdl_gemm_algo_name(c->algo), hpdl_status_string(st)); exit(1); }
}
/* n f16 values uniform in [-1, 1) from a fixed seed. */
static void fill(__half *d, size_t n, unsigned seed) {
    __half *h = (__half *)malloc(n * sizeof(__half));
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = __float2half((float)(seed >> 8) / (float)(1u << 23) - 1.0f);
    }
    HPDL_CUDA_CHECK(cudaMemcpy(d, h, n * sizeof(__half), cudaMemcpyHostToDevice));
    free(h);
}
/* Runs x and the reference r, prints x's largest difference from r over r's largest value. */
static void check(ctx *x, ctx *r, const char *name) {
    const size_t n = (size_t)x->M * x->N;
    __half *hx = (__half *)malloc(n * 2), *hr = (__half *)malloc(n * 2);
    double diff = 0, top = 0;
    run(r, 0);
    HPDL_CUDA_CHECK(cudaMemcpy(hr, r->C, n * 2, cudaMemcpyDeviceToHost));
    HPDL_CUDA_CHECK(cudaMemset(x->C, 0xFF, n * 2)); /* NaN: a missed output shows */
    run(x, 0);
    HPDL_CUDA_CHECK(cudaMemcpy(hx, x->C, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        double a = __half2float(hx[i]), b = __half2float(hr[i]);
        double e = a == a ? fabs(a - b) : 1e30;
        if (e > diff) diff = e;
        if (fabs(b) > top) top = fabs(b);
    }
    printf("check,%s,%s,%.3g\n", name, hpdl_gemm_algo_name(x->algo), diff / top);
    free(hx); free(hr);
}
int main(int argc, char **argv) {
    const int once = argc > 1 && !strcmp(argv[1], "once");
    /* name, M, N, K, A transposed (the weight gradients: X^T D) */
    const struct { const char *name; int M, N, K, ta; } p[] = {
        {"dw_l0_h512_b3000", 784, 512, 3000, 1}, {"fwd_l0_h2048_b512", 512, 2048, 784, 0},
        {"fwd_l0_h2048_b3000", 3000, 2048, 784, 0}, {"fwd_l0_h512_b3000", 3000, 512, 784, 0},
        {"dw_l0_h2048_b3000", 784, 2048, 3000, 1}};
    const hpdl_gemm_algo algos[] = {HPDL_GEMM_AUTO, HPDL_GEMM_WGMMA, HPDL_GEMM_WGMMA_WS, HPDL_GEMM_WGMMA_PERSISTENT,
                                    HPDL_GEMM_WGMMA_CLUSTER, HPDL_GEMM_CUBLAS};
    const int na = (int)(sizeof algos / sizeof algos[0]);
    hpdl_cuda_l2_flusher fl;
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&fl));
    if (!once) printf("product,M,N,K,algo,us,cublas_us,ratio\n");
    for (unsigned i = 0; i < sizeof p / sizeof p[0]; i++) {
        ctx c[8];
        hpdl_cuda_work_fn fns[8];
        void *ctxs[8];
        double ms[8];
        memset(c, 0, sizeof c);
        c[0].M = p[i].M; c[0].N = p[i].N; c[0].K = p[i].K;
        c[0].ta = p[i].ta ? HPDL_TRANS : HPDL_NO_TRANS;
        c[0].lda = p[i].ta ? p[i].M : p[i].K;
        HPDL_CUDA_CHECK(cudaMalloc(&c[0].A, 2 * (size_t)p[i].M * p[i].K));
        HPDL_CUDA_CHECK(cudaMalloc(&c[0].B, 2 * (size_t)p[i].N * p[i].K));
        HPDL_CUDA_CHECK(cudaMalloc(&c[0].C, 2 * (size_t)p[i].M * p[i].N));
        fill(c[0].A, (size_t)p[i].M * p[i].K, 1 + i);
        fill(c[0].B, (size_t)p[i].N * p[i].K, 101 + i);
        for (int a = 0; a < na; a++) {
            c[a] = c[0];
            c[a].algo = algos[a];
            fns[a] = run;
            ctxs[a] = &c[a];
        }
        if (!once)
            for (int a = 0; a < na; a++) check(&c[a], &c[na - 1], p[i].name);
        if (once) {
            for (int a = 0; a < na; a++) run(&c[a], 0);
        } else {
            HPDL_CHECK(hpdl_cuda_time_interleaved_ms(na, fns, ctxs, 0, 3, 50, &fl, ms));
            for (int a = 0; a < na; a++)
                printf("%s,%d,%d,%d,%s,%.3f,%.3f,%.3f\n", p[i].name, p[i].M, p[i].N, p[i].K,
                       hpdl_gemm_algo_name(algos[a]), 1e3 * ms[a], 1e3 * ms[na - 1], ms[na - 1] / ms[a]);
        }
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        cudaFree(c[0].A); cudaFree(c[0].B); cudaFree(c[0].C);
    }
    return 0;
}
