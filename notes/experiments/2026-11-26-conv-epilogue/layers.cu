/* The convolutions of ResNet-18 (CIFAR form, batch 256) one by one, int8 on
   both of its rungs and f16 on AUTO's (wgmma where it applies), 2026-11-26,
   for the epilogue work (notes/conv.md): a copy of
   notes/experiments/2026-11-26-int8-wgmma/layers.cu with the f16 forward
   pass of the same layer (NHWC, random values in [-1, 1]) timed in the same
   turns. The two int8 outputs are compared byte for byte (sizes the tests
   do not reach), then the three timed in turns (median of 50, no L2 flush:
   in a network the input was just written). Prints ms, TOPS (2 x MACs),
   each layer's count in the network, int8 AUTO's speed over f16's, and the
   sums.

       nvcc -std=c++17 -O3 -I. -gencode arch=compute_90a,code=sm_90a \
           notes/experiments/2026-11-26-conv-epilogue/layers.cu -o build90/layers_f16 -lcublas -ldl
       build90/layers_f16 [batch] */
#include "hpdl_cuda.cuh"

#include <vector>

struct layer {
    const char *name;
    int C, H, K, R, stride, pad, count; /* square images H x H; count: times in ResNet-18 */
};

struct conv_run {
    hpdl_quant_algo algo;
    hpdl__conv_geom geo;
    const int8_t *x, *wt;
    const int32_t *wsum, *wtap;
    int32_t zx;
    int ldw;
    const hpdl_cuda_quant_output *o;
    int8_t *y;
};

static void run_conv(void *ctx, cudaStream_t stream) {
    conv_run *c = (conv_run *)ctx;
    HPDL_CHECK(hpdl__qconv_run<int8_t>(c->algo, c->geo, c->x, c->zx, c->wt, c->ldw, c->wsum, c->wtap, c->o,
                                       HPDL__QOUT_REQUANT_I8, c->y, stream));
}

struct f16_run {
    hpdl_conv2d_params p;
    hpdl_tensor4 xd, yd;
    const hpdl_f16 *x, *w;
    hpdl_f16 *y;
};

static void run_f16(void *ctx, cudaStream_t stream) {
    f16_run *c = (f16_run *)ctx;
    HPDL_CHECK(hpdl_cuda_conv2d_forward_algo(HPDL_CONV_AUTO, &c->p, &c->xd, c->x, c->w, &c->yd, c->y, stream));
}

static std::vector<hpdl_f16> random_f16(hpdl_rng *r, size_t n) {
    std::vector<hpdl_f16> v(n);
    for (size_t i = 0; i < n; i++) v[i] = hpdl_f16_from_f32((float)(2.0 * hpdl_rng_uniform(r) - 1.0));
    return v;
}

template <typename T> static T *upload(const std::vector<T> &v) {
    T *d = NULL;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&d, v.size() * sizeof(T)));
    HPDL_CUDA_CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

/* One layer: returns the int8 MMA, int8 AUTO and f16 AUTO milliseconds (times its count) in ms[0..2]; 0 if
   the int8 outputs differ. */
