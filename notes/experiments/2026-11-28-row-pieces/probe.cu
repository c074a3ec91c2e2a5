/* The MLP's first-layer weight gradient, dW0 = X^T D (784 x H x b, f32,
   A transposed), on hpdl's AUTO: whole, against the same product in row
   pieces launched one after another. Median of 21 runs of 20 launches each.
       nvcc -std=c++17 -I../../.. -O3 -gencode arch=compute_90a,code=sm_90a probe.cu -o probe -lcublas -lcublasLt
       ./probe */
#include "hpdl_cuda.cuh"
#include <algorithm>
#include <vector>

static float time_pieces(const float *X, const float *D, float *W, int k, int n, int b, const std::vector<int> &cuts) {
    cudaEvent_t e0, e1;
    std::vector<float> ms;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int rep = 0; rep < 22; rep++) {
        cudaEventRecord(e0);
        for (int it = 0; it < 20; it++)
            for (size_t p = 0; p + 1 < cuts.size(); p++)
                HPDL_CHECK(hpdl_cuda_gemm_algo(HPDL_GEMM_AUTO, HPDL_TRANS, HPDL_NO_TRANS, cuts[p + 1] - cuts[p], n, b, 1.0f,
                                               X + cuts[p], k, D, n, 0.0f, W + (size_t)cuts[p] * n, n));
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float t = 0;
        cudaEventElapsedTime(&t, e0, e1);
        if (rep > 0) ms.push_back(t / 20);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

int main() {
    const int k = 784, hs[2] = {512, 2048}, bs[2] = {512, 3000};
    float *X, *D, *W;
    HPDL_CUDA_CHECK(cudaMalloc(&X, sizeof(float) * 3000 * k));
    HPDL_CUDA_CHECK(cudaMalloc(&D, sizeof(float) * 3000 * 2048));
    HPDL_CUDA_CHECK(cudaMalloc(&W, sizeof(float) * k * 2048));
    cudaMemset(X, 0, sizeof(float) * 3000 * k);
    cudaMemset(D, 0, sizeof(float) * 3000 * 2048);
    for (int hi = 0; hi < 2; hi++)
        for (int bi = 0; bi < 2; bi++) {
            const int n = hs[hi], b = bs[bi];
            const std::vector<std::vector<int>> plans = {{0, 784}, {0, 512, 784}, {0, 384, 784}, {0, 448, 784},
                                                         {0, 256, 512, 784}};
            printf("784 x %d x %d:", n, b);
            for (const auto &cuts : plans) {
                printf("  [");
                for (size_t p = 0; p + 1 < cuts.size(); p++) printf("%s%d", p ? "+" : "", cuts[p + 1] - cuts[p]);
                printf("] %.1f us", 1e3 * time_pieces(X, D, W, k, n, b, cuts));
            }
            printf("\n");
        }
    return 0;
}
