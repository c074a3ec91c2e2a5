/* 16-bit backward-data of few-channel layers: AUTO, the IM2COL rung (f32
   copies), MMA and cuDNN, each checked against cuDNN's dx and timed
   (events, median of 15, after 3 warm-up runs).
       nvcc -O3 -std=c++17 -arch=sm_90a -I<tree> -DHPDL_HAVE_CUDNN stem_dgrad.cu -lcublas -lcublasLt -lcudnn -ldl
   Prints: layer, type, rung, ms, TFLOP/s, max|dx - cuDNN's| / max|cuDNN's|. */
#include "hpdl_cuda.cuh"

#include <algorithm>
#include <vector>

struct layer { const char *name; int n, c, h, w, k, kernel, stride, pad; };

template <typename T> static void fill(T *d, size_t n, unsigned seed) {
    std::vector<T> h(n);
    hpdl_rng rng;
    hpdl_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) h[i] = (T)(float)(2.0 * hpdl_rng_uniform(&rng) - 1.0);
    HPDL_CHECK(hpdl_cuda_to_device(d, h.data(), n * sizeof(T), 0));
}

template <typename T> static std::vector<float> host(const T *d, size_t n) {
    std::vector<T> h(n);
    std::vector<float> f(n);
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    HPDL_CHECK(hpdl_cuda_to_host(h.data(), d, n * sizeof(T), 0));
    for (size_t i = 0; i < n; i++) f[i] = (float)h[i];
    return f;
}

template <typename T> static void run_layer(const layer &l, const char *type) {
    const hpdl_conv2d_params p = hpdl_conv2d_params_make(l.kernel, l.stride, l.pad, 1, 1);
    hpdl_tensor4 xd = hpdl_tensor4_make(l.n, l.c, l.h, l.w, HPDL_NHWC), yd, wd;
    HPDL_CHECK(hpdl_conv2d_output_desc(&p, &xd, l.k, &yd));
    HPDL_CHECK(hpdl_conv2d_filter_desc(&p, &xd, l.k, &wd));
    const size_t nx = hpdl_tensor4_count(&xd), ny = hpdl_tensor4_count(&yd), nw = hpdl_tensor4_count(&wd);
    const double flop = 2.0 * yd.n * yd.h * yd.w * (double)l.k * l.c * l.kernel * l.kernel;
    T *dy, *w, *dx, *ref;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dy, ny * sizeof(T)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&w, nw * sizeof(T)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dx, nx * sizeof(T)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&ref, nx * sizeof(T)));
    fill(dy, ny, 1);
    fill(w, nw, 2);
    HPDL_CHECK(hpdl_cuda_conv2d_backward_data_algo(HPDL_CONV_CUDNN, &p, &yd, dy, w, &xd, ref));
    const std::vector<float> want = host(ref, nx);
    float scale = 0;
    for (float v : want) scale = std::max(scale, std::fabs(v));
    const hpdl_conv_algo algos[] = {HPDL_CONV_AUTO, HPDL_CONV_IM2COL, HPDL_CONV_MMA, HPDL_CONV_CUDNN};
    cudaEvent_t a, b;
    HPDL_CUDA_CHECK(cudaEventCreate(&a));
    HPDL_CUDA_CHECK(cudaEventCreate(&b));
    for (hpdl_conv_algo algo : algos) {
        HPDL_CHECK(hpdl_cuda_poison(dx, nx * sizeof(T)));
        hpdl_status s = hpdl_cuda_conv2d_backward_data_algo(algo, &p, &yd, dy, w, &xd, dx);
        if (s != HPDL_OK) { printf("%s,%s,%s,%s\n", l.name, type, hpdl_conv_algo_name(algo), hpdl_status_string(s)); continue; }
        const std::vector<float> got = host(dx, nx);
        float err = 0;
        for (size_t i = 0; i < nx; i++) err = std::max(err, std::fabs(got[i] - want[i]));
        if (!(err <= err)) err = INFINITY;
        std::vector<float> ms;
        for (int rep = 0; rep < 18; rep++) {
            HPDL_CUDA_CHECK(cudaEventRecord(a));
            HPDL_CHECK(hpdl_cuda_conv2d_backward_data_algo(algo, &p, &yd, dy, w, &xd, dx));
            HPDL_CUDA_CHECK(cudaEventRecord(b));
            HPDL_CUDA_CHECK(cudaEventSynchronize(b));
            float t = 0;
            HPDL_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
            if (rep >= 3) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const float med = ms[ms.size() / 2];
        printf("%s,%s,%s,%.4f,%.2f,%.2e\n", l.name, type, hpdl_conv_algo_name(algo), med, flop / med / 1e9,
               err / scale);
    }
    hpdl_cuda_free(dy); hpdl_cuda_free(w); hpdl_cuda_free(dx); hpdl_cuda_free(ref);
}

int main(void) {
    if (!hpdl_cuda_available()) { puts("no GPU"); return 0; }
    const layer layers[] = {
        {"r50_stem_7x7s2", 128, 3, 224, 224, 64, 7, 2, 3},
        {"resnet18_cifar_stem_3x3", 128, 3, 32, 32, 64, 3, 1, 1},
        {"small_cnn_conv2_5x5_6to16", 128, 6, 14, 14, 16, 5, 1, 0},
        {"small_cnn_conv1_5x5_3to6", 128, 3, 32, 32, 6, 5, 1, 0},
    };
    puts("layer,type,rung,ms,tflops,rel_err");
    for (const layer &l : layers) {
        run_layer<__half>(l, "f16");
        run_layer<__nv_bfloat16>(l, "bf16");
    }
    return 0;
}
