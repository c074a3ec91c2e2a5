/* The wgmma forward pass against the f64 CPU twin (small shapes) and
   cuDNN's best algorithm (every shape), then timed in turns with cuDNN
   (2026-11-26, from ../2026-11-26-conv-wgrad/wgrad.cu, the pass changed):
     fwd [f16|bf16] [LAYER-SUBSTRING [once]]   once: one call each, for ncu */
#include "hpdl_cuda.cuh"
#include <vector>
#include <algorithm>

struct layer { const char *name; int n, c, h, w, k, kernel, stride, pad; };
static const layer k_layers[] = {
    {"odd C16 K24 s2", 2, 16, 9, 10, 24, 3, 2, 1},   {"odd C64 K72", 3, 64, 10, 10, 72, 3, 1, 1},
    {"odd C72 K136", 1, 72, 9, 7, 136, 3, 1, 1},     {"odd 1x1 C8 5x4x3", 5, 8, 4, 3, 8, 1, 1, 0},
    {"odd C24 K40 5x5s2", 2, 24, 11, 13, 40, 5, 2, 2}, {"odd C64 K64 8x32x32", 8, 64, 32, 32, 64, 3, 1, 1},
    {"r50 conv2 3x3", 128, 64, 56, 56, 64, 3, 1, 1}, {"r50 conv3 3x3", 128, 128, 28, 28, 128, 3, 1, 1},
    {"r50 conv4 3x3", 128, 256, 14, 14, 256, 3, 1, 1}, {"r50 conv5 3x3", 128, 512, 7, 7, 512, 3, 1, 1},
    {"r50 1x1 256>64", 128, 256, 56, 56, 64, 1, 1, 0}, {"r50 1x1 64>256", 128, 64, 56, 56, 256, 1, 1, 0},
    {"r50 1x1 1024>256", 128, 1024, 14, 14, 256, 1, 1, 0}, {"r50 1x1 512>2048", 128, 512, 7, 7, 2048, 1, 1, 0},
    {"r18 l1 3x3", 128, 64, 32, 32, 64, 3, 1, 1},    {"r18 l2 3x3 s2", 128, 64, 32, 32, 128, 3, 2, 1},
    {"r18 l2 3x3", 128, 128, 16, 16, 128, 3, 1, 1},  {"r18 l3 3x3", 128, 256, 8, 8, 256, 3, 1, 1},
    {"r18 l4 3x3", 128, 512, 4, 4, 512, 3, 1, 1},    {"r18 l4 1x1 s2", 128, 256, 8, 8, 512, 1, 2, 0},
};

