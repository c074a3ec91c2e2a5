/* A GEMM inside a graph capture: f16 600 x 256 x 2000 on the one-tile Hopper rung (11 slices of
   K), captured on a new stream (ThreadLocal mode), the graph run, then the same product outside
   any capture. `./repro`: the capture holds the program's first GEMM. Before 683c6c9 the rung's
   availability probe failed there and turned the Hopper rungs off for the whole process (both
   calls: unsupported). `./repro warm`: one product on the default stream first (the probe
   answered, a splitk workspace for that stream only). Before 5d637ec the captured split, with no
   workspace for its stream, wrote its slices through a null pointer (the graph run fails).
   nvcc -std=c++17 -I<headers> -O3 -gencode arch=compute_90a,code=sm_90a capture_repro.cu -lcublas -lcublasLt */
#include "hpdl_cuda.cuh"
#include <string.h>

static hpdl_status product(const __half *a, const __half *b, __half *c, cudaStream_t stream) {
    return hpdl_cuda_gemm_algo_f16(HPDL_GEMM_WGMMA, HPDL_NO_TRANS, HPDL_NO_TRANS, 600, 256, 2000, 1.0f,
                                   (const hpdl_f16 *)a, 2000, (const hpdl_f16 *)b, 256, 0.0f, (hpdl_f16 *)c, 256, stream);
}

int main(int argc, char **argv) {
    __half *a, *b, *c;
    cudaStream_t stream;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    hpdl_status in_capture, outside;
    cudaError_t end, run;
    cudaMalloc((void **)&a, (size_t)600 * 2000 * 2);
    cudaMalloc((void **)&b, (size_t)2000 * 256 * 2);
    cudaMalloc((void **)&c, (size_t)600 * 256 * 2);
    cudaMemset(a, 0, (size_t)600 * 2000 * 2);
    cudaMemset(b, 0, (size_t)2000 * 256 * 2);
    if (argc > 1 && strcmp(argv[1], "warm") == 0 && product(a, b, c, 0) == HPDL_OK) cudaDeviceSynchronize();
    cudaStreamCreate(&stream);
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    in_capture = product(a, b, c, stream);
    end = cudaStreamEndCapture(stream, &graph);
    run = end == cudaSuccess ? cudaGraphInstantiate(&exec, graph, 0) : end;
    if (run == cudaSuccess) run = cudaGraphLaunch(exec, stream);
    if (run == cudaSuccess) run = cudaStreamSynchronize(stream);
    outside = product(a, b, c, stream);
    if (outside == HPDL_OK && cudaStreamSynchronize(stream) != cudaSuccess) outside = HPDL_ERR_CUDA;
    printf("in the capture: %s; end of capture: %s; graph run: %s; outside: %s\n", hpdl_status_string(in_capture),
           cudaGetErrorString(end), cudaGetErrorString(run), hpdl_status_string(outside));
    return in_capture == HPDL_OK && end == cudaSuccess && run == cudaSuccess && outside == HPDL_OK ? 0 : 1;
}
