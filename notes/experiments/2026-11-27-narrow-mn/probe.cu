/* The weight gradient A1^T D1 (M = H, N = 10, K = batch) through the splitk
   rung and through cuBLAS, f16 and f32, on random data, for ncu.
   usage: probe H B   (each call once after a warm-up) */
#include "hpdl_cuda.cuh"
#include <stdio.h>
#include <stdlib.h>

template <typename T> __global__ void probe_fill(T *x, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = (T)(float)((int)(i * 2654435761u % 2001u) - 1000) * (T)0.001f;
}

template <typename T> static void run(int H, int B) {
    T *A, *D, *C;
    int algo, rep;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&A, (size_t)H * B * sizeof(T)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&D, (size_t)B * 10 * sizeof(T)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&C, (size_t)H * 10 * sizeof(T)));
    probe_fill<<<256, 256>>>(A, (size_t)H * B);
    probe_fill<<<256, 256>>>(D, (size_t)B * 10);
    for (rep = 0; rep < 2; rep++)
        for (algo = 0; algo < 2; algo++)
            HPDL_CHECK(hpdl_cuda_gemm_algo(algo ? HPDL_GEMM_SPLITK : HPDL_GEMM_CUBLAS, HPDL_TRANS, HPDL_NO_TRANS, H, 10,
                                           B, 1, A, H, D, 10, 0, C, 10, 0));
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    hpdl_cuda_free(A);
    hpdl_cuda_free(D);
    hpdl_cuda_free(C);
}

int main(int argc, char **argv) {
    const int H = argc > 2 ? atoi(argv[1]) : 512, B = argc > 2 ? atoi(argv[2]) : 128;
    run<__half>(H, B);
    run<float>(H, B);
    return 0;
}
