/* Every f16 product of the MLP step (784-H-10, H 512 and 2048, batch 32 to
   3000; bench/gemm --mlp's list) on AUTO and on cuBLAS, each timed in a CUDA
   graph of 20 launches (median of 7 replays), as the MLP's step graph runs
   them. Built once per variant (-D macros) to compare builds in turns.
   ./gemm_graph > out.csv */
#include "hpdl_cuda.cuh"
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

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
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return t[3];
}

int main() {
    const int hs[2] = {512, 2048}, bs[4] = {32, 128, 512, 3000};
    const size_t most = (size_t)3000 * 2048;
    __half *A, *B, *C;
    cudaStream_t st;
    std::vector<__half> h(most);
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    for (size_t i = 0; i < most; i++) h[i] = __float2half((float)((i * 2654435761u) % 17) / 16.0f - 0.5f);
    CK(cudaMalloc(&A, most * 2));
    CK(cudaMalloc(&B, most * 2));
    CK(cudaMalloc(&C, most * 2));
    CK(cudaMemcpy(A, h.data(), most * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(B, h.data(), most * 2, cudaMemcpyHostToDevice));
    printf("h,b,product,m,n,k,auto_us,cublas_us,ratio\n");
    for (int H : hs)
        for (int b : bs) {
            struct { const char *name; hpdl_transpose ta, tb; int M, N, K; } all[5] = {
                {"fwd_l0", HPDL_NO_TRANS, HPDL_NO_TRANS, b, H, 784}, {"fwd_l1", HPDL_NO_TRANS, HPDL_NO_TRANS, b, 10, H},
                {"dw_l1", HPDL_TRANS, HPDL_NO_TRANS, H, 10, b},      {"dx_l1", HPDL_NO_TRANS, HPDL_TRANS, b, H, 10},
                {"dw_l0", HPDL_TRANS, HPDL_NO_TRANS, 784, H, b}};
            for (auto &p : all) {
                const int lda = p.ta == HPDL_NO_TRANS ? p.K : p.M, ldb = p.tb == HPDL_NO_TRANS ? p.N : p.K;
                double t[2];
                for (int v = 0; v < 2; v++) {
                    const hpdl_gemm_algo algo = v ? HPDL_GEMM_CUBLAS : HPDL_GEMM_AUTO;
                    t[v] = graph_us(st, [&] {
                        HPDL_CHECK(hpdl_cuda_gemm_algo(algo, p.ta, p.tb, p.M, p.N, p.K, 1.0f, (const __half *)A, lda,
                                                       (const __half *)B, ldb, 0.0f, C, p.N, st));
                    });
                }
                printf("%d,%d,%s,%d,%d,%d,%.2f,%.2f,%.3f\n", H, b, p.name, p.M, p.N, p.K, t[0], t[1], t[1] / t[0]);
                fflush(stdout);
            }
        }
    return 0;
}