__global__ void fill(__half *x, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned v = (unsigned)(i * 2654435761u) ^ seed * 0x9e3779b9u;
        v ^= v >> 16; v *= 0x7feb352du; v ^= v >> 15;
        x[i] = __float2half((float)(v >> 8) * (2.0f / 16777216.0f) - 1.0f);
    }
}
__global__ void fill(__nv_bfloat16 *x, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned v = (unsigned)(i * 2654435761u) ^ seed * 0x9e3779b9u;
        v ^= v >> 16; v *= 0x7feb352du; v ^= v >> 15;
        x[i] = __float2bfloat16((float)(v >> 8) * (2.0f / 16777216.0f) - 1.0f);
    }
}
static double to_f64(__half v) { return __half2float(v); }
static double to_f64(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> static double max_rel(const std::vector<T> &a, const std::vector<double> &ref) {
    double err = 0, mag = 0;
    for (size_t i = 0; i < a.size(); i++) {
        double d = fabs(to_f64(a[i]) - ref[i]);
        err = d != d ? INFINITY : std::max(err, d);
        mag = std::max(mag, fabs(ref[i]));
    }
    return err / (mag > 0 ? mag : 1);
}

template <typename T> static float time_ms(hpdl_conv_algo algo, const hpdl_conv2d_params &p, const hpdl_tensor4 &xd,
                                           const T *x, const T *w, const hpdl_tensor4 &yd, T *y) {
    cudaEvent_t a, b;
    cudaEventCreate(&a); cudaEventCreate(&b);
    std::vector<float> t;
    for (int r = 0; r < 15; r++) {
        cudaEventRecord(a);
        HPDL_CHECK(hpdl_cuda_conv2d_forward_algo(algo, &p, &xd, x, w, &yd, y));
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms; cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

static const char *g_only = NULL;
static int g_once = 0;

template <typename T> static void run(const char *type) {
    double geo_r50 = 0; int n_r50 = 0;
    for (const layer &l : k_layers) {
        if (g_only && !strstr(l.name, g_only)) continue;
        hpdl_conv2d_params p = hpdl_conv2d_params_make(l.kernel, l.stride, l.pad, 1, 1);
        hpdl_tensor4 xd = hpdl_tensor4_make(l.n, l.c, l.h, l.w, HPDL_NHWC), yd, wd;
        HPDL_CHECK(hpdl_conv2d_output_desc(&p, &xd, l.k, &yd));
        wd = hpdl_tensor4_make(l.k, l.c, l.kernel, l.kernel, HPDL_NHWC);
        size_t nx = hpdl_tensor4_count(&xd), ny = hpdl_tensor4_count(&yd), nw = hpdl_tensor4_count(&wd);
        T *x, *w, *y, *ref;
        cudaMalloc(&x, nx * sizeof(T)); cudaMalloc(&w, nw * sizeof(T));
        cudaMalloc(&y, ny * sizeof(T)); cudaMalloc(&ref, ny * sizeof(T));
        fill<<<512, 256>>>(x, nx, 1); fill<<<512, 256>>>(w, nw, 2);
        cudaMemset(y, 0xff, ny * sizeof(T)); /* poisoned: NaN */
        hpdl_status s = hpdl_cuda_conv2d_forward_algo(HPDL_CONV_WGMMA, &p, &xd, x, w, &yd, y);
        if (s != HPDL_OK) { printf("%-22s %s: %s\n", l.name, type, hpdl_status_string(s)); continue; }
        HPDL_CHECK(hpdl_cuda_conv2d_forward_algo(HPDL_CONV_CUDNN, &p, &xd, x, w, &yd, ref));
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        if (g_once) continue;
        std::vector<T> got(ny), cud(ny);
        cudaMemcpy(got.data(), y, ny * sizeof(T), cudaMemcpyDeviceToHost);
        cudaMemcpy(cud.data(), ref, ny * sizeof(T), cudaMemcpyDeviceToHost);
        std::vector<double> cud64(ny);
        for (size_t i = 0; i < ny; i++) cud64[i] = to_f64(cud[i]);
        double err_cudnn = max_rel(got, cud64), err_cpu = -1;
        if (nx * l.k * l.kernel * l.kernel < 50000000ull) { /* the f64 twin */
            std::vector<T> hx(nx), hw(nw);
            cudaMemcpy(hx.data(), x, nx * sizeof(T), cudaMemcpyDeviceToHost);
            cudaMemcpy(hw.data(), w, nw * sizeof(T), cudaMemcpyDeviceToHost);
            std::vector<double> x64(nx), w64(nw), y64(ny);
            for (size_t i = 0; i < nx; i++) x64[i] = to_f64(hx[i]);
            for (size_t i = 0; i < nw; i++) w64[i] = to_f64(hw[i]);
            HPDL_CHECK(hpdl_conv2d_forward_f64(&p, &xd, x64.data(), w64.data(), &yd, y64.data()));
            err_cpu = max_rel(got, y64);
        }
        float ms_wg = time_ms<T>(HPDL_CONV_WGMMA, p, xd, x, w, yd, y), ms_cu = time_ms<T>(HPDL_CONV_CUDNN, p, xd, x, w, yd, ref);
        ms_wg = std::min(ms_wg, time_ms<T>(HPDL_CONV_WGMMA, p, xd, x, w, yd, y));
        ms_cu = std::min(ms_cu, time_ms<T>(HPDL_CONV_CUDNN, p, xd, x, w, yd, ref));
        double flop = 2.0 * ny * l.c * l.kernel * l.kernel;
        printf("%-22s %s  err cpu %9.2e cudnn %9.2e  wgmma %8.3f ms %6.1f TFLOP/s  cudnn %8.3f ms %6.1f  ratio %.3f\n",
               l.name, type, err_cpu, err_cudnn, ms_wg, flop / ms_wg * 1e-9, ms_cu, flop / ms_cu * 1e-9, ms_cu / ms_wg);
        if (!strncmp(l.name, "r50", 3) && l.kernel == 3) geo_r50 += log(ms_cu / ms_wg), n_r50++;
        cudaFree(x); cudaFree(w); cudaFree(y); cudaFree(ref);
    }
    printf("%s r50 3x3 forward geomean ratio to cuDNN: %.3f\n", type, exp(geo_r50 / (n_r50 ? n_r50 : 1)));
}

int main(int argc, char **argv) {
    g_only = argc > 2 ? argv[2] : NULL;
    g_once = argc > 3;
    if (argc < 2 || !strcmp(argv[1], "f16")) run<__half>("f16");
    if (argc < 2 || !strcmp(argv[1], "bf16")) run<__nv_bfloat16>("bf16");
    return 0;
}
