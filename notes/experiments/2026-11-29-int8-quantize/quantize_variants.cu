/* The int8 MLP's input quantisation (10000 x 784 floats, bench/quantize's
   test-set batch) three ways, 2026-11-29: the library's hpdl__qquantize
   (one element a thread, a 64-bit flat index split by / and %), the same
   arithmetic with rows and columns on a 2-D grid (32-bit indices), and
   that with four columns a thread (float4 loads, 4-byte stores). Each
   variant's bytes are compared with the library's; median of 50, events.

       nvcc -std=c++17 -O3 -I. -gencode arch=compute_90a,code=sm_90a \
           notes/experiments/2026-11-29-int8-quantize/quantize_variants.cu -o build/q/quantize_variants -lcublas -lcublasLt -ldl */
#include "hpdl_cuda.cuh"

#include <algorithm>
#include <vector>

static __device__ __forceinline__ int8_t quantize_one(float x, hpdl_quant_params p) {
    double q = x != x ? (double)p.zero_point : round((double)x / p.scale) + p.zero_point;
    return (int8_t)(q < HPDL_QUANT_QMIN ? HPDL_QUANT_QMIN : q > HPDL_QUANT_QMAX ? HPDL_QUANT_QMAX : q);
}

__global__ void quantize_2d(int rows, int cols, const float *X, int ldx, hpdl_quant_params p, int8_t *Q, int ldq) {
    for (int r = (int)blockIdx.y; r < rows; r += (int)gridDim.y)
        for (int c = (int)(blockIdx.x * blockDim.x + threadIdx.x); c < cols; c += (int)(gridDim.x * blockDim.x))
            Q[(size_t)r * ldq + c] = quantize_one(X[(size_t)r * ldx + c], p);
}

__global__ void quantize_2d_vec4(int rows, int cols, const float *X, int ldx, hpdl_quant_params p, int8_t *Q, int ldq) {
    for (int r = (int)blockIdx.y; r < rows; r += (int)gridDim.y)
        for (int c = 4 * (int)(blockIdx.x * blockDim.x + threadIdx.x); c < cols; c += 4 * (int)(gridDim.x * blockDim.x)) {
            const float4 x = *(const float4 *)(X + (size_t)r * ldx + c);
            char4 q = make_char4(quantize_one(x.x, p), quantize_one(x.y, p), quantize_one(x.z, p), quantize_one(x.w, p));
            *(char4 *)(Q + (size_t)r * ldq + c) = q;
        }
}

struct job { int variant, rows, cols; const float *X; hpdl_quant_params p; int8_t *Q; };

static void run(const job &j) {
    const dim3 grid2((unsigned)((j.cols + 255) / 256), (unsigned)std::min(j.rows, 65535));
    const dim3 grid4((unsigned)((j.cols / 4 + 255) / 256), (unsigned)std::min(j.rows, 65535));
    if (j.variant == 0) HPDL_CHECK(hpdl_cuda_quant_quantize_f32(j.rows, j.cols, j.X, j.cols, j.p, j.Q, j.cols, 0));
    if (j.variant == 1) quantize_2d<<<grid2, 256>>>(j.rows, j.cols, j.X, j.cols, j.p, j.Q, j.cols);
    if (j.variant == 2) quantize_2d_vec4<<<grid4, 256>>>(j.rows, j.cols, j.X, j.cols, j.p, j.Q, j.cols);
}

static double median_ms(const job &j) {
    cudaEvent_t a, b;
    std::vector<double> t;
    HPDL_CUDA_CHECK(cudaEventCreate(&a));
    HPDL_CUDA_CHECK(cudaEventCreate(&b));
    run(j);
    for (int k = 0; k < 50; k++) {
        float ms = 0;
        HPDL_CUDA_CHECK(cudaEventRecord(a));
        run(j);
        HPDL_CUDA_CHECK(cudaEventRecord(b));
        HPDL_CUDA_CHECK(cudaEventSynchronize(b));
        HPDL_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main() {
    const int rows = 10000, cols = 784;
    const char *names[] = {"library (flat 64-bit index)", "2-D grid", "2-D grid, 4 columns a thread"};
    std::vector<float> X((size_t)rows * cols);
    hpdl_rng r;
    hpdl_quant_params p;
    float *dX;
    int8_t *dQ[3];
    if (!hpdl_cuda_available()) {
        printf("quantize_variants: skipped, " HPDL_CUDA_NO_GPU "\n");
        return 1;
    }
    hpdl_rng_seed(&r, 9);
    for (size_t i = 0; i < X.size(); i++) X[i] = (float)(hpdl_rng_uniform(&r) * 2.8 - 0.8);
    HPDL_CHECK(hpdl_quant_params_from_range(-0.8, 2.0, 0, &p));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dX, X.size() * 4));
    HPDL_CUDA_CHECK(cudaMemcpy(dX, X.data(), X.size() * 4, cudaMemcpyHostToDevice));
    std::vector<int8_t> want(X.size()), got(X.size());
    for (int v = 0; v < 3; v++) {
        HPDL_CHECK(hpdl_cuda_alloc((void **)&dQ[v], X.size()));
        job j = {v, rows, cols, dX, p, dQ[v]};
        const double ms = median_ms(j);
        HPDL_CUDA_CHECK(cudaMemcpy(v ? got.data() : want.data(), dQ[v], X.size(), cudaMemcpyDeviceToHost));
        printf("%-30s %8.4f ms  %6.0f GB/s  %s\n", names[v], ms, X.size() * 5.0 / (ms * 1e6),
               v == 0 ? "(reference)" : got == want ? "same bytes" : "BYTES DIFFER");
    }
    return 0;
}
