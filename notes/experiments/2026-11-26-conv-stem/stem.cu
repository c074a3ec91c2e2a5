/* The few-channel rung (few-mma) against cuDNN, the mma rung, AUTO and the
   few-channel CUDA-core kernel (fc, AUTO's choice where K < 32) on the stems
   and the small CNN's layers, forward, f16 and bf16 NHWC: max |err| / max |ref| against cuDNN,
   median of event-timed runs (L2 not flushed: a quick look; bench/conv has
   the published figures). Built and run by device.sh of this folder. */
#include "hpdl_cuda.cuh"
#include <algorithm>
#include <vector>

typedef struct shape { const char *name; int n, c, h, w, k, kernel, stride, pad; } shape;
static const shape k_shapes[] = {
    {"r50_stem_7x7s2", 128, 3, 224, 224, 64, 7, 2, 3},
    {"cifar_stem_3x3", 128, 3, 32, 32, 64, 3, 1, 1},
    {"small_cnn_c1_5x5", 128, 1, 28, 28, 6, 5, 1, 2},
    {"small_cnn_c3_5x5", 128, 3, 32, 32, 6, 5, 1, 0},
    {"small_cnn_c6_5x5", 128, 6, 14, 14, 16, 5, 1, 0},
    {"c4_k32_3x3_odd", 64, 4, 57, 45, 32, 3, 2, 1},
};

template <typename T> __global__ void fill(T *x, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned v = (unsigned)i * 2654435761u ^ seed * 0x9e3779b9u;
        v ^= v >> 15; v *= 0x846ca68bu; v ^= v >> 16;
        x[i] = (T)((float)(v >> 8) * (2.0f / 16777216.0f) - 1.0f);
    }
}

template <typename T> static double max_rel(const T *a, const T *b, size_t n) {
    std::vector<T> ha(n), hb(n);
    HPDL_CUDA_CHECK(cudaMemcpy(ha.data(), a, n * sizeof(T), cudaMemcpyDeviceToHost));
    HPDL_CUDA_CHECK(cudaMemcpy(hb.data(), b, n * sizeof(T), cudaMemcpyDeviceToHost));
    double err = 0, mag = 0;
    for (size_t i = 0; i < n; i++) {
        double x = (float)ha[i], y = (float)hb[i];
        if (!(fabs(x - y) <= err)) err = x != x ? INFINITY : fabs(x - y);
        mag = std::max(mag, fabs(y));
    }
    return err / mag;
}

#define FC ((hpdl_conv_algo)-1) /* the few-channel CUDA-core kernel, called directly */

template <typename T> static hpdl_status forward(hpdl_conv_algo algo, const hpdl_conv2d_params &p,
                                                 const hpdl_tensor4 &xd, const T *x, const T *w,
                                                 const hpdl_tensor4 &yd, T *y) {
    if (algo != FC) return hpdl_cuda_conv2d_forward_algo(algo, &p, &xd, x, w, &yd, y);
    hpdl__conv_geom g;
    HPDL_CHECK(hpdl__conv_geom_make(&p, &xd, &yd, x, w, y, &g));
    return hpdl__conv_launch_few_channels<T, float>(g, HPDL__CONV_FORWARD, x, w, y, (T *)NULL, 0);
}

template <typename T> static float time_ms(hpdl_conv_algo algo, const hpdl_conv2d_params &p, const hpdl_tensor4 &xd,
                                           const T *x, const T *w, const hpdl_tensor4 &yd, T *y) {
    cudaEvent_t e0, e1;
    std::vector<float> ms;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int i = 0; i < 3; i++) HPDL_CHECK(forward(algo, p, xd, x, w, yd, y));
    for (int i = 0; i < 30; i++) {
        float t;
        cudaEventRecord(e0);
        HPDL_CHECK(forward(algo, p, xd, x, w, yd, y));
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&t, e0, e1);
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

static const char *name(hpdl_conv_algo a) { return a == FC ? "fc" : hpdl_conv_algo_name(a); }

template <typename T> static void run(const char *type) {
    for (const shape &s : k_shapes) {
        hpdl_conv2d_params p = hpdl_conv2d_params_make(s.kernel, s.stride, s.pad, 1, 1);
        hpdl_tensor4 xd = hpdl_tensor4_make(s.n, s.c, s.h, s.w, HPDL_NHWC), yd, wd;
        HPDL_CHECK(hpdl_conv2d_output_desc(&p, &xd, s.k, &yd));
        HPDL_CHECK(hpdl_conv2d_filter_desc(&p, &xd, s.k, &wd));
        size_t nx = hpdl_tensor4_count(&xd), nw = hpdl_tensor4_count(&wd), ny = hpdl_tensor4_count(&yd);
        T *x, *w, *y, *ref;
        HPDL_CUDA_CHECK(cudaMalloc(&x, nx * sizeof(T))); HPDL_CUDA_CHECK(cudaMalloc(&w, nw * sizeof(T)));
        HPDL_CUDA_CHECK(cudaMalloc(&y, ny * sizeof(T))); HPDL_CUDA_CHECK(cudaMalloc(&ref, ny * sizeof(T)));
        fill<<<1024, 256>>>(x, nx, 1); fill<<<1024, 256>>>(w, nw, 2);
        double flops = 2.0 * ny * s.c * s.kernel * s.kernel;
        HPDL_CHECK(hpdl_cuda_conv2d_forward_algo(HPDL_CONV_CUDNN, &p, &xd, x, w, &yd, ref));
        float ref_ms = time_ms(HPDL_CONV_CUDNN, p, xd, x, w, yd, ref);
        printf("%-18s %-4s %-8s %9.4f ms %7.1f TFLOP/s\n", s.name, type, "cudnn", ref_ms, flops / ref_ms / 1e9);
        const hpdl_conv_algo algos[] = {HPDL_CONV_FEW_MMA, HPDL_CONV_MMA, HPDL_CONV_AUTO, FC};
        for (hpdl_conv_algo a : algos) {
            HPDL_CHECK(hpdl_cuda_poison(y, ny * sizeof(T)));
            hpdl_status st = forward(a, p, xd, x, w, yd, y);
            if (st != HPDL_OK) { printf("%-18s %-4s %-8s %s\n", s.name, type, name(a), hpdl_status_string(st)); continue; }
            HPDL_CUDA_CHECK(cudaDeviceSynchronize());
            double err = max_rel(y, ref, ny);
            float ms = time_ms(a, p, xd, x, w, yd, y);
            printf("%-18s %-4s %-8s %9.4f ms %7.1f TFLOP/s  ratio %.3f  err %.1e\n", s.name, type, name(a),
                   ms, flops / ms / 1e9, ref_ms / ms, err);
        }
        cudaFree(x); cudaFree(w); cudaFree(y); cudaFree(ref);
    }
}

int main(void) {
    run<__half>("f16");
    run<__nv_bfloat16>("bf16");
    return 0;
}
