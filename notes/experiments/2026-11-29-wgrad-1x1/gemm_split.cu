/* The f16 GEMM of a 1x1 backward-filter with few outputs and a long sum
   (ResNet-50 conv2_x 256 -> 64 at batch 128: M 64, N 256, K 401408), and
   the MLP's weight gradient of its logits layer at H 512, batch 3000 (M 512,
   N 10, K 3000), A transposed (K x M row-major) and not (M x K): each rung
   timed with events (median of 9 after 2 warm-ups), for ncu to look at.
       nvcc -O3 -std=c++17 -arch=sm_90a -I<tree> gemm_split.cu -lcublas -lcublasLt -ldl
   Prints: A layout, rung, ms, TFLOP/s. */
#include "hpdl_cuda.cuh"

#include <algorithm>
#include <vector>

int main(void) {
    if (!hpdl_cuda_available()) { puts("no GPU"); return 0; }
    const int shapes[][3] = {{64, 256, 401408}, {512, 10, 3000}};
    __half *a, *b, *c;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&a, (size_t)64 * 401408 * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&b, (size_t)256 * 401408 * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&c, (size_t)512 * 256 * 2));
    HPDL_CUDA_CHECK(cudaMemset(a, 0, (size_t)64 * 401408 * 2));
    HPDL_CUDA_CHECK(cudaMemset(b, 0, (size_t)256 * 401408 * 2));
    const hpdl_gemm_algo algos[] = {HPDL_GEMM_WGMMA, HPDL_GEMM_WGMMA_PERSISTENT, HPDL_GEMM_AUTO, HPDL_GEMM_CUBLAS};
    cudaEvent_t e0, e1;
    HPDL_CUDA_CHECK(cudaEventCreate(&e0));
    HPDL_CUDA_CHECK(cudaEventCreate(&e1));
    printf("M,N,K,A,rung,ms,tflops\n");
    for (const auto &sh : shapes)
        for (int trans = 1; trans >= 0; trans--)
            for (hpdl_gemm_algo algo : algos) {
                const int M = sh[0], N = sh[1], K = sh[2];
                const hpdl_transpose ta = trans ? HPDL_TRANS : HPDL_NO_TRANS;
                std::vector<float> ms;
                const hpdl_status s = hpdl_cuda_gemm_algo(algo, ta, HPDL_NO_TRANS, M, N, K, 1.0f, a, trans ? M : K, b,
                                                          N, 0.0f, c, N);
                if (s != HPDL_OK) {
                    printf("%d,%d,%d,%s,%s,%s\n", M, N, K, trans ? "K x M" : "M x K", hpdl_gemm_algo_name(algo),
                           hpdl_status_string(s));
                    continue;
                }
                for (int rep = 0; rep < 11; rep++) {
                    HPDL_CUDA_CHECK(cudaEventRecord(e0));
                    HPDL_CHECK(hpdl_cuda_gemm_algo(algo, ta, HPDL_NO_TRANS, M, N, K, 1.0f, a, trans ? M : K, b, N, 0.0f, c, N));
                    HPDL_CUDA_CHECK(cudaEventRecord(e1));
                    HPDL_CUDA_CHECK(cudaEventSynchronize(e1));
                    float t;
                    HPDL_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
                    if (rep >= 2) ms.push_back(t);
                }
                std::sort(ms.begin(), ms.end());
                printf("%d,%d,%d,%s,%s,%.4f,%.1f\n", M, N, K, trans ? "K x M" : "M x K", hpdl_gemm_algo_name(algo), ms[4],
                       2.0 * M * N * K / ms[4] / 1e9);
            }
    return 0;
}
