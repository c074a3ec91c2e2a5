// A long kernel then a cooperative one, as the data-parallel step has them
// (the dW GEMM, then the update): how late the second one's first block
// starts and passes griddepcontrol.wait after the first's last block exits
// (globaltimer), launched in stream order, with programmatic dependent
// launch, and with PDL where the first kernel's blocks trigger
// (griddepcontrol.launch_dependents) before their last stretch of work.
// Also the host's cost of each kind of launch (cudaLaunchKernelExC calls
// queued back to back, and cudaFuncGetAttributes).
#include <chrono>
#include <cooperative_groups.h>
#include <cstdint>
#include <cstdio>

__device__ uint64_t stamp() { uint64_t t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }

__global__ void __launch_bounds__(128) busy(float *x, uint64_t *last_exit, int iters, int trigger) {
    float v = x[threadIdx.x];
    for (int i = 0; i < iters; i++) v = v * 0.999f + 0.001f;
    if (trigger) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    for (int i = 0; i < iters / 8; i++) v = v * 0.999f + 0.001f; /* the epilogue */
    x[blockIdx.x * blockDim.x + threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.x == 0) atomicMax((unsigned long long *)last_exit, (unsigned long long)stamp());
}

__global__ void after(const float *x, uint64_t *first_start, uint64_t *waited, float *out) {
    uint64_t t0 = stamp();
    if (threadIdx.x == 0) atomicMin((unsigned long long *)first_start, (unsigned long long)t0);
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (threadIdx.x == 0) atomicMin((unsigned long long *)waited, (unsigned long long)stamp());
    cooperative_groups::this_grid().sync();
    out[blockIdx.x * blockDim.x + threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
}

static cudaError_t launch_after(int sms, int pdl, float *x, uint64_t *first, uint64_t *waited, float *out) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = sms; cfg.blockDim = 512; cfg.attrs = attr; cfg.numAttrs = pdl ? 2 : 1;
    void *args[] = {&x, &first, &waited, &out};
    return cudaLaunchKernelExC(&cfg, (const void *)after, args);
}

int main() {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    float *x, *out;
    uint64_t *t;
    cudaMalloc(&x, 2 * sms * 1024 * sizeof(float));
    cudaMalloc(&out, 2 * sms * 1024 * sizeof(float));
    cudaMalloc(&t, 3 * sizeof(uint64_t));
    cudaMemset(x, 0, 2 * sms * 1024 * sizeof(float));
    const char *names[3] = {"stream order", "PDL, no trigger", "PDL, trigger"};
    for (int mode = 0; mode < 3; mode++) {
        double gap = 0, wait = 0;
        const int reps = 50;
        for (int r = 0; r < reps + 5; r++) {
            uint64_t init[3] = {0, ~0ull, ~0ull}, h[3];
            cudaMemcpy(t, init, sizeof init, cudaMemcpyHostToDevice);
            busy<<<2 * sms, 128>>>(x, t, 20000, mode == 2);
            cudaError_t e = launch_after(sms, mode > 0, x, t + 1, t + 2, out);
            if (e != cudaSuccess) { printf("%s: refused: %s\n", names[mode], cudaGetErrorString(e)); return 1; }
            cudaMemcpy(h, t, sizeof h, cudaMemcpyDeviceToHost);
            if (r >= 5) { gap += (double)(int64_t)(h[1] - h[0]); wait += (double)(int64_t)(h[2] - h[0]); }
        }
        printf("%-16s first block +%.2f us, past its wait +%.2f us (from the first kernel's last exit)\n", names[mode],
               gap / reps / 1e3, wait / reps / 1e3);
    }
    for (int pdl = 0; pdl < 2; pdl++) {
        const int n = 2000;
        cudaDeviceSynchronize();
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; i++) launch_after(sms, pdl, x, t + 1, t + 2, out);
        auto t1 = std::chrono::steady_clock::now();
        cudaDeviceSynchronize();
        printf("host: cooperative launch%s %.2f us each\n", pdl ? " + PDL" : "      ",
               std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
    }
    {
        const int n = 2000;
        cudaFuncAttributes fa;
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; i++) cudaFuncGetAttributes(&fa, (const void *)after);
        auto t1 = std::chrono::steady_clock::now();
        printf("host: cudaFuncGetAttributes %.2f us each\n", std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
    }
    printf("last error: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
