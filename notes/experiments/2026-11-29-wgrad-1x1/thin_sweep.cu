/* The Hopper GEMM rung on products of few rows: the thin kernel (all of K
   in one block per 64-column strip) against the split over K, built twice
   (default; -DHPDL__WG_THIN_MAX_ROWS=0 turns the thin kernel off for A
   K-major, and for A MN-major where K is over its stages), cuBLAS beside.
   f16, events, median of 9 after 2 warm-ups.
       nvcc -O3 -std=c++17 -arch=sm_90a -I<tree> [-DHPDL__WG_THIN_MAX_ROWS=0] thin_sweep.cu -lcublas -lcublasLt -ldl
   Prints: M, N, K, A layout, rung, ms. */
#include "hpdl_cuda.cuh"

#include <algorithm>
#include <vector>

static float time_ms(hpdl_gemm_algo algo, int trans, int M, int N, int K, const __half *a, const __half *b, __half *c) {
    cudaEvent_t e0, e1;
    std::vector<float> ms;
    HPDL_CUDA_CHECK(cudaEventCreate(&e0));
    HPDL_CUDA_CHECK(cudaEventCreate(&e1));
    for (int rep = 0; rep < 11; rep++) {
        HPDL_CUDA_CHECK(cudaEventRecord(e0));
        HPDL_CHECK(hpdl_cuda_gemm_algo(algo, trans ? HPDL_TRANS : HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K, 1.0f, a,
                                       trans ? M : K, b, N, 0.0f, c, N));
        HPDL_CUDA_CHECK(cudaEventRecord(e1));
        HPDL_CUDA_CHECK(cudaEventSynchronize(e1));
        float t;
        HPDL_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
        if (rep >= 2) ms.push_back(t);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

int main(void) {
    if (!hpdl_cuda_available()) { puts("no GPU"); return 0; }
    const int shapes[][2] = {{64, 256}, {256, 64}, {256, 256}, {128, 16}, {512, 16}, {32, 512}, {256, 1024}};
    const int ks[] = {768, 2048, 8192, 32768, 131072, 401408};
    const size_t most = (size_t)1024 * 401408;
    __half *a, *b, *c;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&a, most * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&b, most * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&c, (size_t)1024 * 1024 * 2));
    HPDL_CUDA_CHECK(cudaMemset(a, 0, most * 2));
    HPDL_CUDA_CHECK(cudaMemset(b, 0, most * 2));
    puts("M,N,K,A,rung,ms");
    for (const auto &s : shapes)
        for (int K : ks)
            for (int trans = 0; trans <= 1; trans++) {
                if ((size_t)s[0] * K > most || (size_t)s[1] * K > most) continue;
                const hpdl_gemm_algo algos[] = {HPDL_GEMM_WGMMA, HPDL_GEMM_CUBLAS};
                for (hpdl_gemm_algo algo : algos)
                    printf("%d,%d,%d,%s,%s,%.4f\n", s[0], s[1], K, trans ? "mn" : "k", hpdl_gemm_algo_name(algo),
                           time_ms(algo, trans, s[0], s[1], K, a, b, c));
            }
    return 0;
}
