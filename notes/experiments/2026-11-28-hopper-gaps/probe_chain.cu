/* What programmatic dependent launch saves at each kernel boundary of a chain like the MLP
   step's: 12 dependent kernels (each reads what the one before wrote: y = 1.0001 x + 1 over n
   floats), captured into a CUDA graph and replayed, launched plainly or with
   cudaLaunchAttributeProgrammaticStreamSerialization (each kernel lets the next start as it
   begins and waits for the one before before reading). Prints microseconds per chain (median
   of replays) for n = 2^14 (a few blocks) to 2^22 (a full wave and more); the final values
   of both variants must agree. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

template <bool PDL> __global__ void step(const float *x, float *y, int n) {
    if (PDL) {
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
        asm volatile("griddepcontrol.wait;" ::: "memory");
    }
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 1.0001f * x[i] + 1.0f;
}

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

template <bool PDL> static void launch(float *a, float *b, int n, cudaStream_t s) {
    cudaLaunchConfig_t cfg = cudaLaunchConfig_t();
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3((unsigned)((n + 255) / 256 < 1056 ? (n + 255) / 256 : 1056));
    cfg.blockDim = dim3(256);
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = PDL ? 1 : 0;
    for (int k = 0; k < 12; k++) CHECK(cudaLaunchKernelEx(&cfg, step<PDL>, (const float *)(k % 2 ? b : a), k % 2 ? a : b, n));
}

template <bool PDL> static double chain_us(float *a, float *b, int n, cudaStream_t s, float *out) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaEvent_t e0, e1;
    float ms[50];
    CHECK(cudaMemset(a, 0, n * sizeof(float)));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    launch<PDL>(a, b, n, s);
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    for (int r = 0; r < 5; r++) CHECK(cudaGraphLaunch(exec, s));
    for (int r = 0; r < 50; r++) {
        CHECK(cudaEventRecord(e0, s));
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaEventRecord(e1, s));
        CHECK(cudaEventSynchronize(e1));
        CHECK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    for (int i = 0; i < 50; i++)
        for (int j = i + 1; j < 50; j++)
            if (ms[j] < ms[i]) { float t = ms[i]; ms[i] = ms[j]; ms[j] = t; }
    CHECK(cudaMemcpy(out, a, sizeof(float), cudaMemcpyDeviceToHost));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return 1e3 * ms[25];
}

int main() {
    cudaStream_t s;
    float *a, *b;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMalloc(&a, (1 << 22) * sizeof(float)));
    CHECK(cudaMalloc(&b, (1 << 22) * sizeof(float)));
    printf("n,plain_us,pdl_us,saved_per_boundary_us,same\n");
    for (int n = 1 << 14; n <= 1 << 22; n <<= 2) {
        float x0, x1;
        double plain = chain_us<false>(a, b, n, s, &x0), pdl = chain_us<true>(a, b, n, s, &x1);
        printf("%d,%.2f,%.2f,%.2f,%d\n", n, plain, pdl, (plain - pdl) / 11, x0 == x1);
    }
    return 0;
}
