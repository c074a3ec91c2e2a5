/* The int8 1x1 stride-1 convolutions of ResNet-50 (batch 128, NHWC) two
   ways (2026-11-29): AUTO's convolution (hpdl__qconv_run, the wgmma conv
   rung) and the same product as the int8 GEMM with its fused
   requantisation (x as M = N H W rows of C bytes times the transposed
   filter). Checks that both write the same bytes, then times them in turns
   (median of 30), as bench/quantize sets the layers up.

       nvcc -std=c++17 -O3 -I. -gencode arch=compute_90a,code=sm_90a \
           notes/experiments/2026-11-29-int8-1x1/gemm_route.cu -o build/q/gemm_route -lcublas -lcublasLt -ldl */
#include "hpdl_cuda.cuh"

#include <vector>

struct layer { const char *name; int n, c, h, k; };
struct route {
    int gemm;
    hpdl__conv_geom geo;
    const int8_t *x, *wt;
    const int32_t *wsum, *wtap;
    int ldw, M, C, K;
    const hpdl_cuda_quant_output *o;
    int8_t *y;
};

static void run_route(void *ctx, cudaStream_t stream) {
    route *c = (route *)ctx;
    if (c->gemm)
        HPDL_CHECK(hpdl__qgemm_launch<int8_t>(HPDL_QUANT_AUTO,
                                              hpdl__qgemm_make_args(c->M, c->K, c->C, c->x, c->C, -128, c->wt, c->ldw, 0, c->o,
                                                                    HPDL__QOUT_REQUANT_I8, c->y, c->K),
                                              stream));
    else
        HPDL_CHECK(hpdl__qconv_run<int8_t>(HPDL_QUANT_AUTO, c->geo, c->x, -128, c->wt, c->ldw, c->wsum, c->wtap, NULL, c->o,
                                           HPDL__QOUT_REQUANT_I8, c->y, stream));
}

static void one_layer(const layer *l, hpdl_rng *r) {
    hpdl_conv2d_params p = hpdl_conv2d_params_make(1, 1, 0, 1, 1);
    hpdl_tensor4 xd = hpdl_tensor4_make(l->n, l->c, l->h, l->h, HPDL_NHWC), yd;
    HPDL_CHECK(hpdl_conv2d_output_desc(&p, &xd, l->k, &yd));
    const size_t nx = hpdl_tensor4_count(&xd), ny = hpdl_tensor4_count(&yd), nw = (size_t)l->c * l->k;
    std::vector<int8_t> x(nx), w(nw), y_conv(ny), y_gemm(ny);
    std::vector<int32_t> m0((size_t)l->k), bias((size_t)l->k);
    std::vector<int> shift((size_t)l->k);
    for (size_t i = 0; i < nx; i++) x[i] = (int8_t)((int)hpdl_rng_below(r, 256) - 128);
    for (size_t i = 0; i < nw; i++) w[i] = (int8_t)((int)hpdl_rng_below(r, 256) - 128);
    for (int j = 0; j < l->k; j++) {
        HPDL_CHECK(hpdl_quant_multiplier(3.0 * 127.0 / (128.0 * 128.0 * sqrt((double)l->c)), &m0[(size_t)j], &shift[(size_t)j]));
        bias[(size_t)j] = (int32_t)hpdl_rng_below(r, 20001) - 10000;
    }
    hpdl_quant_output o = {bias.data(), m0.data(), shift.data(), 1, -128, 1};
    hpdl_cuda_quant_output d;
    int8_t *dx, *dw, *wt, *dy_conv, *dy_gemm;
    int32_t *wsum;
    HPDL_CHECK(hpdl_cuda_quant_output_create(&d, &o, l->k));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dx, nx));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dw, nw));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&wt, (size_t)l->k * hpdl__qconv_ldw(l->c)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&wsum, (size_t)l->k * 2 * sizeof(int32_t)));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dy_conv, ny));
    HPDL_CHECK(hpdl_cuda_alloc((void **)&dy_gemm, ny));
    HPDL_CUDA_CHECK(cudaMemcpy(dx, x.data(), nx, cudaMemcpyHostToDevice));
    HPDL_CUDA_CHECK(cudaMemcpy(dw, w.data(), nw, cudaMemcpyHostToDevice));
    HPDL_CHECK(hpdl__qconv_filter(1, l->c, l->k, dw, wt, wsum, wsum + l->k, 0));
    route conv = {0, hpdl__conv_geom(), dx, wt, wsum, wsum + l->k, hpdl__qconv_ldw(l->c), (int)(nx / l->c), l->c, l->k, &d,
                  dy_conv};
    HPDL_CHECK(hpdl__quant_conv_geom(&p, &xd, dx, -128, wt, &yd, dy_conv, &conv.geo));
    route gemm = conv;
    gemm.gemm = 1;
    gemm.y = dy_gemm;
    run_route(&conv, 0);
    run_route(&gemm, 0);
    HPDL_CUDA_CHECK(cudaMemcpy(y_conv.data(), dy_conv, ny, cudaMemcpyDeviceToHost));
    HPDL_CUDA_CHECK(cudaMemcpy(y_gemm.data(), dy_gemm, ny, cudaMemcpyDeviceToHost));
    void *ctxs[2] = {&conv, &gemm};
    hpdl_cuda_work_fn fns[2] = {run_route, run_route};
    double ms[2];
    HPDL_CHECK(hpdl_cuda_time_interleaved_ms(2, fns, ctxs, 0, 3, 30, NULL, ms));
    const double ops = 2.0 * (double)ny * l->c / 1e9;
    printf("%-26s M %7d N %5d K %5d | conv rung %8.4f ms %7.1f TOPS | int8 GEMM %8.4f ms %7.1f TOPS | %.2fx | %s\n",
           l->name, conv.M, l->k, l->c, ms[0], ops / ms[0], ms[1], ops / ms[1], ms[0] / ms[1],
           memcmp(y_conv.data(), y_gemm.data(), ny) == 0 ? "same bytes" : "BYTES DIFFER");
    hpdl_cuda_free(dx);
    hpdl_cuda_free(dw);
    hpdl_cuda_free(wt);
    hpdl_cuda_free(wsum);
    hpdl_cuda_free(dy_conv);
    hpdl_cuda_free(dy_gemm);
    hpdl_cuda_quant_output_destroy(&d);
}

int main() {
    const layer layers[] = {{"r50_conv2_1x1_256to64", 128, 256, 56, 64},
                            {"r50_conv2_1x1_64to256", 128, 64, 56, 256},
                            {"r50_conv4_1x1_1024to256", 128, 1024, 14, 256},
                            {"r50_conv5_1x1_512to2048", 128, 512, 7, 2048},
                            {"r50_conv3_1x1_128to512", 128, 128, 28, 512},
                            {"r50_conv3_1x1_512to128", 128, 512, 28, 128}};
    hpdl_rng r;
    if (!hpdl_cuda_available()) {
        printf("gemm_route: skipped, " HPDL_CUDA_NO_GPU "\n");
        return 1;
    }
    hpdl_rng_seed(&r, 5);
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) one_layer(&layers[i], &r);
    return 0;
}
