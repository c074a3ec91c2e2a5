/* f16 512 x 2048 x 784 (NN) on AUTO (the thin kernel) then cuBLAS, twice each, for ncu. */
#include "hpdl_cuda.cuh"
int main() {
    const int M = 512, N = 2048, K = 784;
    __half *A, *B, *C;
    HPDL_CUDA_CHECK(cudaMalloc(&A, 2 * M * K));
    HPDL_CUDA_CHECK(cudaMalloc(&B, 2 * N * K));
    HPDL_CUDA_CHECK(cudaMalloc(&C, 2 * M * N));
    HPDL_CUDA_CHECK(cudaMemset(A, 0, 2 * M * K));
    HPDL_CUDA_CHECK(cudaMemset(B, 0, 2 * N * K));
    for (int algo = 0; algo < 2; algo++)
        for (int i = 0; i < 2; i++)
            HPDL_CHECK(hpdl_cuda_gemm_algo(algo ? HPDL_GEMM_CUBLAS : HPDL_GEMM_AUTO, HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K,
                                           1, A, K, B, N, 0, C, N, 0));
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    return 0;
}
