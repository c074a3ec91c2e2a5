/* ResNet-18's convolutions (CIFAR form, 3x32x32, batch 256) one by one
   (2026-11-27): hpdl's int8 convolution (AUTO, as the quantized CNN runs
   it), hpdl's f16 forward (AUTO) and cuDNN's f16 and int8 forwards (its
   fastest algorithm; int8 in NHWC with int8 output) timed in turns, median
   of 50, no L2 flush. Prints ms per layer, TOPS (2 x MACs) and the int8 /
   f16 speed-ups, then the sums over the 20 convolutions.

       nvcc -std=c++17 -O3 -I. -DHPDL_HAVE_CUDNN -gencode arch=compute_90a,code=sm_90a \
           notes/experiments/2026-11-27-int8-layers/layers.cu -o build/int8_vs_f16 -lcublas -lcudnn -ldl
       build/int8_vs_f16 [batch] [layer name: only that one, once each (for ncu)] */
#include "hpdl_cuda.cuh"

#include <vector>

struct layer {
    const char *name;
    int C, H, K, R, stride, pad, count; /* square images H x H; count: times in ResNet-18 */
};

struct q_run { /* hpdl's int8 convolution */
    hpdl__conv_geom geo;
    const int8_t *x, *wt;
    const int32_t *wsum, *wtap;
    int ldw;
    const hpdl_cuda_quant_output *o;
    int8_t *y;
};

struct h_run { /* hpdl's or cuDNN's f16 forward */
    hpdl_conv_algo algo;
    hpdl_conv2d_params p;
    hpdl_tensor4 xd, yd;
    const __half *x, *w;
    __half *y;
};

struct c8_run { /* cuDNN's int8 forward */
    cudnnHandle_t h;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t algo;
    const int8_t *x, *w;
    int8_t *y;
    void *ws;
    size_t ws_bytes;
    int ok;
};

static void run_q(void *ctx, cudaStream_t stream) {
    q_run *c = (q_run *)ctx;
    HPDL_CHECK(hpdl__qconv_run<int8_t>(HPDL_QUANT_AUTO, c->geo, c->x, -128, c->wt, c->ldw, c->wsum, c->wtap, NULL, c->o,
                                       HPDL__QOUT_REQUANT_I8, c->y, stream));
}

static void run_h(void *ctx, cudaStream_t stream) {
    h_run *c = (h_run *)ctx;
    HPDL_CHECK(hpdl_cuda_conv2d_forward_algo<__half>(c->algo, &c->p, &c->xd, c->x, c->w, &c->yd, c->y, stream));
}

static void run_c8(void *ctx, cudaStream_t stream) {
    c8_run *c = (c8_run *)ctx;
    const float alpha = 0.01f, beta = 0.0f;
    cudnnSetStream(c->h, stream);
    if (cudnnConvolutionForward(c->h, &alpha, c->xd, c->x, c->wd, c->w, c->cd, c->algo, c->ws, c->ws_bytes, &beta, c->yd,
                                c->y) != CUDNN_STATUS_SUCCESS)
        c->ok = 0;
}

