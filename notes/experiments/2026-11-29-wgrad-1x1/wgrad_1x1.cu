/* A 1x1 stride-1 convolution's backward-filter is one GEMM: dw [K x C] =
   dy^T [K x NPQ] x [NPQ x C] (NHWC: dy and x are row-major, NPQ rows).
   bench/conv's wgmma rung reads 0.61-0.87 of cuDNN on ResNet-50's 1x1
   layers; this times, on the same layers at batch 128, f16: the conv
   rungs (WGMMA, AUTO), hpdl_cuda_gemm AUTO on the GEMM view, cuBLAS on it,
   and cuDNN. Each checked against cuDNN's dw (max|err| / max|ref|), then
   timed with events, median of 15 after 3 warm-ups, L2 not flushed.
       nvcc -O3 -std=c++17 -arch=sm_90a -I<tree> -DHPDL_HAVE_CUDNN wgrad_1x1.cu -lcublas -lcublasLt -lcudnn -ldl
   Prints: layer, variant, ms, TFLOP/s, error. */
#include "hpdl_cuda.cuh"

#include <algorithm>
#include <functional>
#include <vector>

struct layer { const char *name; int n, c, h, k; };

static std::vector<float> host(const __half *d, size_t n) {
    std::vector<__half> h(n);
    std::vector<float> f(n);
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    HPDL_CHECK(hpdl_cuda_to_host(h.data(), d, n * sizeof(__half), 0));
    for (size_t i = 0; i < n; i++) f[i] = (float)h[i];
    return f;
}

static void fill(__half *d, size_t n, unsigned seed) {
    std::vector<__half> h(n);
    hpdl_rng rng;
    hpdl_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) h[i] = (__half)(float)(2.0 * hpdl_rng_uniform(&rng) - 1.0);
    HPDL_CHECK(hpdl_cuda_to_device(d, h.data(), n * sizeof(__half), 0));
}

static void run_layer(const layer &l) {
    const hpdl_conv2d_params p = hpdl_conv2d_params_make(1, 1, 0, 1, 1);
    hpdl_tensor4 xd = hpdl_tensor4_make(l.n, l.c, l.h, l.h, HPDL_NHWC), yd;
    HPDL_CHECK(hpdl_conv2d_output_desc(&p, &xd, l.k, &yd));
    const int rows = l.n * l.h * l.h;
    const size_t nx = (size_t)rows * l.c, ny = (size_t)rows * l.k, nw = (size_t)l.k * l.c;
    const double flop = 2.0 * rows * (double)l.k * l.c;
    __half *x, *dy, *dw, *ref;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&x, nx * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dy, ny * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dw, nw * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&ref, nw * 2));
    fill(x, nx, 1);
    fill(dy, ny, 2);
    HPDL_CHECK(hpdl_cuda_conv2d_backward_filter_algo(HPDL_CONV_CUDNN, &p, &xd, x, &yd, dy, ref));
    const std::vector<float> want = host(ref, nw);
    float scale = 0;
    for (float v : want) scale = std::max(scale, std::fabs(v));
    /* row-major dw [K x C] = dy^T x: A = dy [rows x K] transposed, B = x [rows x C]. */
    auto gemm = [&](hpdl_gemm_algo a) {
        return hpdl_cuda_gemm_algo(a, HPDL_TRANS, HPDL_NO_TRANS, l.k, l.c, rows, 1.0f, dy, l.k, x, l.c, 0.0f, dw, l.c);
    };
    auto conv = [&](hpdl_conv_algo a) { return hpdl_cuda_conv2d_backward_filter_algo(a, &p, &xd, x, &yd, dy, dw); };
    const std::pair<const char *, std::function<hpdl_status()>> variants[] = {
        {"conv_wgmma", [&] { return conv(HPDL_CONV_WGMMA); }},
        {"conv_auto", [&] { return conv(HPDL_CONV_AUTO); }},
        {"gemm_auto", [&] { return gemm(HPDL_GEMM_AUTO); }},
        {"gemm_wgmma", [&] { return gemm(HPDL_GEMM_WGMMA); }},
        {"gemm_persistent", [&] { return gemm(HPDL_GEMM_WGMMA_PERSISTENT); }},
        {"gemm_cublas", [&] { return gemm(HPDL_GEMM_CUBLAS); }},
        {"cudnn", [&] { return conv(HPDL_CONV_CUDNN); }},
    };
    cudaEvent_t a, b;
    HPDL_CUDA_CHECK(cudaEventCreate(&a));
    HPDL_CUDA_CHECK(cudaEventCreate(&b));
    for (const auto &v : variants) {
        HPDL_CHECK(hpdl_cuda_poison(dw, nw * 2));
        hpdl_status s = v.second();
        if (s != HPDL_OK) { printf("%s,%s,%s\n", l.name, v.first, hpdl_status_string(s)); continue; }
        const std::vector<float> got = host(dw, nw);
        float err = 0;
        for (size_t i = 0; i < nw; i++) err = std::max(err, std::fabs(got[i] - want[i]));
        if (!(err <= err)) err = INFINITY;
        std::vector<float> ms;
        for (int rep = 0; rep < 18; rep++) {
            HPDL_CUDA_CHECK(cudaEventRecord(a));
            HPDL_CHECK(v.second());
            HPDL_CUDA_CHECK(cudaEventRecord(b));
            HPDL_CUDA_CHECK(cudaEventSynchronize(b));
            float t = 0;
            HPDL_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
            if (rep >= 3) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const float med = ms[ms.size() / 2];
        printf("%s,%s,%.4f,%.1f,%.2e\n", l.name, v.first, med, flop / med / 1e9, err / scale);
    }
    hpdl_cuda_free(x); hpdl_cuda_free(dy); hpdl_cuda_free(dw); hpdl_cuda_free(ref);
}

int main(void) {
    if (!hpdl_cuda_available()) { puts("no GPU"); return 0; }
    const layer layers[] = {{"r50_conv2_1x1_256to64", 128, 256, 56, 64},
                            {"r50_conv2_1x1_64to256", 128, 64, 56, 256},
                            {"r50_conv4_1x1_1024to256", 128, 1024, 14, 256},
                            {"r50_conv5_1x1_512to2048", 128, 512, 7, 2048}};
    puts("layer,variant,ms,tflops,rel_err");
    for (const layer &l : layers) run_layer(l);
    return 0;
}
