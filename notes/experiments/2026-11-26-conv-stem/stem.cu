/* The few-channel rung (few-mma) on the stems and the small CNN's layers, f16
   and bf16 NHWC, against cuDNN and what AUTO took before it:
     forward          few-mma, mma (AUTO's choice before for K >= 32), AUTO, and
                      fc, the few-channel CUDA-core kernel (AUTO's choice for K < 32)
     backward-filter  few-mma, AUTO, and f32-splitk, AUTO's path before it for
                      16-bit C % 8 != 0 (hpdl__conv_wgrad_in_f32)
   Each checked against cuDNN's output (max |err| / max |ref|), then timed:
   median of 30 event-timed calls after 3 warm-ups, L2 not flushed (a quick
   look; bench/conv has the published figures). Built and run by device.sh. */
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
    {"c4_k32_3x3s2_odd", 64, 4, 57, 45, 32, 3, 2, 1},
};

enum { FORWARD, BACKWARD_FILTER };
#define FC ((hpdl_conv_algo)-1)         /* forward: the few-channel CUDA-core kernel, called directly */
#define F32_SPLITK ((hpdl_conv_algo)-2) /* backward-filter: AUTO's path before few-mma, called directly */

static const char *name(hpdl_conv_algo a) {
    return a == FC ? "fc" : a == F32_SPLITK ? "f32-splitk" : hpdl_conv_algo_name(a);
}

struct layer_data {
    hpdl_conv2d_params p;
    hpdl_tensor4 xd, yd;
};

/* One pass: forward reads (x, w) into y, backward-filter (x, dy = y's buffer) into dw. */
template <typename T>
static hpdl_status call(int pass, hpdl_conv_algo algo, const layer_data &l, const T *x, const T *b, T *out) {
    if (algo == FC || algo == F32_SPLITK) {
        hpdl__conv_geom g;
        HPDL_CHECK(hpdl__conv_geom_make(&l.p, &l.xd, &l.yd, x, b, out, &g));
        if (algo == FC) return hpdl__conv_launch_few_channels<T, float>(g, HPDL__CONV_FORWARD, x, b, out, (T *)NULL, 0);
        return hpdl__conv_wgrad_in_f32<T>(g, x, b, out, 0);
    }
    if (pass == FORWARD) return hpdl_cuda_conv2d_forward_algo(algo, &l.p, &l.xd, x, b, &l.yd, out);
    return hpdl_cuda_conv2d_backward_filter_algo(algo, &l.p, &l.xd, x, &l.yd, b, out);
}

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

template <typename T>
static float time_ms(int pass, hpdl_conv_algo algo, const layer_data &l, const T *x, const T *b, T *out) {
    cudaEvent_t e0, e1;
    std::vector<float> ms;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int i = 0; i < 3; i++) HPDL_CHECK(call(pass, algo, l, x, b, out));
    for (int i = 0; i < 30; i++) {
        float t;
        cudaEventRecord(e0);
        HPDL_CHECK(call(pass, algo, l, x, b, out));
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&t, e0, e1);
        ms.push_back(t);
    }
    cudaEventDestroy(e0); cudaEventDestroy(e1);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

template <typename T> static void run_pass(int pass, const shape &s, const char *type, const layer_data &l, const T *x,
                                           const T *b, T *out, T *ref, size_t n_out) {
    static const hpdl_conv_algo forward_algos[] = {HPDL_CONV_FEW_MMA, HPDL_CONV_MMA, HPDL_CONV_AUTO, FC};
    static const hpdl_conv_algo filter_algos[] = {HPDL_CONV_FEW_MMA, HPDL_CONV_AUTO, F32_SPLITK};
    const char *pass_name = pass == FORWARD ? "fwd" : "wgrad";
    double flops = 2.0 * hpdl_tensor4_count(&l.yd) * s.c * s.kernel * s.kernel;
    HPDL_CHECK(call(pass, HPDL_CONV_CUDNN, l, x, b, ref));
    float ref_ms = time_ms(pass, HPDL_CONV_CUDNN, l, x, b, ref);
    printf("%-18s %-4s %-5s %-10s %9.4f ms %7.1f TFLOP/s\n", s.name, type, pass_name, "cudnn", ref_ms, flops / ref_ms / 1e9);
    for (int i = 0; i < (pass == FORWARD ? 4 : 3); i++) {
        hpdl_conv_algo a = pass == FORWARD ? forward_algos[i] : filter_algos[i];
        HPDL_CHECK(hpdl_cuda_poison(out, n_out * sizeof(T)));
        hpdl_status st = call(pass, a, l, x, b, out);
        if (st != HPDL_OK) {
            printf("%-18s %-4s %-5s %-10s %s\n", s.name, type, pass_name, name(a), hpdl_status_string(st));
            continue;
        }
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        double err = max_rel(out, ref, n_out);
        float ms = time_ms(pass, a, l, x, b, out);
        printf("%-18s %-4s %-5s %-10s %9.4f ms %7.1f TFLOP/s  ratio %.3f  err %.1e\n", s.name, type, pass_name, name(a),
               ms, flops / ms / 1e9, ref_ms / ms, err);
    }
}

template <typename T> static void run(const char *type) {
    for (const shape &s : k_shapes) {
        layer_data l;
        hpdl_tensor4 wd;
        l.p = hpdl_conv2d_params_make(s.kernel, s.stride, s.pad, 1, 1);
        l.xd = hpdl_tensor4_make(s.n, s.c, s.h, s.w, HPDL_NHWC);
        HPDL_CHECK(hpdl_conv2d_output_desc(&l.p, &l.xd, s.k, &l.yd));
        HPDL_CHECK(hpdl_conv2d_filter_desc(&l.p, &l.xd, s.k, &wd));
        size_t nx = hpdl_tensor4_count(&l.xd), nw = hpdl_tensor4_count(&wd), ny = hpdl_tensor4_count(&l.yd);
        T *x, *w, *dy, *out, *ref;
        HPDL_CUDA_CHECK(cudaMalloc(&x, nx * sizeof(T))); HPDL_CUDA_CHECK(cudaMalloc(&w, nw * sizeof(T)));
        HPDL_CUDA_CHECK(cudaMalloc(&dy, ny * sizeof(T)));
        HPDL_CUDA_CHECK(cudaMalloc(&out, ny * sizeof(T))); HPDL_CUDA_CHECK(cudaMalloc(&ref, ny * sizeof(T)));
        fill<<<1024, 256>>>(x, nx, 1); fill<<<1024, 256>>>(w, nw, 2); fill<<<1024, 256>>>(dy, ny, 3);
        run_pass<T>(FORWARD, s, type, l, x, w, out, ref, ny);
        run_pass<T>(BACKWARD_FILTER, s, type, l, x, dy, out, ref, nw);
        cudaFree(x); cudaFree(w); cudaFree(dy); cudaFree(out); cudaFree(ref);
    }
}

int main(void) {
    run<__half>("f16");
    run<__nv_bfloat16>("bf16");
    return 0;
}