template <typename T> static T *upload(const std::vector<T> &v) {
    T *d = NULL;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d, v.size() * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

/* cuDNN's int8 NHWC forward for the layer; ok = 0 where cuDNN has none. */
static void c8_setup(c8_run *c, const layer &l, int batch, int P, const int8_t *x, const int8_t *w, int8_t *y) {
    int returned = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    void *shared_ws = NULL;
    size_t shared_bytes = 0;
    c->ok = 0;
    c->ws = NULL;
    HPDL_CHECK(hpdl__cudnn_handle(&c->h, &shared_ws, &shared_bytes));
    cudnnCreateTensorDescriptor(&c->xd);
    cudnnCreateTensorDescriptor(&c->yd);
    cudnnCreateFilterDescriptor(&c->wd);
    cudnnCreateConvolutionDescriptor(&c->cd);
    if (l.C % 4 != 0) return; /* cuDNN's int8 needs channels a multiple of 4 */
    cudnnSetTensor4dDescriptor(c->xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_INT8, batch, l.C, l.H, l.H);
    cudnnSetTensor4dDescriptor(c->yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_INT8, batch, l.K, P, P);
    cudnnSetFilter4dDescriptor(c->wd, CUDNN_DATA_INT8, CUDNN_TENSOR_NHWC, l.K, l.C, l.R, l.R);
    cudnnSetConvolution2dDescriptor(c->cd, l.pad, l.pad, l.stride, l.stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_INT32);
    if (cudnnGetConvolutionForwardAlgorithm_v7(c->h, c->xd, c->wd, c->cd, c->yd, 8, &returned, perf) != CUDNN_STATUS_SUCCESS)
        return;
    for (int i = 0; i < returned; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
        c->algo = perf[i].algo;
        c->ws_bytes = perf[i].memory;
        if (c->ws_bytes) HPDL_CHECK(hpdl_cuda_alloc(&c->ws, c->ws_bytes));
        c->x = x; c->w = w; c->y = y; c->ok = 1;
        run_c8(c, 0);
        if (cudaDeviceSynchronize() == cudaSuccess && c->ok) return;
        c->ok = 0;
    }
}

/* One layer: ms[0..3] = int8 hpdl, f16 hpdl, f16 cuDNN, int8 cuDNN (0: none), times its count. */
static void time_layer(const layer &l, int batch, hpdl_rng *r, int once, double ms[4]) {
    hpdl_conv2d_params p = hpdl_conv2d_params_make(l.R, l.stride, l.pad, 1, 1);
    hpdl_tensor4 xd = hpdl_tensor4_make(batch, l.C, l.H, l.H, HPDL_NHWC), yd;
    const int taps = l.R * l.R, K = taps * l.C;
    HPDL_CHECK(hpdl_conv2d_output_desc(&p, &xd, l.K, &yd));
    const size_t nx = hpdl_tensor4_count(&xd), ny = hpdl_tensor4_count(&yd);
    std::vector<int8_t> x(nx), w((size_t)K * l.K);
    std::vector<__half> xh(nx), wh(w.size());
    std::vector<int32_t> m0(l.K), bias(l.K);
    std::vector<int> shift(l.K);
    for (size_t i = 0; i < nx; i++) x[i] = (int8_t)((int)hpdl_rng_below(r, 256) - 128);
    for (size_t i = 0; i < w.size(); i++) w[i] = (int8_t)((int)hpdl_rng_below(r, 256) - 128);
    for (size_t i = 0; i < nx; i++) xh[i] = __float2half(x[i] / 128.0f);
    for (size_t i = 0; i < w.size(); i++) wh[i] = __float2half(w[i] / 128.0f);
    for (int j = 0; j < l.K; j++) {
        HPDL_CHECK(hpdl_quant_multiplier(3.0 * 127.0 / (128.0 * 128.0 * sqrt((double)K)), &m0[j], &shift[j]));
        bias[j] = (int32_t)hpdl_rng_below(r, 20001) - 10000;
    }
    hpdl_quant_output o = {bias.data(), m0.data(), shift.data(), 1, -128, 1};
    hpdl_cuda_quant_output d;
    HPDL_CHECK(hpdl_cuda_quant_output_create(&d, &o, l.K));
    int8_t *dx = upload(x), *dw = upload(w), *wt, *dy, *dy8;
    __half *dxh = upload(xh), *dwh = upload(wh), *dyh, *dyc;
    int32_t *wsum, *wtap = NULL;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&wt, (size_t)l.K * hpdl__qconv_ldw(K)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&wsum, (size_t)l.K * (1 + taps) * sizeof(int32_t)));
    if (hpdl__qconv_has_taps(taps, l.C)) wtap = wsum + l.K;
    HPDL_CHECK(hpdl__qconv_filter(taps, l.C, l.K, dw, wt, wsum, wtap, 0));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dy, ny));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dy8, ny));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dyh, ny * 2));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dyc, ny * 2));
    q_run q;
    HPDL_CHECK(hpdl__quant_conv_geom(&p, &xd, dx, -128, wt, &yd, dy, &q.geo));
    q.x = dx; q.wt = wt; q.wsum = wsum; q.wtap = wtap; q.ldw = hpdl__qconv_ldw(K); q.o = &d; q.y = dy;
    h_run h = {HPDL_CONV_AUTO, p, xd, yd, dxh, dwh, dyh}, hc = {HPDL_CONV_CUDNN, p, xd, yd, dxh, dwh, dyc};
    c8_run c8;
    c8_setup(&c8, l, batch, yd.h, dx, dw, dy8);
    void *ctxs[4] = {&q, &h, &hc, &c8};
    hpdl_cuda_work_fn fns[4] = {run_q, run_h, run_h, run_c8};
    run_q(&q, 0); run_h(&h, 0); run_h(&hc, 0);
    HPDL_CUDA_CHECK(cudaDeviceSynchronize());
    ms[3] = 0;
    if (once) { /* one call each, for a profiler */
        if (c8.ok) run_c8(&c8, 0);
        HPDL_CUDA_CHECK(cudaDeviceSynchronize());
        return;
    }
    HPDL_CHECK(hpdl_cuda_time_interleaved_ms(c8.ok ? 4 : 3, fns, ctxs, 0, 5, 50, NULL, ms));
    if (!c8.ok) ms[3] = 0;
    const double tops = 2.0 * (double)ny * K / 1e9;
    printf("%-5s C %3d %2dx%-2d K %3d %dx%d/%d x%d | int8 %7.4f ms %6.1f TOPS | f16 %7.4f ms %6.1f | cudnn f16 %7.4f %6.1f | "
           "cudnn int8 ",
           l.name, l.C, l.H, l.H, l.K, l.R, l.R, l.stride, l.count, ms[0], tops / ms[0], ms[1], tops / ms[1], ms[2],
           tops / ms[2]);
    if (ms[3] > 0) printf("%7.4f %6.1f", ms[3], tops / ms[3]);
    else printf("   none       ");
    printf(" | int8/f16 %.2fx\n", ms[1] / ms[0]);
    for (int i = 0; i < 4; i++) ms[i] *= l.count;
    hpdl_cuda_free(dx); hpdl_cuda_free(dw); hpdl_cuda_free(wt); hpdl_cuda_free(wsum); hpdl_cuda_free(dy);
    hpdl_cuda_free(dy8); hpdl_cuda_free(dxh); hpdl_cuda_free(dwh); hpdl_cuda_free(dyh); hpdl_cuda_free(dyc);
    hpdl_cuda_quant_output_destroy(&d);
}

