/* 16-bit GEMMs of few tiles and long K on the Hopper rungs: ResNet-50's 1x1
   backward-filters as dw = dy^T x (A transposed: K x M row-major) and their
   forward and backward-data GEMMs (x W^T, dy W), the MLP's
   dW0 = X^T D0 at batch 3000, and 4096^3 / 8192^3 for the cluster rung's
   full waves. Each rung is checked against cuBLAS (max |diff| / max |ref|),
   then timed: events around 20 calls in a row, the median of 7 such rounds.
       nvcc -O3 -std=c++17 -arch=sm_90a -I<tree> sk_probe.cu -lcublas -lcublasLt -ldl
   Prints: name, M, N, K, rung, us a call, TFLOP/s, rel_err. With the
   argument `refs`, only cuBLAS's call on each product, once (for ncu). */
#include "hpdl_cuda.cuh"

#include <algorithm>
#include <vector>

struct shape { const char *name; hpdl_transpose ta, tb; int M, N, K; };

static float time_calls(hpdl_gemm_algo algo, const shape &s, const __half *a, const __half *b, __half *c) {
    cudaEvent_t e0, e1;
    std::vector<float> rounds;
    const int lda = s.ta == HPDL_TRANS ? s.M : s.K, ldb = s.tb == HPDL_TRANS ? s.K : s.N;
    HPDL_CUDA_CHECK(cudaEventCreate(&e0));
    HPDL_CUDA_CHECK(cudaEventCreate(&e1));
    for (int r = 0; r < 8; r++) {
        float ms = 0;
        HPDL_CUDA_CHECK(cudaEventRecord(e0));
        for (int i = 0; i < 20; i++)
            HPDL_CHECK(hpdl_cuda_gemm_algo(algo, s.ta, s.tb, s.M, s.N, s.K, 1.0f, a, lda, b, ldb, 0.0f, c, s.N));
        HPDL_CUDA_CHECK(cudaEventRecord(e1));
        HPDL_CUDA_CHECK(cudaEventSynchronize(e1));
        HPDL_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0) rounds.push_back(ms * 1000.0f / 20);
    }
    std::sort(rounds.begin(), rounds.end());
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return rounds[rounds.size() / 2];
}

static double rel_err(const std::vector<__half> &x, const std::vector<__half> &ref) {
    double diff = 0, top = 0;
    for (size_t i = 0; i < x.size(); i++) {
        const double d = fabsf(__half2float(x[i]) - __half2float(ref[i]));
        if (d != d) return INFINITY; /* an output left unwritten (NaN) */
        diff = std::max(diff, d);
        top = std::max(top, (double)fabsf(__half2float(ref[i])));
    }
    return diff / (top > 0 ? top : 1);
}

int main(int argc, char **argv) {
    const int refs_only = argc > 1 && strcmp(argv[1], "refs") == 0; /* for ncu: cuBLAS once a product */
    if (!hpdl_cuda_available()) { puts("no GPU"); return 0; }
    const hpdl_transpose t = HPDL_TRANS, n = HPDL_NO_TRANS;
    const shape shapes[] = {{"r50_conv5_1x1_512to2048_wgrad", t, n, 2048, 512, 6272},
                            {"r50_conv4_1x1_1024to256_wgrad", t, n, 256, 1024, 25088},
                            {"r50_conv5_1x1_512to2048_fwd", n, t, 6272, 2048, 512},
                            {"r50_conv5_1x1_512to2048_dgrad", n, n, 6272, 512, 2048},
                            {"r50_conv4_1x1_1024to256_fwd", n, t, 25088, 256, 1024},
                            {"r50_conv4_1x1_1024to256_dgrad", n, n, 25088, 1024, 256},
                            {"mlp_dW0_b3000", t, n, 784, 2048, 3000},
                            {"mlp_dW0_b512", t, n, 784, 2048, 512},
                            {"square_4096", n, n, 4096, 4096, 4096},
                            {"square_8192", n, n, 8192, 8192, 8192}};
    const hpdl_gemm_algo algos[] = {HPDL_GEMM_CUBLAS, HPDL_GEMM_AUTO, HPDL_GEMM_WGMMA, HPDL_GEMM_WGMMA_WS, HPDL_GEMM_WGMMA_PERSISTENT,
                                    HPDL_GEMM_WGMMA_CLUSTER};
    const size_t most = (size_t)8192 * 8192;
    __half *a, *b, *c;
    hpdl_rng r;
    std::vector<__half> h(most);
    hpdl_rng_seed(&r, 7);
    HPDL_CHECK(hpdl_cuda_alloc((void **)&a, most * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&b, most * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&c, most * 2));
    for (size_t i = 0; i < most; i++) h[i] = __float2half((float)hpdl_rng_uniform(&r) - 0.5f);
    HPDL_CUDA_CHECK(cudaMemcpy(a, h.data(), most * 2, cudaMemcpyHostToDevice));
    for (size_t i = 0; i < most; i++) h[i] = __float2half((float)hpdl_rng_uniform(&r) - 0.5f);
    HPDL_CUDA_CHECK(cudaMemcpy(b, h.data(), most * 2, cudaMemcpyHostToDevice));
    printf("name,M,N,K,rung,us,tflops,rel_err\n");
    for (const shape &s : shapes) {
        const size_t outs = (size_t)s.M * s.N;
        const int lda = s.ta == HPDL_TRANS ? s.M : s.K, ldb = s.tb == HPDL_TRANS ? s.K : s.N;
        std::vector<__half> ref(outs), got(outs);
        HPDL_CHECK(hpdl_cuda_gemm_algo(HPDL_GEMM_CUBLAS, s.ta, s.tb, s.M, s.N, s.K, 1.0f, a, lda, b, ldb, 0.0f, c, s.N));
        HPDL_CUDA_CHECK(cudaMemcpy(ref.data(), c, outs * 2, cudaMemcpyDeviceToHost));
        if (refs_only) continue;
        for (hpdl_gemm_algo algo : algos) {
            HPDL_CUDA_CHECK(cudaMemset(c, 0xff, outs * 2)); /* NaN: a tile left unwritten shows */
            const hpdl_status st = hpdl_cuda_gemm_algo(algo, s.ta, s.tb, s.M, s.N, s.K, 1.0f, a, lda, b, ldb, 0.0f, c, s.N);
            if (st != HPDL_OK) {
                printf("%s,%d,%d,%d,%s,%s\n", s.name, s.M, s.N, s.K, hpdl_gemm_algo_name(algo), hpdl_status_string(st));
                continue;
            }
            HPDL_CUDA_CHECK(cudaMemcpy(got.data(), c, outs * 2, cudaMemcpyDeviceToHost));
            const double err = rel_err(got, ref);
            const float us = time_calls(algo, s, a, b, c);
            printf("%s,%d,%d,%d,%s,%.2f,%.1f,%.2e\n", s.name, s.M, s.N, s.K, hpdl_gemm_algo_name(algo), us,
                   2.0 * s.M * s.N * s.K / us / 1e6, err);
            fflush(stdout);
        }
    }
    return 0;
}