static int time_layer(const layer &l, int batch, hpdl_rng *r, double ms[3]) {
    hpdl_conv2d_params p = hpdl_conv2d_params_make(l.R, l.stride, l.pad, 1, 1);
    hpdl_tensor4 xd = hpdl_tensor4_make(batch, l.C, l.H, l.H, HPDL_NHWC), yd;
    const int taps = l.R * l.R, K = taps * l.C;
    HPDL_CHECK(hpdl_conv2d_output_desc(&p, &xd, l.K, &yd));
    const size_t nx = hpdl_tensor4_count(&xd), ny = hpdl_tensor4_count(&yd);
    std::vector<int8_t> x(nx), w((size_t)K * l.K), y0(ny), y1(ny);
    std::vector<int32_t> m0(l.K), bias(l.K);
    std::vector<int> shift(l.K);
    for (size_t i = 0; i < nx; i++) x[i] = (int8_t)((int)hpdl_rng_below(r, 256) - 128);
    for (size_t i = 0; i < w.size(); i++) w[i] = (int8_t)((int)hpdl_rng_below(r, 256) - 128);
    for (int j = 0; j < l.K; j++) {
        HPDL_CHECK(hpdl_quant_multiplier(3.0 * 127.0 / (128.0 * 128.0 * sqrt((double)K)), &m0[j], &shift[j]));
        bias[j] = (int32_t)hpdl_rng_below(r, 20001) - 10000;
    }
    hpdl_quant_output o = {bias.data(), m0.data(), shift.data(), 1, -128, 1};
    hpdl_cuda_quant_output d;
    HPDL_CHECK(hpdl_cuda_quant_output_create(&d, &o, l.K));
    int8_t *dx = upload(x), *dw = upload(w), *wt, *dy0, *dy1;
    int32_t *wsum, *wtap = NULL;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&wt, (size_t)l.K * hpdl__qconv_ldw(K)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&wsum, (size_t)l.K * (1 + taps) * sizeof(int32_t)));
    if (hpdl__qconv_has_taps(taps, l.C)) wtap = wsum + l.K;
    HPDL_CHECK(hpdl__qconv_filter(taps, l.C, l.K, dw, wt, wsum, wtap, 0));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dy0, ny));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dy1, ny));
    conv_run runs[2];
    f16_run half;
    void *ctxs[3] = {&runs[0], &runs[1], &half};
    hpdl_cuda_work_fn fns[3] = {run_conv, run_conv, run_f16};
    const std::vector<hpdl_f16> xh = random_f16(r, nx), wh = random_f16(r, w.size());
    hpdl_f16 *dxh = upload(xh), *dwh = upload(wh), *dyh;
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dyh, ny * sizeof(hpdl_f16)));
    half.p = p; half.xd = xd; half.yd = yd; half.x = dxh; half.w = dwh; half.y = dyh;
    for (int a = 0; a < 2; a++) {
        conv_run &c = runs[a];
        c.algo = a == 0 ? HPDL_QUANT_MMA : HPDL_QUANT_AUTO; /* AUTO: wgmma where it applies (not the stem) */
        HPDL_CHECK(hpdl__quant_conv_geom(&p, &xd, dx, -128, wt, &yd, a ? dy1 : dy0, &c.geo));
        c.x = dx; c.wt = wt; c.wsum = wsum; c.wtap = wtap; c.zx = -128; c.ldw = hpdl__qconv_ldw(K);
        c.o = &d; c.y = a ? dy1 : dy0;
        run_conv(&c, 0);
    }
    HPDL_CUDA_CHECK(cudaMemcpy(y0.data(), dy0, ny, cudaMemcpyDeviceToHost));
    HPDL_CUDA_CHECK(cudaMemcpy(y1.data(), dy1, ny, cudaMemcpyDeviceToHost));
    const int same = memcmp(y0.data(), y1.data(), ny) == 0;
    run_f16(&half, 0);
    HPDL_CHECK(hpdl_cuda_time_interleaved_ms(3, fns, ctxs, 0, 5, 50, NULL, ms));
    const double tops = 2.0 * (double)ny * K / 1e9;
    printf("%-6s C %3d %2dx%-2d K %3d %dx%d/%d  x%d  int8 mma %7.4f ms  auto %7.4f ms %6.1f TOPS   f16 %7.4f ms %6.1f"
           " TFLOP/s  int8/f16 %5.2fx  %s\n",
           l.name, l.C, l.H, l.H, l.K, l.R, l.R, l.stride, l.count, ms[0], ms[1], tops / ms[1], ms[2], tops / ms[2],
           ms[2] / ms[1], same ? "outputs equal" : "OUTPUTS DIFFER");
    for (int a = 0; a < 3; a++) ms[a] *= l.count;
    hpdl_cuda_free(dx); hpdl_cuda_free(dw); hpdl_cuda_free(wt); hpdl_cuda_free(wsum);
    hpdl_cuda_free(dy0); hpdl_cuda_free(dy1); hpdl_cuda_free(dxh); hpdl_cuda_free(dwh); hpdl_cuda_free(dyh);
    hpdl_cuda_quant_output_destroy(&d);
    return same;
}

int main(int argc, char **argv) {
    static const layer layers[] = {
        {"stem", 3, 32, 64, 3, 1, 1, 1},      {"s1", 64, 32, 64, 3, 1, 1, 4},
        {"s2a", 64, 32, 128, 3, 2, 1, 1},     {"s2b", 128, 16, 128, 3, 1, 1, 3},
        {"s2sc", 64, 32, 128, 1, 2, 0, 1},    {"s3a", 128, 16, 256, 3, 2, 1, 1},
        {"s3b", 256, 8, 256, 3, 1, 1, 3},     {"s3sc", 128, 16, 256, 1, 2, 0, 1},
        {"s4a", 256, 8, 512, 3, 2, 1, 1},     {"s4b", 512, 4, 512, 3, 1, 1, 3},
        {"s4sc", 256, 8, 512, 1, 2, 0, 1}};
    int batch = argc > 1 ? atoi(argv[1]) : 256, ok = 1;
    double total[3] = {0, 0, 0};
    hpdl_rng r;
    if (!hpdl_cuda_available()) {
        printf("layers_f16: skipped, " HPDL_CUDA_NO_GPU "\n");
        return 1;
    }
    hpdl_rng_seed(&r, 5);
    printf("convolutions of ResNet-18 (3x32x32), batch %d: int8 (zx -128, ReLU clamp) and f16 forward\n", batch);
    for (const layer &l : layers) {
        double ms[3];
        ok &= time_layer(l, batch, &r, ms);
        for (int a = 0; a < 3; a++) total[a] += ms[a];
    }
    printf("all 20 convolutions: int8 mma %.4f ms, int8 auto %.4f ms (%.2fx), f16 auto %.4f ms (int8 auto %.2fx f16);"
           " %s\n", total[0], total[1], total[0] / total[1], total[2], total[2] / total[1],
           ok ? "int8 outputs equal" : "SOME INT8 OUTPUTS DIFFER");
    return ok ? 0 : 1;
}
