/* The thin kernel's rows a block and slices of K (grid z, a cluster a tile)
   on the MLP's f16 products it takes, each configuration checked against
   cuBLAS, then timed in a CUDA graph of 20 launches (median of 7 replays),
   cuBLAS alike in the same run.
   ./thin_slices > thin.csv */
#include "hpdl_cuda.cuh"
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

struct shape { const char *name; hpdl_transpose ta, tb; int M, N, K; };

template <typename F> static double graph_us(cudaStream_t st, F launch) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaEvent_t e0, e1;
    std::vector<double> t;
    int k, i;
    launch(); /* outside the capture: lazily made state */
    CK(cudaStreamSynchronize(st));
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (i = 0; i < 20; i++) launch();
    CK(cudaStreamEndCapture(st, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (k = 0; k < 7; k++) {
        float ms;
        CK(cudaEventRecord(e0, st));
        CK(cudaGraphLaunch(exec, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(1e3 * ms / 20);
    }
    std::sort(t.begin(), t.end());
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return t[3];
}

int main() {
    const shape shapes[] = {{"fwd_l0", HPDL_NO_TRANS, HPDL_NO_TRANS, 32, 2048, 784},
                            {"fwd_l0", HPDL_NO_TRANS, HPDL_NO_TRANS, 128, 2048, 784},
                            {"fwd_l0", HPDL_NO_TRANS, HPDL_NO_TRANS, 512, 2048, 784},
                            {"fwd_l0", HPDL_NO_TRANS, HPDL_NO_TRANS, 32, 512, 784},
                            {"fwd_l0", HPDL_NO_TRANS, HPDL_NO_TRANS, 128, 512, 784},
                            {"fwd_l0", HPDL_NO_TRANS, HPDL_NO_TRANS, 512, 512, 784},
                            {"dw_l0", HPDL_TRANS, HPDL_NO_TRANS, 784, 512, 32},
                            {"dw_l0", HPDL_TRANS, HPDL_NO_TRANS, 784, 512, 128}};
    const int rows_all[] = {8, 16, 32, 64, 128}, slices_all[] = {1, 2, 3, 4, 6, 8};
    cudaStream_t st;
    int sms = 0;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    HPDL_CHECK(hpdl__sm_count(&sms));
    printf("product,m,n,k,rows,slices,blocks,us,cublas_us,max_abs_err,auto_rows\n");
    for (const shape &s : shapes) {
        const int M = s.M, N = s.N, K = s.K, lda = s.ta == HPDL_NO_TRANS ? K : M, ldb = N;
        std::vector<__half> ha((size_t)M * K), hb((size_t)K * N), hc((size_t)M * N), hr((size_t)M * N);
        __half *A, *B, *C, *R;
        for (size_t i = 0; i < ha.size(); i++) ha[i] = __float2half((float)((i * 2654435761u) % 17) / 8.0f - 1.0f);
        for (size_t i = 0; i < hb.size(); i++) hb[i] = __float2half((float)((i * 40503u) % 13) / 8.0f - 0.75f);
        CK(cudaMalloc(&A, ha.size() * 2));
        CK(cudaMalloc(&B, hb.size() * 2));
        CK(cudaMalloc(&C, hc.size() * 2));
        CK(cudaMalloc(&R, hc.size() * 2));
        CK(cudaMemcpy(A, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(B, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
        HPDL_CHECK(hpdl_cuda_gemm_algo(HPDL_GEMM_CUBLAS, s.ta, s.tb, M, N, K, 1.0f, (const __half *)A, lda, (const __half *)B, ldb, 0.0f, R, N, st));
        CK(cudaMemcpy(hr.data(), R, hr.size() * 2, cudaMemcpyDeviceToHost));
        const double cub = graph_us(st, [&] {
            HPDL_CHECK(hpdl_cuda_gemm_algo(HPDL_GEMM_CUBLAS, s.ta, s.tb, M, N, K, 1.0f, (const __half *)A, lda, (const __half *)B, ldb, 0.0f, R, N, st));
        });
        const hpdl__gemm_args<__half, float> g =
            hpdl__gemm_make_args(s.ta, s.tb, M, N, K, 1.0f, (const __half *)A, lda, (const __half *)B, ldb, 0.0f, C, N, 8);
        const int auto_rows = hpdl__wg_thin_rows(M, N, s.ta == HPDL_TRANS, sms);
        for (int rows : rows_all)
            for (int slices : slices_all) {
                if (s.ta == HPDL_TRANS && rows < 64) continue;
                if (slices > 1 && rows > 64) continue;
                if (rows > 8 && rows / 2 >= M) continue;
                const long blocks = (long)((N + 63) / 64) * ((M + rows - 1) / rows) * slices;
                if (blocks > 2 * sms) continue;
                CK(cudaMemset(C, 0xff, hc.size() * 2));
                hpdl_status e = hpdl__wg_thin<__half>::launch(g, rows, slices, st);
                if (e != HPDL_OK) { printf("%s,%d,%d,%d,%d,%d,%ld,skip %s\n", s.name, M, N, K, rows, slices, blocks, hpdl_status_string(e)); continue; }
                CK(cudaStreamSynchronize(st));
                CK(cudaMemcpy(hc.data(), C, hc.size() * 2, cudaMemcpyDeviceToHost));
                double err = 0;
                for (size_t i = 0; i < hc.size(); i++) {
                    double d = fabs((double)__half2float(hc[i]) - (double)__half2float(hr[i]));
                    if (!(d <= err)) err = d;
                }
                const double us = graph_us(st, [&] { HPDL_CHECK(hpdl__wg_thin<__half>::launch(g, rows, slices, st)); });
                printf("%s,%d,%d,%d,%d,%d,%ld,%.2f,%.2f,%.3g,%d\n", s.name, M, N, K, rows, slices, blocks, us, cub, err, auto_rows);
                fflush(stdout);
            }
        cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(R);
    }
    return 0;
}
