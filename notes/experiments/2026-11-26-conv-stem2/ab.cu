/* A/B of the few-channel rung: the kernels before the double-buffered patch
   (fm_before.cuh, commit 8113027) against the header's (cp.async into two
   buffers), and cuDNN, on the stems, f16 and bf16 NHWC, forward and
   backward-filter. r50_stem_odd_w has W C odd: its patch takes the plain-load
   path (no 4-byte pairs). Each run is checked against cuDNN (max |err| /
   max |ref|) and the two few-mma outputs against each other (forward: the
   same sums in the same order, so 0 expected); times are medians of 30
   event-timed calls after 3 warm-ups, L2 not flushed, measured twice in turns
   (before, after, before, after). Built and run by device.sh. */
#include "hpdl_cuda.cuh"
#include "notes/experiments/2026-11-26-conv-stem2/fm_before.cuh"
#include <algorithm>
#include <vector>

typedef struct shape { const char *name; int n, c, h, w, k, kernel, stride, pad; } shape;
static const shape k_shapes[] = {
    {"r50_stem_7x7s2", 128, 3, 224, 224, 64, 7, 2, 3},
    {"r50_stem_odd_w", 128, 3, 223, 223, 64, 7, 2, 3},
    {"cifar_stem_3x3", 128, 3, 32, 32, 64, 3, 1, 1},
};

enum { FORWARD, BACKWARD_FILTER };
enum impl { CUDNN, BEFORE, AFTER };
static const char *const k_impl_names[] = {"cudnn", "before", "after"};

struct layer_data {
    hpdl_conv2d_params p;
    hpdl_tensor4 xd, yd;
};

/* One pass: forward reads (x, w) into y, backward-filter (x, dy) into dw. */
template <typename T> static hpdl_status call(int pass, impl which, const layer_data &l, const T *x, const T *b, T *out) {
    if (which == BEFORE) {
        hpdl__conv_geom g;
        HPDL_CHECK(hpdl__conv_geom_make(&l.p, &l.xd, &l.yd, x, b, out, &g));
        return fm_before_run<T>(g, pass == FORWARD ? HPDL__CONV_FORWARD : HPDL__CONV_FILTER_GRAD, x, b, out, 0);
    }
    hpdl_conv_algo algo = which == CUDNN ? HPDL_CONV_CUDNN : HPDL_CONV_FEW_MMA;
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

/* max |a - b| / max |b|; NaN anywhere gives infinity. */
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
    return mag > 0 ? err / mag : err;
}

template <typename T> static float time_ms(int pass, impl which, const layer_data &l, const T *x, const T *b, T *out) {
    cudaEvent_t e0, e1;
    std::vector<float> ms;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int i = 0; i < 3; i++) HPDL_CHECK(call(pass, which, l, x, b, out));
    for (int i = 0; i < 30; i++) {
        float t;
        cudaEventRecord(e0);
        HPDL_CHECK(call(pass, which, l, x, b, out));
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&t, e0, e1);
        ms.push_back(t);
    }
    cudaEventDestroy(e0); cudaEventDestroy(e1);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

/* outs[i]: implementation i's output buffer. */
template <typename T>
static void run_pass(int pass, const shape &s, const char *type, const layer_data &l, const T *x, const T *b, T *outs[3],
                     size_t n_out) {
    const char *pass_name = pass == FORWARD ? "fwd" : "wgrad";
    const double flops = 2.0 * hpdl_tensor4_count(&l.yd) * s.c * s.kernel * s.kernel;
    for (int i = 0; i < 3; i++) {
        HPDL_CHECK(hpdl_cuda_poison(outs[i], n_out * sizeof(T)));
        hpdl_status st = call(pass, (impl)i, l, x, b, outs[i]);
        if (st != HPDL_OK) {
            printf("%-16s %-4s %-5s %-7s %s\n", s.name, type, pass_name, k_impl_names[i], hpdl_status_string(st));
            return;
        }
    }
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    printf("%-16s %-4s %-5s err before %.1e after %.1e (vs cudnn), after vs before %.1e\n", s.name, type, pass_name,
           max_rel(outs[BEFORE], outs[CUDNN], n_out), max_rel(outs[AFTER], outs[CUDNN], n_out),
           max_rel(outs[AFTER], outs[BEFORE], n_out));
    float ms[3] = {time_ms(pass, CUDNN, l, x, b, outs[CUDNN]), 0, 0};
    for (int round = 0; round < 2; round++) {
        for (int i = BEFORE; i <= AFTER; i++) ms[i] = time_ms(pass, (impl)i, l, x, b, outs[i]);
        printf("%-16s %-4s %-5s round %d: cudnn %.4f ms  before %.4f ms (%.1f TFLOP/s, %.3f of cudnn)  after %.4f ms "
               "(%.1f TFLOP/s, %.3f of cudnn, %.2fx before)\n",
               s.name, type, pass_name, round, ms[CUDNN], ms[BEFORE], flops / ms[BEFORE] / 1e9, ms[CUDNN] / ms[BEFORE],
               ms[AFTER], flops / ms[AFTER] / 1e9, ms[CUDNN] / ms[AFTER], ms[BEFORE] / ms[AFTER]);
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
        T *x, *w, *dy, *outs[3];
        HPDL_CUDA_CHECK(cudaMalloc(&x, nx * sizeof(T)));
        HPDL_CUDA_CHECK(cudaMalloc(&w, nw * sizeof(T)));
        HPDL_CUDA_CHECK(cudaMalloc(&dy, ny * sizeof(T)));
        for (int i = 0; i < 3; i++) HPDL_CUDA_CHECK(cudaMalloc(&outs[i], ny * sizeof(T)));
        fill<<<1024, 256>>>(x, nx, 1); fill<<<1024, 256>>>(w, nw, 2); fill<<<1024, 256>>>(dy, ny, 3);
        run_pass<T>(FORWARD, s, type, l, x, w, outs, ny);
        run_pass<T>(BACKWARD_FILTER, s, type, l, x, dy, outs, nw);
        cudaFree(x); cudaFree(w); cudaFree(dy);
        for (int i = 0; i < 3; i++) cudaFree(outs[i]);
    }
}

int main(void) {
    run<__half>("f16");
    run<__nv_bfloat16>("bf16");
    return 0;
}
