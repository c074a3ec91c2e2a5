/* One product for ncu: f16 fwd_l1 32 x 10 x 2048 (NN), AUTO three times, then cuBLAS three times. */
#include "hpdl_cuda.cuh"
int main() {
    const int M = 32, N = 10, K = 2048;
    __half *A, *B, *C;
    HPDL_CUDA_CHECK(cudaMalloc(&A, 2 * M * K));
    HPDL_CUDA_CHECK(cudaMalloc(&B, 2 * N * K));
    HPDL_CUDA_CHECK(cudaMalloc(&C, 2 * M * N));
    HPDL_CUDA_CHECK(cudaMemset(A, 0, 2 * M * K));
    HPDL_CUDA_CHECK(cudaMemset(B, 0, 2 * N * K));
    for (int algo = 0; algo < 2; algo++)
        for (int i = 0; i < 3; i++)
            HPDL_CHECK(hpdl_cuda_gemm_algo(algo ? HPDL_GEMM_CUBLAS : HPDL_GEMM_AUTO, HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K,
                                           1, A, K, B, N, 0, C, N, 0));
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    return 0;
}
