// Whether the runtime takes a cooperative launch with programmatic stream
// serialization, and how long a short kernel after a long one starts late
// with and without it (globaltimer stamps: the gap between the first
// kernel's last block exiting and the second's first block starting).
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdint>

__device__ uint64_t stamp() { uint64_t t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }

__global__ void busy(float *x, uint64_t *last_exit, int iters) {
    float v = x[threadIdx.x];
    for (int i = 0; i < iters; i++) v = v * 0.999f + 0.001f;
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

int main() {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    float *x, *out;
    uint64_t *t;
    cudaMalloc(&x, sms * 1024 * sizeof(float));
    cudaMalloc(&out, sms * 1024 * sizeof(float));
    cudaMalloc(&t, 3 * sizeof(uint64_t));
    cudaMemset(x, 0, sms * 1024 * sizeof(float));
    for (int mode = 0; mode < 2; mode++) {
        double gap = 0, wait = 0;
        int reps = 50, ok = 1;
        for (int r = 0; r < reps + 5; r++) {
            uint64_t init[3] = {0, ~0ull, ~0ull};
            cudaMemcpy(t, init, sizeof init, cudaMemcpyHostToDevice);
            busy<<<sms, 1024>>>(x, t, 20000);
            cudaLaunchConfig_t cfg = {};
            cudaLaunchAttribute attr[2];
            attr[0].id = cudaLaunchAttributeCooperative;
            attr[0].val.cooperative = 1;
            attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attr[1].val.programmaticStreamSerializationAllowed = 1;
            cfg.gridDim = sms; cfg.blockDim = 1024; cfg.attrs = attr; cfg.numAttrs = mode ? 2 : 1;
            uint64_t *first = t + 1, *waited = t + 2;
            void *args[] = {&x, &first, &waited, &out};
            cudaError_t e = cudaLaunchKernelExC(&cfg, (const void *)after, args);
            if (e != cudaSuccess) { printf("mode %d: launch refused: %s\n", mode, cudaGetErrorString(e)); ok = 0; break; }
            uint64_t h[3];
            cudaMemcpy(h, t, sizeof h, cudaMemcpyDeviceToHost);
            if (r >= 5) { gap += (double)(int64_t)(h[1] - h[0]); wait += (double)(int64_t)(h[2] - h[0]); }
        }
        if (ok) printf("mode %s: second kernel's first block starts %.2f us after the first's last exit, passes its wait at %.2f us\n",
                       mode ? "cooperative+PDL" : "cooperative", gap / reps / 1e3, wait / reps / 1e3);
    }
    printf("last error: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
