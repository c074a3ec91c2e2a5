/* The f16 products of the MLP step where AUTO trails cuBLAS by 5-25 % and
   which are not Hopper-tile products: the weight gradients of the logits'
   layer (H x 10 x B, A MN-major), the first layer's forward at small
   batches and its weight gradient at batch 32. Each runs on AUTO then on
   cuBLAS, `reps` times, for ncu to time kernel by kernel (ncu flushes the
   caches between kernels, as bench/gemm --mlp flushes L2 between runs).
   usage: probe [reps] */
#include "hpdl_cuda.cuh"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    const struct { const char *name; int M, N, K, ta; } p[] = {
        {"dw_l1_h512_b32", 512, 10, 32, 1},      {"dw_l1_h512_b128", 512, 10, 128, 1},
        {"dw_l1_h512_b512", 512, 10, 512, 1},    {"dw_l1_h512_b3000", 512, 10, 3000, 1},
        {"dw_l1_h2048_b32", 2048, 10, 32, 1},    {"dw_l1_h2048_b128", 2048, 10, 128, 1},
        {"dw_l1_h2048_b512", 2048, 10, 512, 1},  {"dw_l1_h2048_b3000", 2048, 10, 3000, 1},
        {"fwd_l0_h512_b32", 32, 512, 784, 0},    {"fwd_l0_h2048_b128", 128, 2048, 784, 0},
        {"dw_l0_h512_b32", 784, 512, 32, 1}};
    const int reps = argc > 1 ? atoi(argv[1]) : 3;
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        const size_t na = (size_t)p[i].M * p[i].K, nb = (size_t)p[i].K * p[i].N, nc = (size_t)p[i].M * p[i].N;
        const int lda = p[i].ta ? p[i].M : p[i].K;
        __half *A, *B, *C;
        int a, r;
        HPDL_CUDA_CHECK(cudaMalloc(&A, na * 2));
        HPDL_CUDA_CHECK(cudaMalloc(&B, nb * 2));
        HPDL_CUDA_CHECK(cudaMalloc(&C, nc * 2));
        HPDL_CUDA_CHECK(cudaMemset(A, 0, na * 2));
        HPDL_CUDA_CHECK(cudaMemset(B, 0, nb * 2));
        for (a = 0; a < 2; a++)
            for (r = 0; r < reps; r++) {
                nvtxRangePushA(p[i].name);
                HPDL_CHECK(hpdl_cuda_gemm_algo(a ? HPDL_GEMM_CUBLAS : HPDL_GEMM_AUTO, p[i].ta ? HPDL_TRANS : HPDL_NO_TRANS,
                                               HPDL_NO_TRANS, p[i].M, p[i].N, p[i].K, 1, A, lda, B, p[i].N, 0, C,
                                               p[i].N, 0));
                nvtxRangePop();
            }
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        cudaFree(A); cudaFree(B); cudaFree(C);
    }
    printf("done\n");
    return 0;
}