int main(int argc, char **argv) {
    static const layer layers[] = {
        {"stem", 3, 32, 64, 3, 1, 1, 1},      {"s1", 64, 32, 64, 3, 1, 1, 4},
        {"s2a", 64, 32, 128, 3, 2, 1, 1},     {"s2b", 128, 16, 128, 3, 1, 1, 3},
        {"s2sc", 64, 32, 128, 1, 2, 0, 1},    {"s3a", 128, 16, 256, 3, 2, 1, 1},
        {"s3b", 256, 8, 256, 3, 1, 1, 3},     {"s3sc", 128, 16, 256, 1, 2, 0, 1},
        {"s4a", 256, 8, 512, 3, 2, 1, 1},     {"s4b", 512, 4, 512, 3, 1, 1, 3},
        {"s4sc", 256, 8, 512, 1, 2, 0, 1}};
    int batch = argc > 1 ? atoi(argv[1]) : 256;
    const char *only = argc > 2 ? argv[2] : NULL;
    double total[4] = {0, 0, 0, 0};
    hpdl_rng r;
    if (!hpdl_cuda_available()) {
        printf("int8_vs_f16: skipped, " HPDL_CUDA_NO_GPU "\n");
        return 1;
    }
    hpdl_rng_seed(&r, 5);
    printf("ResNet-18 (3x32x32) convolutions, batch %d: hpdl int8 (AUTO), hpdl f16 (AUTO), cuDNN f16, cuDNN int8\n", batch);
    for (const layer &l : layers) {
        double ms[4] = {0, 0, 0, 0};
        if (only && strcmp(only, l.name) != 0) continue;
        time_layer(l, batch, &r, only != NULL, ms);
        for (int i = 0; i < 4; i++) total[i] += ms[i];
    }
    if (!only)
        printf("all 20: int8 %.4f ms, f16 %.4f ms, cudnn f16 %.4f ms, cudnn int8 (where it runs) %.4f ms; int8/f16 %.2fx\n",
               total[0], total[1], total[2], total[3], total[1] / total[0]);
    return 0;
}
