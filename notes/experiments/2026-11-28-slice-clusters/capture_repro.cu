/* The one-tile Hopper rung's split of K captured into a graph on a new stream (no splitk
   workspace yet): f16 600 x 256 x 2000 (11 slices). Before 5d637ec the kernel's blocks wrote
   their slices through a null pointer; the graph's launch then fails. Prints the outcome.
   nvcc -std=c++17 -I<headers> -O3 -gencode arch=compute_90a,code=sm_90a capture_repro.cu -lcublas -lcublasLt */
#include "hpdl_cuda.cuh"

int main(void) {
    const int M = 600, N = 256, K = 2000;
    __half *a, *b, *c;
    cudaStream_t stream;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    hpdl_status s;
    cudaError_t e;
    cudaMalloc((void **)&a, (size_t)M * K * 2);
    cudaMalloc((void **)&b, (size_t)K * N * 2);
    cudaMalloc((void **)&c, (size_t)M * N * 2);
    cudaMemset(a, 0, (size_t)M * K * 2);
    cudaMemset(b, 0, (size_t)K * N * 2);
    cudaStreamCreate(&stream);
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    s = hpdl_cuda_gemm_algo_f16(HPDL_GEMM_WGMMA, HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K, 1.0f, (const hpdl_f16 *)a, K,
                                (const hpdl_f16 *)b, N, 0.0f, (hpdl_f16 *)c, N, stream);
    cudaStreamEndCapture(stream, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphLaunch(exec, stream);
    e = cudaStreamSynchronize(stream);
    printf("gemm in capture: %s; graph run: %s\n", hpdl_status_string(s), cudaGetErrorString(e));
    return e == cudaSuccess && s == HPDL_OK ? 0 : 1;
}
