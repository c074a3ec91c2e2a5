/* f32 products whose 3xTF32 tiles (128 x 64, two blocks an SM) make more
   than one SM's worth but under one wave: AUTO on the whole product against
   AUTO on its column halves (two launches, one after the other) and cuBLAS,
   in turns, L2 flushed; the halves' result checked against the whole's. In
   the data-parallel runs of 4128e6b the first layer's weight gradient cut
   in two made the 1-GPU epoch 5 % shorter (H 2048, batch 3000).
   usage: probe [reps] */
#include "hpdl_cuda.cuh"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct ctx { int pieces, cublas, ta, M, N, K; float *A, *B, *C; };
static void run(void *p, cudaStream_t s) {
    const ctx *c = (const ctx *)p;
    const int lda = c->ta ? c->M : c->K, w = c->N / c->pieces;
    const hpdl_transpose ta = c->ta ? HPDL_TRANS : HPDL_NO_TRANS;
    for (int i = 0; i < c->pieces; i++)
        HPDL_CHECK(hpdl_cuda_gemm_algo(c->cublas ? HPDL_GEMM_CUBLAS : HPDL_GEMM_AUTO, ta, HPDL_NO_TRANS, c->M,
                                       i == c->pieces - 1 ? c->N - i * w : w, c->K, 1, c->A, lda, c->B + i * w, c->N,
                                       0, c->C + i * w, c->N, s));
}
int main(int argc, char **argv) {
    const struct { const char *name; int M, N, K, ta; } p[] = {
        {"dw_l0_h2048_b3000", 784, 2048, 3000, 1}, {"dw_l0_h2048_b512", 784, 2048, 512, 1},
        {"fwd_l0_h512_b3000", 3000, 512, 784, 0},  {"dw_l0_h512_b3000", 784, 512, 3000, 1}};
    const int reps = argc > 1 ? atoi(argv[1]) : 30;
    hpdl_cuda_l2_flusher fl;
    HPDL_CHECK(hpdl_cuda_l2_flusher_create(&fl));
    printf("product,M,N,K,variant,us,cublas_us,ratio,max_rel_diff\n");
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        const size_t na = (size_t)p[i].M * p[i].K, nb = (size_t)p[i].K * p[i].N, nc = (size_t)p[i].M * p[i].N;
        float *A, *B, *C[4], *h0 = (float *)malloc(nc * 4), *h1 = (float *)malloc(nc * 4);
        ctx c[4];
        hpdl_cuda_work_fn fns[4] = {run, run, run, run};
        void *ptrs[4];
        double ms[4];
        HPDL_CUDA_CHECK(cudaMalloc(&A, na * 4));
        HPDL_CUDA_CHECK(cudaMalloc(&B, nb * 4));
        HPDL_CHECK(hpdl__cuda_fill_uniform(A, (long long)na, 1 + i, 0, 1.0f, 0));
        HPDL_CHECK(hpdl__cuda_fill_uniform(B, (long long)nb, 7 + i, 0, 1.0f, 0));
        for (int j = 0; j < 4; j++) {
            HPDL_CUDA_CHECK(cudaMalloc(&C[j], nc * 4));
            c[j].ta = p[i].ta; c[j].M = p[i].M; c[j].N = p[i].N; c[j].K = p[i].K; c[j].A = A; c[j].B = B; c[j].C = C[j];
            c[j].cublas = j == 0; c[j].pieces = j == 0 ? 1 : j; /* cublas, whole, halves, thirds */
            ptrs[j] = &c[j];
        }
        for (int j = 0; j < 4; j++) run(&c[j], 0);
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        HPDL_CUDA_CHECK(cudaMemcpy(h0, C[1], nc * 4, cudaMemcpyDeviceToHost));
        HPDL_CHECK(hpdl_cuda_time_interleaved_ms(4, fns, ptrs, 0, 3, reps, &fl, ms));
        for (int j = 1; j < 4; j++) {
            double d = 0, top = 0;
            HPDL_CUDA_CHECK(cudaMemcpy(h1, C[j], nc * 4, cudaMemcpyDeviceToHost));
            for (size_t e = 0; e < nc; e++) { d = fmax(d, fabs(h1[e] - h0[e])); top = fmax(top, fabs(h0[e])); }
            printf("%s,%d,%d,%d,%s,%.2f,%.2f,%.3f,%.2g\n", p[i].name, p[i].M, p[i].N, p[i].K,
                   j == 1 ? "auto_whole" : j == 2 ? "auto_halves" : "auto_thirds", 1e3 * ms[j], 1e3 * ms[0],
                   ms[0] / ms[j], d / top);
        }
        fflush(stdout);
        for (int j = 0; j < 4; j++) cudaFree(C[j]);
        cudaFree(A); cudaFree(B); free(h0); free(h1);
    }
    hpdl_cuda_l2_flusher_destroy(&fl);
    return 0;
}
