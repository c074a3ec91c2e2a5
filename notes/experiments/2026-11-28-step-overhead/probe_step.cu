/* What one MLP training step (784-H-10, batch b) is made of on the GPU, with
   cuBLAS and with hpdl's own GEMMs (AUTO): the step captured into a CUDA
   graph as the MLP does, its kernel nodes listed, and the graph replayed to
   time a step (median of 7 runs of `steps` replays).
   ./probe_step [f32|f16] H b [steps]   (PROBE_LIST=1 prints the kernels; link -lcuda) */
#include "hpdl_cuda.cuh"
#include <cuda.h>
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

template <typename C, typename G> static void probe(G *g, hpdl_cuda_dataset *d, int b, int steps, const char *name) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    size_t n = 0;
    std::vector<double> t;
    cudaEvent_t e0, e1;
    int k, kernels = 0;
    HPDL_CHECK(hpdl__mlp_begin(g->state, 0.01, 0, 1, 0, g->stream));
    HPDL_CHECK(hpdl__mlp_set_feed(g->state, d->images, 0, d->labels, d->perm, 0, g->stream));
    HPDL_CHECK(hpdl__cmlp_step<C>(g, b)); /* warms lazily made GEMM state up, outside the capture */
    CK(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
    HPDL_CHECK(hpdl__cmlp_step<C>(g, b));
    CK(cudaStreamEndCapture(g->stream, &graph));
    CK(cudaGraphGetNodes(graph, NULL, &n));
    std::vector<cudaGraphNode_t> nodes(n);
    CK(cudaGraphGetNodes(graph, nodes.data(), &n));
    for (size_t i = 0; i < n; i++) {
        cudaGraphNodeType type;
        CK(cudaGraphNodeGetType(nodes[i], &type));
        if (type != cudaGraphNodeTypeKernel) { if (getenv("PROBE_LIST")) printf("  node type %d\n", (int)type); continue; }
        kernels++;
        if (getenv("PROBE_LIST")) { /* driver API: library kernels (cuBLAS) come from other modules */
            CUDA_KERNEL_NODE_PARAMS p;
            const char *fn = "?";
            if (cuGraphKernelNodeGetParams(nodes[i], &p) != CUDA_SUCCESS) { printf("  (no parameters)\n"); continue; }
            if (!p.func || cuFuncGetName(&fn, p.func) != CUDA_SUCCESS) fn = "?";
            printf("  %4u x %3u  %.110s\n", p.gridDimX * p.gridDimY * p.gridDimZ, p.blockDimX * p.blockDimY, fn);
        }
    }
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (k = 0; k < 7; k++) {
        float ms;
        int s;
        HPDL_CHECK(hpdl__mlp_set_feed(g->state, d->images, 0, d->labels, d->perm, 0, g->stream));
        CK(cudaEventRecord(e0, g->stream));
        for (s = 0; s < steps; s++) CK(cudaGraphLaunch(exec, g->stream));
        CK(cudaEventRecord(e1, g->stream));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(1e3 * ms / steps);
    }
    std::sort(t.begin(), t.end());
    printf("%s,%zu,%d,%.3f\n", name, n, kernels, t[3]);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
}

int main(int argc, char **argv) {
    const char *type = argc > 1 ? argv[1] : "f16";
    int H = argc > 2 ? atoi(argv[2]) : 2048, b = argc > 3 ? atoi(argv[3]) : 32;
    int steps = argc > 4 ? atoi(argv[4]) : 60000 / b, widths[3] = {784, H, 10}, a;
    const int64_t n = 60000;
    std::vector<float> X((size_t)n * 784);
    std::vector<int32_t> y(n);
    hpdl_mlp_f32 m;
    hpdl_cuda_dataset d;
    for (size_t i = 0; i < X.size(); i++) X[i] = (float)((i * 2654435761u) % 1000) / 1000.f - 0.5f;
    for (int64_t i = 0; i < n; i++) y[i] = (int32_t)(i % 10);
    HPDL_CHECK(hpdl_mlp_create_f32(&m, 3, widths, HPDL_ACT_RELU, 1));
    HPDL_CHECK(hpdl_cuda_dataset_upload(&d, n, 784, X.data(), n, y.data(), HPDL_DATA_RESIDENT, 0));
    printf("variant,nodes,kernels,step_us  (%s H %d b %d)\n", type, H, b);
    for (a = 0; a < 2; a++) {
        hpdl_gemm_algo algo = a ? HPDL_GEMM_AUTO : HPDL_GEMM_CUBLAS;
        const char *name = a ? "own" : "cublas";
        if (!strcmp(type, "f32")) {
            hpdl_cuda_mlp_f32 g;
            HPDL_CHECK(hpdl_cuda_mlp_create_f32(&g, &m, b));
            g.algo = algo;
            probe<float>(&g, &d, b, steps, name);
            hpdl_cuda_mlp_destroy_f32(&g);
        } else {
            hpdl_cuda_mlp_f16 g;
            HPDL_CHECK(hpdl_cuda_mlp_create_f16(&g, &m, b));
            g.algo = algo;
            probe<__half>(&g, &d, b, steps, name);
            hpdl_cuda_mlp_destroy_f16(&g);
        }
    }
    hpdl_cuda_dataset_destroy(&d);
    hpdl_mlp_destroy_f32(&m);
    return 0;
}
